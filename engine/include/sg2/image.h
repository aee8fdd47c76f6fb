// sg2: images — the official uint8 conversion and PNG files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sg2/tensor.h"
#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// An 8-bit image, rows top to bottom, interleaved channels (HWC). channels: 1 (gray), 3 (RGB),
/// 4 (RGBA), 2 (gray + alpha).
struct Image8 {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  ///< height * width * channels bytes
};

/// The official conversion (spec §2.8) of image n of `img` [N, C, H, W] float32:
/// u8 = trunc(clamp(x * 127.5 + 128, 0, 255)), the multiply and the add rounded separately
/// (no FMA). Returns HWC pixels. Throws Error(invalid_argument) on a bad shape or n.
Image8 to_image8(const Tensor& img, int64_t n);

// --- PNG encoding (engine/src/png_encode.cpp) ----------------------------------------------

/// PNG compression levels, on libdeflate's scale: 0 stores the rows without compression, 1 is the
/// fastest, 12 the smallest. The CLI's --png-level takes these numbers (README "Bulk generation").
constexpr int kPngLevelMin = 0;
constexpr int kPngLevelMax = 12;
/// The default level. Its aim: files no larger than the official PIL PNGs (zlib level 6) at the
/// best speed that allows. Provisional: measured on the development machine, level 9 is ~1 %
/// smaller than PIL on 1024 photo-like images, ~0.4 % larger on 256 ones, ~2 % smaller on
/// noise-like (random-weight) images; `sg2_png_bench` measures it against any folder of PNGs.
constexpr int kPngLevelDefault = 9;
/// The fast level for bulk runs: several times faster than the default; files a few percent
/// larger than PIL's on photo-like images.
constexpr int kPngLevelFast = 1;

/// A level as text (the CLI's --png-level): "0".."12", "fast" (kPngLevelFast) or "default"
/// (kPngLevelDefault). Throws Error(invalid_argument) "'x' is not a PNG level (0-12: ...)".
int parse_png_level(const std::string& text);

struct PngOptions {
  int level = kPngLevelDefault;  ///< kPngLevelMin..kPngLevelMax; anything else is Error(invalid_argument)
};

/// THE size limit of every PNG sg2 writes, grids included: the filtered rows of the image,
/// (width * channels + 1) * height bytes, may take at most kPngMaxFilteredBytes (2^31 - 2^27 bytes,
/// about 1.9 GiB: e.g. 25,000 x 25,000 RGB), so that the encoder's 32-bit sizes cannot overflow.
constexpr int64_t kPngMaxFilteredBytes = (int64_t(1) << 31) - (int64_t(1) << 27);

/// Throws Error(invalid_argument) "<what>: a WxHxC image ..." when width or height is < 1, channels
/// is not 1-4, or the image exceeds kPngMaxFilteredBytes. Checked arithmetic (no overflow for any
/// int64 input). `what` names the file or grid in the message.
void check_png_size(int64_t width, int64_t height, int64_t channels, const std::string& what);

/// Encodes 8-bit images as PNG files in memory: stb_image_write chooses each row's filter (the
/// smallest sum of absolute values over None, Sub, Up, Average and Paeth), libdeflate compresses
/// the rows into one zlib stream at `level` (one IDAT chunk; chunks IHDR, IDAT, IEND; CRCs by
/// libdeflate_crc32). Color type from the channel count: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA;
/// 8 bits, no interlace. The same pixels and level give the same bytes on every run (for one
/// libdeflate version). Any PNG reader decodes them to the same pixels (tests use libpng's).
///
/// Owns one libdeflate compressor, allocated once: move-only, not thread-safe (libdeflate's
/// compressors are not); use one encoder per thread.
class PngEncoder {
 public:
  /// Throws Error(invalid_argument) for a level outside [kPngLevelMin, kPngLevelMax],
  /// Error(out_of_memory) when the compressor cannot be allocated.
  explicit PngEncoder(int level = kPngLevelDefault);
  ~PngEncoder();
  PngEncoder(PngEncoder&& other) noexcept;
  PngEncoder& operator=(PngEncoder&& other) noexcept;
  PngEncoder(const PngEncoder&) = delete;
  PngEncoder& operator=(const PngEncoder&) = delete;

  int level() const { return level_; }

  /// The PNG file's bytes for `pixels`: height rows of width * channels bytes (HWC, rows top to
  /// bottom, no padding). Throws Error(invalid_argument) (check_png_size, or a null pointer) and
  /// Error(out_of_memory).
  std::vector<uint8_t> encode(const uint8_t* pixels, int width, int height, int channels);
  /// Same for an Image8; also Error(invalid_argument) when pixels.size() != width * height * channels.
  std::vector<uint8_t> encode(const Image8& image);

 private:
  int level_ = kPngLevelDefault;
  void* compressor_ = nullptr;  ///< struct libdeflate_compressor*
};

/// encode with a PngEncoder of options.level that belongs to the calling thread (allocated on the
/// thread's first use of that level and kept until the thread ends). Thread-safe.
std::vector<uint8_t> encode_png(const Image8& image, const PngOptions& options = {});
std::vector<uint8_t> encode_png(const uint8_t* pixels, int width, int height, int channels,
                                const PngOptions& options = {});

/// Writes encode_png(image, options) to `path`, atomically: a temporary file beside `path`
/// (`path.tmp.PID`) is written, flushed and renamed into place, so `path` is the whole new file or
/// untouched. Throws Error(invalid_argument) (bad image), Error(io) naming `path`.
void write_png(const std::string& path, const Image8& image, const PngOptions& options = {});

/// Reads a PNG (8-bit; 16-bit files are reduced to 8 bits). Throws Error(bad_file | io).
Image8 read_png(const std::string& path);

/// Tiles `images` (all the same size and channels) into a cols x rows grid, row by row, in the
/// given order; missing cells are black (alpha 0 for RGBA). Throws Error(invalid_argument),
/// also when the grid exceeds the PNG size limit (check_png_size).
Image8 make_grid(const std::vector<Image8>& images, int cols, int rows);

}  // namespace sg2
SG2_PUBLIC_END
