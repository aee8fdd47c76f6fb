// sg2 serve: response images (encode.h).
#include "serve/encode.h"

#include <turbojpeg.h>

#include <memory>

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
}  // namespace

std::string encode_jpeg_bytes(const uint8_t* pixels, int width, int height, int channels, int quality) {
  if (channels != 1 && channels != 3)
    fail(ErrorKind::invalid_argument, "JPEG holds gray or RGB images, not ", channels, " channels");
  thread_local Compressor c;
  if (c.h == nullptr) fail(ErrorKind::internal, "cannot start a TurboJPEG compressor: ", tjGetErrorStr());
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int pf = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  const bool fine = quality >= 95;  // 4:4:4 and the accurate DCT; below, 4:2:0 and the fast DCT (live views)
  const int samp = channels == 1 ? TJSAMP_GRAY : fine ? TJSAMP_444 : TJSAMP_420;
  if (tjCompress2(c.h, pixels, width, 0, height, pf, &buf, &size, samp, quality, fine ? 0 : TJFLAG_FASTDCT) != 0) {
    const std::string why = tjGetErrorStr2(c.h);
    if (buf) tjFree(buf);
    fail(ErrorKind::internal, "JPEG encoding failed: ", why);
  }
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(buf, [](unsigned char* p) { tjFree(p); });
  return std::string(reinterpret_cast<const char*>(buf), size);
}

}  // namespace sg2::cli::serve
