// sg2: images — the official uint8 conversion and PNG files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/tensor.h"

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

// --- size limits of the PNG writers ----------------------------------------------------------

/// Largest width or height of a PNG sg2 writes: libpng's limit (which it also applies when reading).
inline constexpr int64_t kMaxPngSide = 1000000;
/// Largest pixel data of a PNG written in one piece (write_png: stb_image_write holds the whole
/// image and its compressed form, sized in int): 512 MiB.
inline constexpr int64_t kMaxWholePngBytes = int64_t(1) << 29;

/// How a PNG is written: whole (write_png, one buffer) or streamed row by row (GridPngWriter).
enum class PngWrite { whole, streamed };

/// The one place the writers' limits live (they follow the writers when those change): checks,
/// in 64-bit arithmetic and before any pixel is made, that a width x height PNG of `channels`
/// 8-bit channels can be written `how`: width and height in [1, kMaxPngSide], channels in
/// [1, 4], and written whole at most kMaxWholePngBytes of pixels. Throws
/// Error(invalid_argument) "<what>: a WxH PNG ..." naming the size and the limit.
void check_png_size(int64_t width, int64_t height, int64_t channels, PngWrite how, const std::string& what);

// --- PNG encoding (formats/png_encode.cpp) ----------------------------------------------

/// PNG compression levels. 0-9 are zlib's levels with the settings of PIL's PNG writer (the call
/// gen_images.py makes: Image.save(path) = compress_level 6): strategy Z_FILTERED, window 15,
/// memLevel 9, and PIL's row filters (below); 0 stores the rows without compression. At level 6
/// sg2's files are PIL's size (measured: -0.02 % over 1024x1024 StyleGAN2 images), so the default
/// is never larger than the official PNGs. Two named levels use libdeflate: fast (level 1: about
/// 8x faster than 6, files about 5 % larger) and smallest (level 12: 3.5-4.5 % smaller than PIL,
/// 2-3.5x slower than 6). docs/bulk.md has the measured table.
constexpr int kPngLevelMin = 0;
constexpr int kPngLevelDefault = 6;
constexpr int kPngLevelFast = 10;      ///< "fast": libdeflate level 1
constexpr int kPngLevelSmallest = 11;  ///< "smallest": libdeflate level 12
constexpr int kPngLevelMax = 11;

/// A level as text (the CLI's --png-level): "0".."9", "fast", "smallest" or "default" (6). Throws
/// Error(invalid_argument) "'x' is not a PNG level (0-9 as PIL's compress_level: ...)".
int parse_png_level(const std::string& text);
/// The text of a level: "0".."9", "fast", "smallest"; "?" outside [kPngLevelMin, kPngLevelMax].
std::string png_level_name(int level);

struct PngOptions {
  int level = kPngLevelDefault;  ///< kPngLevelMin..kPngLevelMax (0-9, fast, smallest); else Error(invalid_argument)
};

/// Encodes 8-bit images as PNG files in memory. Row filters as PIL's PNG writer (and libpng's
/// heuristic) choose them: per row, the smallest sum of |filtered byte| (bytes read as signed)
/// over None, Up, Sub and Paeth, tried in that order, ties kept by the earlier (PIL tries Average
/// only with optimize=True; leaving it out also compresses better). The rows are one zlib stream
/// at `level` (zlib for 0-9, libdeflate for fast and smallest) in one IDAT chunk; chunks IHDR,
/// IDAT, IEND with CRC-32. Color type from the channel count: 1 gray, 2 gray + alpha, 3 RGB, 4
/// RGBA; 8 bits, no interlace. The same pixels and level give the same bytes on every run (for
/// one zlib / libdeflate version). Any PNG reader decodes them to the same pixels (tests use
/// libpng's).
///
/// Owns its compressor state and row buffers, allocated once and reused: move-only, not
/// thread-safe; use one encoder per thread.
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

  struct State;  ///< opaque: the compressor (zlib's or libdeflate's) and row buffers (png_encode.cpp)

  /// The PNG file's bytes for `pixels`: height rows of width * channels bytes (HWC, rows top to
  /// bottom, no padding). Throws Error(invalid_argument) (check_png_size(..., whole), or a null
  /// pointer) and Error(out_of_memory).
  std::vector<uint8_t> encode(const uint8_t* pixels, int width, int height, int channels);
  /// Same for an Image8; also Error(invalid_argument) when pixels.size() != width * height * channels.
  std::vector<uint8_t> encode(const Image8& image);

 private:
  int level_ = kPngLevelDefault;
  State* state_ = nullptr;
};

