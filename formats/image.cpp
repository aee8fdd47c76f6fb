// sg2: uint8 conversion, the PNG size limits and grids in memory (image.h). Encoding:
// png_encode.cpp (PIL's row filters, zlib / libdeflate); reading and streamed grids: png_io.cpp (libpng).
#include "sg2/image.h"

#include "sg2/files.h"

#include <cmath>
#include <cstring>

#include "formats/nonfinite.h"
#include "sg2/error.h"
#include "util/file_util.h"

namespace sg2 {

const char* nonfinite_cause(NonfiniteSource source) {
  switch (source) {
    case NonfiniteSource::mapping:
      return "its latents came from this model's own mapping network, so the model's weights overflow (a damaged "
             "or diverged checkpoint, or float16 arithmetic: try precision fp32)";
    case NonfiniteSource::truncation:
      return "a truncation psi far beyond [-1, 1] pushed its latents far outside the range the mapping network "
             "produces";
    case NonfiniteSource::edited:
      return "the edit directions (--edit: strength x direction) moved its latents far outside the range the "
             "mapping network produces (try a smaller strength)";
    case NonfiniteSource::given_ws:
      break;
  }
  return "its latents (ws) are far outside the range the mapping network produces (ws from elsewhere), or the "
         "model's weights overflow (with latents from its own mapping too: a damaged checkpoint, or float16: try "
         "precision fp32)";
}

void require_finite_images(const Tensor& img, int64_t first_sample, NonfiniteSource source) {
  if (img.ndim() != 4 || img.dim(0) == 0) return;
  const int64_t per = img.numel() / img.dim(0);
  const float* p = img.data();
  for (int64_t i = 0; i < img.numel(); ++i)
    if (!std::isfinite(p[i]))
      fail(ErrorKind::invalid_argument, "the synthesis of ",
           first_sample < 0 ? std::string("a sample") : "sample " + std::to_string(first_sample + i / per),
           " gave NaN or infinite pixels: ", nonfinite_cause(source));
}

Image8 to_image8(const Tensor& img, int64_t n) {
  if (img.ndim() != 4) fail(ErrorKind::invalid_argument, "to_image8: expected [N, C, H, W], got ", img.shape_str());
  const int64_t N = img.dim(0), C = img.dim(1), H = img.dim(2), W = img.dim(3);
  if (n < 0 || n >= N) fail(ErrorKind::invalid_argument, "to_image8: image index ", n, " out of range [0, ", N, ")");
  if (C < 1 || C > 4)
    fail_hint(ErrorKind::invalid_argument, "keep such images as float32 .npy", "an image of ", C,
              " channels cannot be stored as 8-bit pixels or a PNG, which hold 1 (gray), 2 "
              "(gray + alpha), 3 (RGB) or 4 (RGBA) channels");
  Image8 out;
  out.width = static_cast<int>(W);
  out.height = static_cast<int>(H);
  out.channels = static_cast<int>(C);
  out.pixels.resize(static_cast<size_t>(H * W * C));
  const float* base = img.data() + n * C * H * W;
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < H * W; ++i) {
      volatile float scaled = base[c * H * W + i] * 127.5f;  // two roundings, as the official code
      float v = scaled + 128.0f;
      uint8_t u;
      if (!(v > 0.0f))
        u = 0;  // also NaN
      else if (v >= 255.0f)
        u = 255;
      else
        u = static_cast<uint8_t>(v);  // truncation
      out.pixels[static_cast<size_t>(i * C + c)] = u;
    }
  }
  return out;
}

void check_png_size(int64_t width, int64_t height, int64_t channels, PngWrite how, const std::string& what) {
  if (width < 1 || height < 1 || channels < 1 || channels > 4)
    fail(ErrorKind::invalid_argument, what, ": a ", width, "x", height, " PNG of ", channels,
         " channels cannot be written");
  if (width > kMaxPngSide || height > kMaxPngSide)
    fail(ErrorKind::invalid_argument, what, ": a ", width, "x", height, " PNG is larger than sg2 writes (at most ",
         kMaxPngSide, " pixels per side)");
  // width, height <= 10^6 and channels <= 4: the product fits in 64 bits.
  if (how == PngWrite::whole && width * height * channels > kMaxWholePngBytes)
    fail(ErrorKind::invalid_argument, what, ": a ", width, "x", height, " PNG of ", channels, " channels holds ",
         width * height * channels, " bytes of pixels; sg2 writes at most ", kMaxWholePngBytes,
         " (512 MiB) in one piece");
}

Image8 make_grid(const std::vector<Image8>& images, int cols, int rows) {
  if (cols <= 0 || rows <= 0) fail(ErrorKind::invalid_argument, "grid ", cols, "x", rows, " must be positive");
  if (images.empty()) fail(ErrorKind::invalid_argument, "grid of no images");
  if (images.size() > size_t(cols) * size_t(rows))
    fail(ErrorKind::invalid_argument, "grid ", cols, "x", rows, " holds ", cols * rows, " images, not ", images.size());
  const Image8& f = images[0];
  for (const Image8& im : images)
    if (im.width != f.width || im.height != f.height || im.channels != f.channels)
      fail(ErrorKind::invalid_argument, "grid images differ in size or channels");
  check_png_size(int64_t(f.width) * cols, int64_t(f.height) * rows, f.channels, PngWrite::whole,
                 detail::concat("a ", cols, "x", rows, " grid of ", f.width, "x", f.height, " images"));
  Image8 g;
  g.width = f.width * cols;
  g.height = f.height * rows;
  g.channels = f.channels;
  g.pixels.assign(size_t(g.width) * g.height * g.channels, 0);
  const size_t row_bytes = size_t(f.width) * f.channels;
  for (size_t k = 0; k < images.size(); ++k) {
    int gx = int(k % cols), gy = int(k / cols);
    for (int y = 0; y < f.height; ++y) {
      uint8_t* dst = g.pixels.data() + (size_t(gy * f.height + y) * g.width + size_t(gx) * f.width) * g.channels;
      std::memcpy(dst, images[k].pixels.data() + size_t(y) * row_bytes, row_bytes);
    }
  }
  return g;
}

void write_file_atomically(const std::string& path, const void* data, size_t size) {
  detail::write_file_atomic(path, data, size);
}

}  // namespace sg2
