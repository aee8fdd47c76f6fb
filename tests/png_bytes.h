// sg2 tests: PNG files built byte by byte (PNG spec: signature, chunks with CRC-32, zlib image
// data), so that tests can make exactly the files they need: 16-bit samples, palettes with
// indices beyond the palette, bad CRCs, interlacing, huge headers over tiny data.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sg2::test {

inline std::string be32(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 255), char((v >> 8) & 255), char(v & 255)};
}

/// One chunk: length, type, data, CRC-32 over type and data.
inline std::string png_chunk(const std::string& type, const std::string& data) {
  std::string td = type + data;
  const uLong crc = ::crc32(0L, reinterpret_cast<const Bytef*>(td.data()), static_cast<uInt>(td.size()));
  return be32(uint32_t(data.size())) + td + be32(uint32_t(crc));
}

/// zlib-compressed `raw` (level 9).
inline std::string png_deflate(const std::string& raw) {
  uLongf n = ::compressBound(raw.size());
  std::string out(n, '\0');
  ::compress2(reinterpret_cast<Bytef*>(&out[0]), &n, reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 9);
  out.resize(n);
  return out;
}

/// A PNG image described sample by sample. `samples` holds height rows of width * channels
/// values (palette images: one index per pixel), each below 2^depth; color_type is PNG's
/// (0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA).
struct PngSpec {
  int width = 1, height = 1, depth = 8, color_type = 2;
  bool interlaced = false;
  std::vector<uint32_t> samples;
  std::string palette;                                            ///< PLTE data (3 bytes an entry)
  std::string trns;                                               ///< tRNS data, when non-empty
  std::vector<std::pair<std::string, std::string>> extra_chunks;  ///< before IDAT
};

inline int png_channels(int color_type) {
  switch (color_type) {
    case 0:
      return 1;
    case 2:
      return 3;
    case 3:
      return 1;
    case 4:
      return 2;
    default:
      return 4;
  }
}

/// The filtered (filter 0) scanlines of the pixels (x0 + k dx, y0 + j dy): one pass of Adam7,
/// or the whole image with (0, 0, 1, 1).
inline std::string png_scanlines(const PngSpec& s, int x0, int y0, int dx, int dy) {
  const int c = png_channels(s.color_type);
  std::string out;
  for (int y = y0; y < s.height; y += dy) {
    out += '\0';
    uint32_t acc = 0;
    int bits = 0;
    for (int x = x0; x < s.width; x += dx)
      for (int k = 0; k < c; ++k) {
        const uint32_t v = s.samples[(size_t(y) * s.width + x) * c + k];
        if (s.depth == 16) {
          out += char(v >> 8);
          out += char(v & 255);
        } else if (s.depth == 8) {
          out += char(v);
        } else {  // 1, 2, 4 bits, most significant first
          acc = (acc << s.depth) | v;
          bits += s.depth;
          if (bits == 8) {
            out += char(acc);
            acc = 0;
            bits = 0;
          }
        }
      }
    if (bits > 0) out += char(acc << (8 - bits));
  }
  return out;
}

/// The IDAT payload (uncompressed) of the image, interlaced with Adam7 when asked.
inline std::string png_raw_image(const PngSpec& s) {
  if (!s.interlaced) return png_scanlines(s, 0, 0, 1, 1);
  static const int pass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                 {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  std::string out;
  for (const auto& p : pass)
    if (p[0] < s.width && p[1] < s.height) out += png_scanlines(s, p[0], p[1], p[2], p[3]);
  return out;
}

/// The whole file. `idat` replaces the compressed image data when non-empty.
inline std::string png_file(const PngSpec& s, const std::string& idat = "") {
  std::string ihdr = be32(uint32_t(s.width)) + be32(uint32_t(s.height)) + char(s.depth) + char(s.color_type) + '\0' +
                     '\0' + char(s.interlaced ? 1 : 0);
  std::string f = "\x89PNG\r\n\x1a\n" + png_chunk("IHDR", ihdr);
  for (const auto& [type, data] : s.extra_chunks) f += png_chunk(type, data);
  if (!s.palette.empty()) f += png_chunk("PLTE", s.palette);
  if (!s.trns.empty()) f += png_chunk("tRNS", s.trns);
  f += png_chunk("IDAT", idat.empty() ? png_deflate(png_raw_image(s)) : idat);
  return f + png_chunk("IEND", "");
}

}  // namespace sg2::test