/// encode with a PngEncoder of options.level that belongs to the calling thread (allocated on the
/// thread's first use of that level and kept until the thread ends). Thread-safe.
std::vector<uint8_t> encode_png(const Image8& image, const PngOptions& options = {});
std::vector<uint8_t> encode_png(const uint8_t* pixels, int width, int height, int channels,
                                const PngOptions& options = {});

/// Writes encode_png(image, options) to `path`, atomically: a temporary file beside `path` is
/// written, flushed and renamed into place (and removed on an interrupt, sg2/interrupt.h), so
/// `path` is the whole new file or untouched. Throws Error(invalid_argument) (bad image, or beyond
/// check_png_size(..., whole)), Error(io) naming `path`.
void write_png(const std::string& path, const Image8& image, const PngOptions& options = {});

/// Tiles `images` (all the same size and channels) into a cols x rows grid, row by row, in the
/// given order; missing cells are black (alpha 0 for RGBA). Throws Error(invalid_argument),
/// also when the grid is larger than write_png writes (checked before it is allocated).
Image8 make_grid(const std::vector<Image8>& images, int cols, int rows);

/// Writes a cols x rows grid PNG of equally sized cells as they arrive (row by row, in order;
/// missing cells black, alpha 0 for RGBA, as make_grid), streamed through libpng: memory holds
/// one row of cells and one pixel row, never the whole grid. Atomic: a temporary file beside
/// `path` is renamed into place by finish(); an unfinished writer removes it when destroyed.
class GridPngWriter {
 public:
  /// Checks the size (check_png_size(..., streamed), 64-bit) before anything is written.
  /// Throws Error(invalid_argument) for a bad or too large grid, Error(io) when the temporary
  /// file cannot be created.
  GridPngWriter(const std::string& path, int cols, int rows, int cell_width, int cell_height, int channels);
  ~GridPngWriter();
  GridPngWriter(const GridPngWriter&) = delete;
  GridPngWriter& operator=(const GridPngWriter&) = delete;

  /// The next cell. Throws Error(invalid_argument) for a cell of another size or one too many,
  /// Error(io) when writing fails.
  void add(const Image8& cell);
  /// Pads the missing cells, ends the PNG and renames it into place. Throws Error(io).
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --- reading (libpng) ----------------------------------------------------------------------

/// Default pixel limit of PNG reading: 8192 x 8192 (a larger file is refused before its image
/// data is decompressed).
inline constexpr int64_t kDefaultMaxPngPixels = int64_t(1) << 26;

/// A PNG read row by row with libpng, at its own precision: every chunk's CRC and the image
/// data's checksum are verified, a palette index beyond the palette is an error (never
/// uninitialised memory), and memory holds one row (interlaced files: the whole image, within
/// the pixel limit). 1-, 2- and 4-bit gray is scaled to 8 bits; palettes are expanded to RGB
/// (RGBA with a tRNS chunk); a tRNS chunk of a gray or RGB image becomes an alpha channel.
class PngReader {
 public:
  /// Opens `path` and reads the header (nothing of the image data: a caller may check the size
  /// itself). Throws Error(bad_file) naming `path`: not a PNG, a corrupt header, or more than
  /// `max_pixels` pixels; Error(io) when it cannot be read.
  explicit PngReader(const std::string& path, int64_t max_pixels = kDefaultMaxPngPixels);
  ~PngReader();
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  int width() const;
  int height() const;
  int channels() const;  ///< 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
  int bits() const;      ///< 8 or 16 per sample
  /// The next row: width() * channels() samples in [0, 2^bits() - 1], interleaved. Throws
  /// Error(bad_file) naming the file on corrupt data (a CRC, the zlib stream, a palette index).
  const std::vector<uint16_t>& next_row();
  /// After the last row: reads the chunks after the image data and checks them. Throws
  /// Error(bad_file).
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reads a whole PNG as 8 bits (16-bit samples keep their high byte) through PngReader with
/// its default pixel limit. Throws Error(bad_file | io).
Image8 read_png(const std::string& path);

}  // namespace sg2
SG2_PUBLIC_END
