// sg2 serve: response images (encode.h).
#include "serve/encode.h"

#include <turbojpeg.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "sg2/error.h"
#include "sg2/image.h"

namespace sg2::cli::serve {

std::string encode_png_bytes(const uint8_t* pixels, int width, int height, int channels, int level) {
  PngOptions o;
  o.level = level;
  const std::vector<uint8_t> png = encode_png(pixels, width, height, channels, o);
  return std::string(png.begin(), png.end());
}

namespace {
struct Compressor {
  tjhandle h = nullptr;
  Compressor() : h(tjInitCompress()) {}
  ~Compressor() {
    if (h) tjDestroy(h);
  }
};

struct Settings {
  int pixel_format, subsampling, flags, mcu_height;
};

Settings settings(int channels, int quality) {
  if (channels != 1 && channels != 3)
    fail(ErrorKind::invalid_argument, "JPEG holds gray or RGB images, not ", channels, " channels");
  const bool fine = quality >= 95;  // 4:4:4 and the accurate DCT; below, 4:2:0 and the fast DCT (live views)
  const int samp = channels == 1 ? TJSAMP_GRAY : fine ? TJSAMP_444 : TJSAMP_420;
  return {channels == 1 ? TJPF_GRAY : TJPF_RGB, samp, fine ? 0 : TJFLAG_FASTDCT, samp == TJSAMP_420 ? 16 : 8};
}

// One whole JPEG file of `height` rows of `pixels`.
std::string compress(const uint8_t* pixels, int width, int height, int quality, const Settings& s) {
  thread_local Compressor c;
  if (c.h == nullptr) fail(ErrorKind::internal, "cannot start a TurboJPEG compressor: ", tjGetErrorStr());
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(c.h, pixels, width, 0, height, s.pixel_format, &buf, &size, s.subsampling, quality, s.flags) != 0) {
    const std::string why = tjGetErrorStr2(c.h);
    if (buf) tjFree(buf);
    fail(ErrorKind::internal, "JPEG encoding failed: ", why);
  }
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(buf, [](unsigned char* p) { tjFree(p); });
  return std::string(reinterpret_cast<const char*>(buf), size);
}

// The layout of a baseline JPEG file as TurboJPEG writes it: SOI, marker segments, one SOS, the
// entropy-coded data, EOI.
struct Layout {
  size_t sof_height = 0;  // offset of the SOF0 frame's 2-byte height
  size_t sos = 0;         // offset of the SOS marker
  size_t data = 0;        // first byte of the entropy-coded data
  bool ok = false;        // one baseline frame, one scan, no DRI, ends with EOI
};

Layout layout(const std::string& f) {
  Layout l;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(f[i]); };
  if (f.size() < 4 || byte(0) != 0xFF || byte(1) != 0xD8 || byte(f.size() - 2) != 0xFF || byte(f.size() - 1) != 0xD9)
    return l;
  size_t i = 2;
  while (i + 4 <= f.size()) {
    if (byte(i) != 0xFF) return l;
    const uint8_t m = byte(i + 1);
    const size_t len = size_t(byte(i + 2)) << 8 | byte(i + 3);
    if (len < 2 || i + 2 + len > f.size()) return l;
    if (m == 0xC0) {
      if (l.sof_height || len < 7) return l;
      l.sof_height = i + 5;
    } else if (m == 0xDD || (m >= 0xC1 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC)) {
      return l;  // a restart interval already, or a frame that is not baseline
    } else if (m == 0xDA) {
      l.sos = i;
      l.data = i + 2 + len;
      l.ok = l.sof_height != 0 && l.data <= f.size() - 2;
      return l;
    }
    i += 2 + len;
  }
  return l;
}

// Waits for the spawned strips; keeps the first error.
struct Join {
  std::mutex mu;
  std::condition_variable cv;
  int open = 0;
  std::exception_ptr error;
  void done(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (e && !error) error = e;
    if (--open == 0) cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open == 0; });
  }
};
}  // namespace

int jpeg_strips(int height, int threads) { return std::max(1, std::min(threads, height / 64)); }

