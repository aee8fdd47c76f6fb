// sg2: PNG encoding (image.h): stb_image_write's row filters, libdeflate's deflate and CRC-32.
//
// stb_image_write (libstb-dev) builds the PNG: it picks each row's filter and writes the chunks;
// its zlib compressor and CRC are replaced through its hooks STBIW_ZLIB_COMPRESS and STBIW_CRC32 by
// libdeflate (libdeflate-dev). stb's hook has no context argument, so the compressor of the
// encoder running on this thread is passed in a thread_local pointer that PngEncoder::encode sets
// for the duration of the call. This file is compiled with -O3 in every build type
// (CMakeLists.txt): stb's filter selection only vectorises there (about 3x faster at 1024x1024).
#include <libdeflate.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "sg2/error.h"
#include "sg2/image.h"
#include "util/file_util.h"

namespace sg2 {
namespace {

/// The compressor of the PngEncoder::encode call running on this thread (null outside one).
thread_local libdeflate_compressor* t_compressor = nullptr;

/// STBIW_ZLIB_COMPRESS: a zlib stream of data[0, len) into a malloc'd buffer (stb frees it with
/// free()); null on failure, which stb passes on as a failed encode.
unsigned char* zlib_compress_hook(const unsigned char* data, int len, int* out_len) {
  libdeflate_compressor* c = t_compressor;
  if (c == nullptr || len < 0 || out_len == nullptr) return nullptr;
  const size_t bound = libdeflate_zlib_compress_bound(c, static_cast<size_t>(len));
  if (bound > size_t(INT_MAX) - 64) return nullptr;  // stb adds its chunk headers in int
  auto* out = static_cast<unsigned char*>(std::malloc(bound));
  if (out == nullptr) return nullptr;
  const size_t n = libdeflate_zlib_compress(c, data, static_cast<size_t>(len), out, bound);
  if (n == 0) {  // cannot happen with the bound; treated as a failure all the same
    std::free(out);
    return nullptr;
  }
  *out_len = static_cast<int>(n);
  return out;
}

unsigned int crc32_hook(const unsigned char* data, int len) {
  return libdeflate_crc32(0, data, static_cast<size_t>(len));
}

}  // namespace
}  // namespace sg2

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#define STBIW_ZLIB_COMPRESS(data, len, out_len, quality) ::sg2::zlib_compress_hook(data, len, out_len)
#define STBIW_CRC32(data, len) ::sg2::crc32_hook(data, len)
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace sg2 {

int parse_png_level(const std::string& text) {
  if (text == "fast") return kPngLevelFast;
  if (text == "default") return kPngLevelDefault;
  if (!text.empty() && text.size() <= 2 && text.find_first_not_of("0123456789") == std::string::npos) {
    const int level = std::stoi(text);
    if (level >= kPngLevelMin && level <= kPngLevelMax && (text.size() == 1 || text[0] != '0')) return level;
  }
  std::string shown;
  for (char c : text.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  fail(ErrorKind::invalid_argument, "'", shown, "' is not a PNG level (", kPngLevelMin, "-", kPngLevelMax,
       ": 0 stores, 1 is fastest, 12 smallest; or fast = ", kPngLevelFast, ", default = ", kPngLevelDefault, ")");
}

PngEncoder::PngEncoder(int level) : level_(level) {
  if (level < kPngLevelMin || level > kPngLevelMax)
    fail(ErrorKind::invalid_argument, "PNG level ", level, " is out of range [", kPngLevelMin, ", ", kPngLevelMax, "]");
  compressor_ = libdeflate_alloc_compressor(level);
  if (compressor_ == nullptr) fail(ErrorKind::out_of_memory, "cannot allocate a PNG compressor (level ", level, ")");
}

PngEncoder::~PngEncoder() { libdeflate_free_compressor(static_cast<libdeflate_compressor*>(compressor_)); }

PngEncoder::PngEncoder(PngEncoder&& other) noexcept : level_(other.level_), compressor_(other.compressor_) {
  other.compressor_ = nullptr;
}

PngEncoder& PngEncoder::operator=(PngEncoder&& other) noexcept {
  if (this != &other) {
    libdeflate_free_compressor(static_cast<libdeflate_compressor*>(compressor_));
    level_ = other.level_;
    compressor_ = other.compressor_;
    other.compressor_ = nullptr;
  }
  return *this;
}

std::vector<uint8_t> PngEncoder::encode(const uint8_t* pixels, int width, int height, int channels) {
  check_png_size(width, height, channels, PngWrite::whole, "PNG");
  if (pixels == nullptr) fail(ErrorKind::invalid_argument, "PNG: no pixels (null pointer)");
  if (compressor_ == nullptr) fail(ErrorKind::invalid_argument, "PNG: this encoder was moved from");
  struct Current {  // the hook's compressor for this call; restored on every exit
    libdeflate_compressor* saved;
    explicit Current(void* c) : saved(t_compressor) { t_compressor = static_cast<libdeflate_compressor*>(c); }
    ~Current() { t_compressor = saved; }
  } current(compressor_);
  int size = 0;
  unsigned char* png = stbi_write_png_to_mem(pixels, width * channels, width, height, channels, &size);
  if (png == nullptr || size <= 0) {
    std::free(png);
    fail(ErrorKind::out_of_memory, "PNG: out of memory encoding a ", width, "x", height, "x", channels, " image");
  }
  std::vector<uint8_t> out(png, png + size);
  std::free(png);
  return out;
}

namespace {
/// Throws Error(invalid_argument) "<what>: ..." unless `image` is a well-formed image within the
/// PNG size limit.
void check_image(const Image8& image, const std::string& what) {
  check_png_size(image.width, image.height, image.channels, PngWrite::whole, what);
  const size_t expected = size_t(image.width) * size_t(image.height) * size_t(image.channels);
  if (image.pixels.size() != expected)
    fail(ErrorKind::invalid_argument, what, ": a ", image.width, "x", image.height, "x", image.channels,
         " image needs ", expected, " bytes of pixels, not ", image.pixels.size());
}
}  // namespace

std::vector<uint8_t> PngEncoder::encode(const Image8& image) {
  check_image(image, "PNG");
  return encode(image.pixels.data(), image.width, image.height, image.channels);
}

namespace {
/// This thread's encoders, one per level, allocated on first use.
PngEncoder& thread_encoder(int level) {
  if (level < kPngLevelMin || level > kPngLevelMax)
    fail(ErrorKind::invalid_argument, "PNG level ", level, " is out of range [", kPngLevelMin, ", ", kPngLevelMax, "]");
  thread_local std::unique_ptr<PngEncoder> encoders[kPngLevelMax + 1];
  std::unique_ptr<PngEncoder>& e = encoders[level];
  if (!e) e = std::make_unique<PngEncoder>(level);
  return *e;
}
}  // namespace

std::vector<uint8_t> encode_png(const Image8& image, const PngOptions& options) {
  return thread_encoder(options.level).encode(image);
}

std::vector<uint8_t> encode_png(const uint8_t* pixels, int width, int height, int channels, const PngOptions& options) {
  return thread_encoder(options.level).encode(pixels, width, height, channels);
}

void write_png(const std::string& path, const Image8& image, const PngOptions& options) {
  check_image(image, path);
  const std::vector<uint8_t> png = encode_png(image, options);
  detail::write_file_atomic(path, png.data(), png.size());
}

}  // namespace sg2
