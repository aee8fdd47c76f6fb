// sg2: PNG encoding (image.h): PIL's row filters, then zlib (levels 0-9, as PIL's compress_level) or
// libdeflate (fast, smallest) for the zlib stream, in chunks IHDR, IDAT, IEND.
//
// Why not stb_image_write (measured on 1024x1024 StyleGAN2 images, docs/bulk.md): stb
// also tries the Average filter and cannot leave it out per call; Average rows deflate worse, and
// its choice made every level about 0.8 % larger than with PIL's four filters. libdeflate has no
// Z_FILTERED strategy, and without it no level below 10 reaches PIL's size. zlib with PIL's
// settings gives PIL's stream byte for byte at PIL's speed; libdeflate stays for fast and smallest.
//
// This file is compiled with -O3 in every build type (CMakeLists.txt): the filter loops vectorise.
#include <libdeflate.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "sg2/error.h"
#include "sg2/image.h"
#include "util/file_util.h"

namespace sg2 {

namespace {

/// zlib's settings in PIL's PNG writer (Pillow's ZipEncode: deflateInit2 with Z_FILTERED).
constexpr int kZlibWindowBits = 15;
constexpr int kZlibMemLevel = 9;
constexpr int kZlibStrategy = Z_FILTERED;

bool uses_libdeflate(int level) { return level == kPngLevelFast || level == kPngLevelSmallest; }

void put_u32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

uint8_t paeth(int a, int b, int c) {  // PNG spec 9.4: the neighbour nearest to a + b - c
  const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
  return uint8_t(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

uint32_t signed_sum(const uint8_t* v, size_t n) {  // sum of |v[i]| with v read as int8
  uint32_t s = 0;
  for (size_t i = 0; i < n; ++i) s += uint32_t(std::abs(int(int8_t(v[i]))));
  return s;
}

}  // namespace

struct PngEncoder::State {
  z_stream zs{};
  bool zs_ready = false;
  libdeflate_compressor* ld = nullptr;
  std::vector<uint8_t> filtered;  ///< height rows of 1 filter byte + width * channels bytes
  std::vector<uint8_t> rows;      ///< 3 candidate rows (Up, Sub, Paeth) and a zero row

  ~State() {
    if (zs_ready) deflateEnd(&zs);
    libdeflate_free_compressor(ld);
  }

  /// Filters every row of `pixels` into `filtered`, each with the filter PIL's writer picks.
  void filter(const uint8_t* pixels, size_t row_bytes, size_t height, size_t bpp) {
    filtered.resize(height * (row_bytes + 1));
    rows.assign(4 * row_bytes, 0);
    uint8_t* up = rows.data();
    uint8_t* sub = up + row_bytes;
    uint8_t* pa = sub + row_bytes;
    const uint8_t* zero = pa + row_bytes;
    for (size_t y = 0; y < height; ++y) {
      const uint8_t* cur = pixels + y * row_bytes;
      const uint8_t* prev = y > 0 ? cur - row_bytes : zero;
      for (size_t i = 0; i < row_bytes; ++i) up[i] = uint8_t(cur[i] - prev[i]);
      for (size_t i = 0; i < bpp && i < row_bytes; ++i) {
        sub[i] = cur[i];
        pa[i] = uint8_t(cur[i] - prev[i]);  // Paeth with a = c = 0 predicts b
      }
      for (size_t i = bpp; i < row_bytes; ++i) {
        sub[i] = uint8_t(cur[i] - cur[i - bpp]);
        pa[i] = uint8_t(cur[i] - paeth(cur[i - bpp], prev[i], prev[i - bpp]));
      }
      // PIL's order: None, Up, Sub, Paeth; a later filter must be strictly better.
      const uint8_t* best = cur;
      uint8_t type = 0;
      uint32_t best_sum = signed_sum(cur, row_bytes);
      const struct {
        uint8_t type;
        const uint8_t* row;
      } candidates[] = {{2, up}, {1, sub}, {4, pa}};
      for (const auto& c : candidates) {
        const uint32_t s = signed_sum(c.row, row_bytes);
        if (s < best_sum) {
          best_sum = s;
          best = c.row;
          type = c.type;
        }
      }
      uint8_t* out = filtered.data() + y * (row_bytes + 1);
      out[0] = type;
      std::memcpy(out + 1, best, row_bytes);
    }
  }
};

namespace {

PngEncoder::State* new_state(int level) {
  auto* st = new (std::nothrow) PngEncoder::State;
  if (st == nullptr) fail(ErrorKind::out_of_memory, "cannot allocate a PNG compressor");
  if (uses_libdeflate(level)) {
    st->ld = libdeflate_alloc_compressor(level == kPngLevelFast ? 1 : 12);
  } else if (deflateInit2(&st->zs, level, Z_DEFLATED, kZlibWindowBits, kZlibMemLevel, kZlibStrategy) == Z_OK) {
    st->zs_ready = true;
  }
  if (st->ld == nullptr && !st->zs_ready) {
    delete st;
    fail(ErrorKind::out_of_memory, "cannot allocate a PNG compressor (level ", png_level_name(level), ")");
  }
  return st;
}

}  // namespace

std::string png_level_name(int level) {
  if (level == kPngLevelFast) return "fast";
  if (level == kPngLevelSmallest) return "smallest";
  if (level >= 0 && level <= 9) return std::to_string(level);
  return "?";
}

int parse_png_level(const std::string& text) {
  if (text == "fast") return kPngLevelFast;
  if (text == "smallest") return kPngLevelSmallest;
  if (text == "default") return kPngLevelDefault;
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '9') return text[0] - '0';
  std::string shown;
  for (char c : text.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  fail(ErrorKind::invalid_argument, "'", shown,
       "' is not a PNG level (0-9 as PIL's compress_level: 0 stores, 9 smallest, default = ", kPngLevelDefault,
       "; or fast, smallest)");
}

PngEncoder::PngEncoder(int level) : level_(level) {
  if (level < kPngLevelMin || level > kPngLevelMax)
    fail(ErrorKind::invalid_argument, "PNG level ", level, " is out of range [", kPngLevelMin, ", ", kPngLevelMax, "]");
  state_ = new_state(level);
}

PngEncoder::~PngEncoder() { delete state_; }

PngEncoder::PngEncoder(PngEncoder&& other) noexcept : level_(other.level_), state_(other.state_) {
  other.state_ = nullptr;
}

PngEncoder& PngEncoder::operator=(PngEncoder&& other) noexcept {
  if (this != &other) {
    delete state_;
    level_ = other.level_;
    state_ = other.state_;
    other.state_ = nullptr;
  }
  return *this;
}

std::vector<uint8_t> PngEncoder::encode(const uint8_t* pixels, int width, int height, int channels) {
  check_png_size(width, height, channels, PngWrite::whole, "PNG");
  if (pixels == nullptr) fail(ErrorKind::invalid_argument, "PNG: no pixels (null pointer)");
  if (state_ == nullptr) fail(ErrorKind::invalid_argument, "PNG: this encoder was moved from");
  State& st = *state_;
  const size_t row_bytes = size_t(width) * size_t(channels);  // within check_png_size's limits
  st.filter(pixels, row_bytes, size_t(height), size_t(channels));
  const size_t in = st.filtered.size();

  // signature, IHDR (25 bytes), IDAT header (8), the stream, IDAT CRC (4), IEND (12).
  // zlib 1.2.13's deflateBound is too small for level 0 with memLevel 9 (fixed in zlib 1.3): stored
  // blocks cost 5 bytes each, so a margin for blocks down to 1 KiB is added.
  const size_t bound = st.ld != nullptr ? libdeflate_zlib_compress_bound(st.ld, in)
                                        : size_t(deflateBound(&st.zs, uLong(in))) + 5 * (in / 1024 + 1) + 64;
  std::vector<uint8_t> png(8 + 25 + 8 + bound + 4 + 12);
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::memcpy(png.data(), kSignature, 8);
  uint8_t* ihdr = png.data() + 8;
  put_u32(ihdr, 13);
  std::memcpy(ihdr + 4, "IHDR", 4);
  put_u32(ihdr + 8, uint32_t(width));
  put_u32(ihdr + 12, uint32_t(height));
  static const uint8_t kColorType[5] = {0, 0, 4, 2, 6};          // by channel count: gray, gray+alpha, RGB, RGBA
  const uint8_t fields[5] = {8, kColorType[channels], 0, 0, 0};  // depth, color, deflate, filter, no interlace
  std::memcpy(ihdr + 16, fields, 5);
  put_u32(ihdr + 21, libdeflate_crc32(0, ihdr + 4, 17));
  uint8_t* idat = ihdr + 25;
  std::memcpy(idat + 4, "IDAT", 4);
  uint8_t* stream = idat + 8;

  size_t n = 0;
  if (st.ld != nullptr) {
    n = libdeflate_zlib_compress(st.ld, st.filtered.data(), in, stream, bound);
  } else {
    if (deflateReset(&st.zs) != Z_OK) fail(ErrorKind::out_of_memory, "PNG: the zlib stream cannot be reset");
    st.zs.next_in = st.filtered.data();
    st.zs.avail_in = uInt(in);
    st.zs.next_out = stream;
    st.zs.avail_out = uInt(bound);
    if (deflate(&st.zs, Z_FINISH) == Z_STREAM_END) n = size_t(st.zs.total_out);
  }
  if (n == 0)  // cannot happen within the bound; a failure all the same
    fail(ErrorKind::out_of_memory, "PNG: compressing a ", width, "x", height, "x", channels, " image failed");
  put_u32(idat, uint32_t(n));
  put_u32(stream + n, libdeflate_crc32(0, idat + 4, n + 4));
  uint8_t* iend = stream + n + 4;
  static const uint8_t kIend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
  std::memcpy(iend, kIend, 12);
  png.resize(size_t(iend + 12 - png.data()));
  return png;
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