std::string encode_jpeg_bytes(const uint8_t* pixels, int width, int height, int channels, int quality, int strips,
                              const Spawn& spawn) {
  const Settings s = settings(channels, quality);
  const int mcu_rows = (height + s.mcu_height - 1) / s.mcu_height;
  const int mcus_per_row = (width + s.mcu_height - 1) / s.mcu_height;
  strips = std::min(strips, mcu_rows);
  const int rows_per_strip = strips > 1 ? (mcu_rows + strips - 1) / strips : mcu_rows;  // MCU rows
  strips = (mcu_rows + rows_per_strip - 1) / rows_per_strip;
  if (strips <= 1 || !spawn || int64_t(rows_per_strip) * mcus_per_row > 65535)
    return compress(pixels, width, height, quality, s);

  std::vector<std::string> parts(static_cast<size_t>(strips));
  const size_t row_bytes = size_t(width) * size_t(channels);
  auto encode = [&](int k) {
    const int y0 = k * rows_per_strip * s.mcu_height;
    const int h = std::min(height - y0, rows_per_strip * s.mcu_height);
    parts[size_t(k)] = compress(pixels + size_t(y0) * row_bytes, width, h, quality, s);
  };
  auto join = std::make_shared<Join>();
  join->open = strips - 1;
  for (int k = 1; k < strips; ++k) {
    try {
      spawn([join, &encode, k] {
        std::exception_ptr e;
        try {
          encode(k);
        } catch (...) {
          e = std::current_exception();
        }
        join->done(e);
      });
    } catch (...) {
      join->done(std::current_exception());
    }
  }
  std::exception_ptr first;
  try {
    encode(0);
  } catch (...) {
    first = std::current_exception();
  }
  join->wait();
  if (first) std::rethrow_exception(first);
  if (join->error) std::rethrow_exception(join->error);

  // Join: strip 0's headers with the whole height and a DRI segment, then each strip's entropy-coded
  // data followed by RST(k mod 8), then EOI. Every strip must carry strip 0's tables.
  std::vector<Layout> ls;
  for (const std::string& p : parts) ls.push_back(layout(p));
  const Layout& l0 = ls[0];
  bool same = l0.ok;
  for (int k = 1; k < strips && same; ++k) {
    const Layout& l = ls[size_t(k)];
    same = l.ok && l.sos == l0.sos && l.data == l0.data &&
           parts[size_t(k)].compare(0, l.sof_height, parts[0], 0, l0.sof_height) == 0 &&
           parts[size_t(k)].compare(l.sof_height + 2, l.data - l.sof_height - 2, parts[0], l0.sof_height + 2,
                                    l0.data - l0.sof_height - 2) == 0;
  }
  if (!same) return compress(pixels, width, height, quality, s);
  const unsigned interval = unsigned(rows_per_strip * mcus_per_row);
  size_t total = l0.data + 6 + 2;
  for (int k = 0; k < strips; ++k) total += parts[size_t(k)].size() - ls[size_t(k)].data - 2 + 2;
  std::string out;
  out.reserve(total);
  out.append(parts[0], 0, l0.sos);
  out[l0.sof_height] = char(uint8_t(height >> 8));
  out[l0.sof_height + 1] = char(uint8_t(height & 0xFF));
  const char dri[6] = {char(0xFF), char(0xDD), 0, 4, char(uint8_t(interval >> 8)), char(uint8_t(interval & 0xFF))};
  out.append(dri, 6);
  out.append(parts[0], l0.sos, l0.data - l0.sos);
  for (int k = 0; k < strips; ++k) {
    const std::string& p = parts[size_t(k)];
    out.append(p, ls[size_t(k)].data, p.size() - ls[size_t(k)].data - 2);
    if (k + 1 < strips) {
      out.push_back(char(0xFF));
      out.push_back(char(0xD0 + k % 8));
    }
  }
  out.push_back(char(0xFF));
  out.push_back(char(0xD9));
  return out;
}

}  // namespace sg2::cli::serve
