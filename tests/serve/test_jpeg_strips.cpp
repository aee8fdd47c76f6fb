// sg2 serve's strip-parallel JPEG encoder (apps/serve/encode.h): the joined file is byte for byte the
// file libjpeg-turbo writes for the whole image with a restart marker every strip (TJ_RESTART), and it
// decodes to the pixels of the unsplit encode.
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "serve/encode.h"

namespace {

using sg2::cli::serve::encode_jpeg_bytes;
using sg2::cli::serve::jpeg_strips;
using sg2::cli::serve::Spawn;

// A picture with smooth areas, edges and noise (so every quality codes many coefficients).
std::vector<uint8_t> picture(int w, int h, int c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> p(size_t(w) * size_t(h) * size_t(c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        const int v = ((x * (k + 1) + y * 3) & 255) / 2 + ((x / 9 + y / 7) % 2) * 60 + int(rng() % 40);
        p[(size_t(y) * size_t(w) + size_t(x)) * size_t(c) + size_t(k)] = uint8_t(std::min(255, v));
      }
  return p;
}

// One encode of the whole image by TurboJPEG, with TJ_RESTART=`restart` (MCU rows) when not empty.
std::string whole(const std::vector<uint8_t>& p, int w, int h, int c, int quality, const std::string& restart) {
  if (restart.empty())
    unsetenv("TJ_RESTART");
  else
    setenv("TJ_RESTART", restart.c_str(), 1);
  const std::string f = encode_jpeg_bytes(p.data(), w, h, c, quality);
  unsetenv("TJ_RESTART");
  return f;
}

std::vector<uint8_t> decode(const std::string& f, int w, int h, int c) {
  tjhandle d = tjInitDecompress();
  std::vector<uint8_t> out(size_t(w) * size_t(h) * size_t(c));
  const int rc =
      tjDecompress2(d, reinterpret_cast<const unsigned char*>(f.data()), static_cast<unsigned long>(f.size()),
                    out.data(), w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, 0);
  const std::string why = rc != 0 ? tjGetErrorStr2(d) : "";
  tjDestroy(d);
  EXPECT_EQ(rc, 0) << why;
  return out;
}

// Runs each task on a thread of its own (joined by the test).
struct Threads {
  std::vector<std::thread> ts;
  Spawn spawn() {
    return [this](std::function<void()> task) { ts.emplace_back(std::move(task)); };
  }
  ~Threads() {
    for (auto& t : ts) t.join();
  }
};

TEST(ServeJpeg, StripsJoinToTheRestartMarkedWholeEncode) {
  struct Case {
    int w, h, c, quality;
  };
  for (const Case& k : {Case{1024, 1024, 3, 90}, Case{333, 517, 3, 90}, Case{200, 130, 3, 95}, Case{101, 77, 1, 80},
                        Case{64, 48, 3, 50}, Case{17, 200, 3, 100}}) {
    const std::vector<uint8_t> p = picture(k.w, k.h, k.c, uint32_t(k.w * 7 + k.h));
    const int mcu = k.c == 3 && k.quality < 95 ? 16 : 8;
    const int mcu_rows = (k.h + mcu - 1) / mcu;
    const std::string plain = whole(p, k.w, k.h, k.c, k.quality, "");
    const std::vector<uint8_t> pixels = decode(plain, k.w, k.h, k.c);
    for (int strips : {2, 3, 5, 8, 16, 1000}) {
      SCOPED_TRACE(testing::Message() << k.w << "x" << k.h << "x" << k.c << " q" << k.quality << ", " << strips
                                      << " strips");
      Threads threads;
      const std::string joined = encode_jpeg_bytes(p.data(), k.w, k.h, k.c, k.quality, strips, threads.spawn());
      const int s = std::min(strips, mcu_rows);
      const int rows = (mcu_rows + s - 1) / s;
      const std::string reference = whole(p, k.w, k.h, k.c, k.quality, std::to_string(rows));
      if (rows < mcu_rows) {
        EXPECT_EQ(joined, reference);
        EXPECT_NE(joined, plain);
      } else {
        EXPECT_EQ(joined, plain);  // one strip: no restart markers
      }
      EXPECT_EQ(decode(joined, k.w, k.h, k.c), pixels);
    }
  }
}

TEST(ServeJpeg, WithoutSpawnOrOneStripItIsTheWholeEncode) {
  const std::vector<uint8_t> p = picture(256, 256, 3, 3);
  const std::string plain = whole(p, 256, 256, 3, 90, "");
  EXPECT_EQ(encode_jpeg_bytes(p.data(), 256, 256, 3, 90, 4), plain);  // no spawn
  Threads threads;
  EXPECT_EQ(encode_jpeg_bytes(p.data(), 256, 256, 3, 90, 1, threads.spawn()), plain);
}

TEST(ServeJpeg, TablesFromTheEnvironmentFallBackToOneEncode) {
  // TJ_OPTIMIZE gives each strip its own Huffman tables: the strips cannot be joined.
  const std::vector<uint8_t> p = picture(128, 256, 3, 4);
  setenv("TJ_OPTIMIZE", "1", 1);
  const std::string plain = encode_jpeg_bytes(p.data(), 128, 256, 3, 90);
  std::string joined;
  {
    Threads threads;
    joined = encode_jpeg_bytes(p.data(), 128, 256, 3, 90, 4, threads.spawn());
  }
  unsetenv("TJ_OPTIMIZE");
  EXPECT_EQ(joined, plain);
}

TEST(ServeJpeg, StripErrorsReachTheCaller) {
  const std::vector<uint8_t> p = picture(64, 64, 3, 5);
  Spawn failing = [](std::function<void()>) { throw std::runtime_error("no thread"); };
  EXPECT_THROW(encode_jpeg_bytes(p.data(), 64, 64, 3, 90, 4, failing), std::runtime_error);
  EXPECT_THROW(encode_jpeg_bytes(p.data(), 64, 64, 4, 90, 4, failing), std::exception);  // 4 channels
}

TEST(ServeJpeg, StripCountKeepsSixtyFourRowsAStrip) {
  EXPECT_EQ(jpeg_strips(1024, 16), 16);
  EXPECT_EQ(jpeg_strips(1024, 4), 4);
  EXPECT_EQ(jpeg_strips(256, 16), 4);
  EXPECT_EQ(jpeg_strips(100, 16), 1);
  EXPECT_EQ(jpeg_strips(32, 16), 1);
}

}  // namespace
