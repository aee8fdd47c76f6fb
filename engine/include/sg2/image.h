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

/// Writes a PNG (1 channel grayscale, 2 gray+alpha, 3 RGB, 4 RGBA) with stb_image_write.
/// Atomic: a temporary file beside `path` is renamed into place. Throws Error(io).
void write_png(const std::string& path, const Image8& image);

/// Reads a PNG (8-bit; 16-bit files are reduced to 8 bits). Throws Error(bad_file | io).
Image8 read_png(const std::string& path);

/// Tiles `images` (all the same size and channels) into a cols x rows grid, row by row, in the
/// given order; missing cells are black (alpha 0 for RGBA). Throws Error(invalid_argument).
Image8 make_grid(const std::vector<Image8>& images, int cols, int rows);

}  // namespace sg2
SG2_PUBLIC_END
