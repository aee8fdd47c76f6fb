// sg2 serve: the bytes of a response image — PNG through sg2's encoder (the bytes `sg2 generate`
// writes for the same pixels and level) or JPEG through libjpeg-turbo's TurboJPEG API (live views).
#pragma once

#include <cstdint>
#include <string>

namespace sg2::cli::serve {

/// PNG of `pixels` ([height, width, channels] uint8) at png level `level` (sg2/image.h levels):
/// encode_png, so the file equals the CLI's for the same pixels and level. Throws sg2::Error.
std::string encode_png_bytes(const uint8_t* pixels, int width, int height, int channels, int level);

/// Baseline JPEG of gray (1 channel) or RGB (3 channels) pixels, quality 1-100: chroma 4:2:0 and
/// libjpeg-turbo's fast integer DCT, or from quality 95 up 4:4:4 and the accurate DCT; with a
/// TurboJPEG compressor that belongs to the calling thread. The same pixels and quality give the same
/// bytes (for one libjpeg-turbo version). Throws
/// Error(invalid_argument) for another channel count, Error(internal) with TurboJPEG's message.
std::string encode_jpeg_bytes(const uint8_t* pixels, int width, int height, int channels, int quality);

}  // namespace sg2::cli::serve
