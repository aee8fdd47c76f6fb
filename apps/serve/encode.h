// sg2 serve: the bytes of a response image — PNG through sg2's encoder (the bytes `sg2 generate`
// writes for the same pixels and level) or JPEG through libjpeg-turbo's TurboJPEG API (live views).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace sg2::cli::serve {

/// PNG of `pixels` ([height, width, channels] uint8) at png level `level` (sg2/image.h levels):
/// encode_png, so the file equals the CLI's for the same pixels and level. Throws sg2::Error.
std::string encode_png_bytes(const uint8_t* pixels, int width, int height, int channels, int level);

/// Runs a task on another thread (a pool whose tasks never wait for each other).
using Spawn = std::function<void(std::function<void()>)>;

/// Baseline JPEG of gray (1 channel) or RGB (3 channels) pixels, quality 1-100: chroma 4:2:0 and
/// libjpeg-turbo's fast integer DCT, or from quality 95 up 4:4:4 and the accurate DCT; with a
/// TurboJPEG compressor that belongs to the calling thread. The same pixels and quality give the same
/// bytes (for one libjpeg-turbo version).
///
/// strips > 1 (with `spawn`): the image is cut into that many horizontal strips of whole MCU rows
/// (16 pixel rows at 4:2:0, 8 otherwise; fewer strips when the image has fewer rows), encoded at once
/// (strip 0 on the calling thread, the others through `spawn`) and joined with restart markers (RST0-7,
/// a DRI segment before the scan): the file is the one libjpeg-turbo writes for the whole image with a
/// restart marker every strip (its TJ_RESTART=<MCU rows> setting), so it decodes to exactly the pixels
/// of the unsplit encode, in about 1/strips of the time. When the strips' tables differ (TurboJPEG
/// settings from the environment, e.g. TJ_OPTIMIZE) or the restart interval would exceed 65535 MCUs,
/// it encodes the image whole instead. Throws Error(invalid_argument) for another channel count,
/// Error(internal) with TurboJPEG's message.
std::string encode_jpeg_bytes(const uint8_t* pixels, int width, int height, int channels, int quality, int strips = 1,
                              const Spawn& spawn = {});

/// How many strips encode_jpeg_bytes should cut an image of `height` rows into with `threads` threads
/// to share: at least 64 pixel rows per strip (below that the joins cost more than they save).
int jpeg_strips(int height, int threads);

}  // namespace sg2::cli::serve
