// Tests of the PNG encoder (formats/png_encode.cpp): every file decodes with a reader that is not
// ours (libpng's) to the same pixels, for every channel count, odd sizes and every level; the chunk
// structure and CRCs are checked independently (zlib's crc32); levels, determinism, threads, the
// size limit, bad input and atomic writes.
#include <png.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/model.h"
#include "sg2/random_model.h"
#include "test_cli_run.h"
#include "test_util.h"

namespace sg2 {
namespace {

/// Decodes a PNG held in memory with libpng's simplified API, keeping the file's channel layout.
Image8 decode_with_libpng(const std::vector<uint8_t>& png) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, png.data(), png.size()))
    throw std::runtime_error(std::string("libpng: ") + img.message);
  Image8 out;
  out.width = static_cast<int>(img.width);
  out.height = static_cast<int>(img.height);
  out.channels = static_cast<int>(PNG_IMAGE_SAMPLE_CHANNELS(img.format));
  if (img.format & ~(PNG_FORMAT_FLAG_ALPHA | PNG_FORMAT_FLAG_COLOR)) {
    png_image_free(&img);
    throw std::runtime_error("libpng: unexpected format flags " + std::to_string(img.format));
  }
  out.pixels.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.pixels.data(), 0, nullptr))
    throw std::runtime_error(std::string("libpng: ") + img.message);
  return out;
}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

/// Walks the chunks: signature, IHDR (size, 8 bits, the color type of `channels`, no interlace),
/// IDAT, IEND, each CRC by zlib's crc32, nothing after IEND; returns the chunk types in order.
std::vector<std::string> check_chunks(const std::vector<uint8_t>& png, int width, int height, int channels) {
  static const uint8_t sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  EXPECT_GE(png.size(), 8u + 25 + 12 + 12);
  EXPECT_EQ(std::memcmp(png.data(), sig, 8), 0);
  std::vector<std::string> types;
  size_t pos = 8;
  while (pos + 12 <= png.size()) {
    const uint32_t len = be32(&png[pos]);
    if (pos + 12 + len > png.size()) {
      ADD_FAILURE() << "chunk runs past the end";
      break;
    }
    const std::string type(reinterpret_cast<const char*>(&png[pos + 4]), 4);
    const uint32_t crc = static_cast<uint32_t>(::crc32(0, &png[pos + 4], len + 4));
    EXPECT_EQ(crc, be32(&png[pos + 8 + len])) << "CRC of " << type;
    if (type == "IHDR") {
      const uint8_t* d = &png[pos + 8];
      static const int color_type[5] = {-1, 0, 4, 2, 6};
      EXPECT_EQ(len, 13u);
      EXPECT_EQ(be32(d), uint32_t(width));
      EXPECT_EQ(be32(d + 4), uint32_t(height));
      EXPECT_EQ(d[8], 8);
      EXPECT_EQ(d[9], color_type[channels]);
      EXPECT_EQ(d[12], 0);  // no interlace
    }
    types.push_back(type);
    pos += 12 + len;
  }
  EXPECT_EQ(pos, png.size()) << "bytes after the last chunk";
  return types;
}

/// Noise, a smooth gradient, or flat: the three kinds of content an encoder treats differently.
Image8 test_image(int w, int h, int c, int kind, uint32_t seed) {
  Image8 im;
  im.width = w;
  im.height = h;
  im.channels = c;
  im.pixels.resize(size_t(w) * h * c);
  std::mt19937 rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        uint8_t v = 0;
        if (kind == 0)
          v = static_cast<uint8_t>(rng());
        else if (kind == 1)
          v = static_cast<uint8_t>((x * 3 + y * 5 + k * 40 + (rng() & 3)) & 255);
        else
          v = static_cast<uint8_t>(k * 60 + 7);
        im.pixels[(size_t(y) * w + x) * c + k] = v;
      }
  return im;
}

TEST(PngEncode, EveryChannelCountSizeAndLevelDecodesWithLibpng) {
  const int sizes[][2] = {{1, 1}, {2, 3}, {7, 5}, {33, 17}, {64, 1}, {1, 64}, {130, 67}};
  int checked = 0;
  for (int c = 1; c <= 4; ++c)
    for (const auto& s : sizes)
      for (int kind = 0; kind < 3; ++kind) {
        const Image8 im = test_image(s[0], s[1], c, kind, uint32_t(c * 1000 + s[0] * 7 + s[1] + kind));
        for (int level = kPngLevelMin; level <= kPngLevelMax; ++level) {
          const std::string label = std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(c) +
                                    " kind " + std::to_string(kind) + " level " + std::to_string(level);
          PngOptions o;
          o.level = level;
          const std::vector<uint8_t> png = encode_png(im, o);
          EXPECT_EQ(check_chunks(png, s[0], s[1], c), (std::vector<std::string>{"IHDR", "IDAT", "IEND"})) << label;
          Image8 back;
          try {
            back = decode_with_libpng(png);
          } catch (const std::exception& e) {
            ADD_FAILURE() << label << ": " << e.what();
            continue;
          }
          ASSERT_EQ(back.width, im.width) << label;
          ASSERT_EQ(back.height, im.height) << label;
          ASSERT_EQ(back.channels, im.channels) << label;
          ASSERT_TRUE(back.pixels == im.pixels) << label;
          ++checked;
        }
      }
  EXPECT_EQ(checked, 4 * 7 * 3 * (kPngLevelMax - kPngLevelMin + 1));
}

/// The concatenated data of every IDAT chunk of a PNG file (the zlib stream).
std::vector<uint8_t> idat_stream(const std::vector<uint8_t>& png) {
  std::vector<uint8_t> out;
  size_t i = 8;
  while (i + 12 <= png.size()) {
    const size_t n = (size_t(png[i]) << 24) | (size_t(png[i + 1]) << 16) | (size_t(png[i + 2]) << 8) | png[i + 3];
    if (i + 12 + n > png.size()) break;
    if (std::memcmp(&png[i + 4], "IDAT", 4) == 0)
      out.insert(out.end(), png.begin() + long(i + 8), png.begin() + long(i + 8 + n));
    i += 12 + n;
  }
  return out;
}

// The default level is PIL's writer (gen_images.py's Image.save): the same row filters and zlib
// settings give the same compressed stream, byte for byte, on files PIL wrote (tests/data/pil_png).
// PIL splits the stream over several IDAT chunks, sg2 writes one, so sg2's files are a few bytes
// smaller. Any other filter choice or zlib setting changes the stream.
TEST(PngEncode, DefaultLevelWritesPilsCompressedStream) {
  int checked = 0;
  for (const char* name :
       {"rgb_96x64", "gray_50x37", "rgba_33x20", "la_17x9", "ties_3x200", "ties_rgb_2x300", "stylegan2_crop_256x192"}) {
    const std::string file = test::slurp(test::source_path(std::string("tests/data/pil_png/") + name + ".png"));
    const std::vector<uint8_t> pil(file.begin(), file.end());
    const Image8 im = decode_with_libpng(pil);
    const std::vector<uint8_t> ours = encode_png(im);
    const std::vector<uint8_t> pil_stream = idat_stream(pil);
    ASSERT_FALSE(pil_stream.empty()) << name;
    EXPECT_TRUE(idat_stream(ours) == pil_stream)
        << name << ": " << idat_stream(ours).size() << " vs PIL's " << pil_stream.size();
    EXPECT_LE(ours.size(), pil.size()) << name;
    EXPECT_TRUE(decode_with_libpng(ours).pixels == im.pixels) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

TEST(PngEncode, LevelsReachTheCompressor) {
  // A compressible 256x256 RGB image: stored (0) > zlib 1 > zlib 9, fast below stored, smallest
  // below fast, and level 0 holds every filtered byte; if the level did not reach the compressor,
  // the sizes would be equal.
  const Image8 im = test_image(256, 256, 3, 1, 5);
  std::vector<size_t> size(kPngLevelMax + 1);
  for (int l = kPngLevelMin; l <= kPngLevelMax; ++l) size[l] = PngEncoder(l).encode(im).size();
  const size_t filtered = size_t(256 * 3 + 1) * 256;
  EXPECT_GE(size[0], filtered);
  EXPECT_LT(size[1], size[0] / 2);
  EXPECT_LT(size[9], size[1]);
  EXPECT_LT(size[kPngLevelFast], size[0] / 2);
  EXPECT_LT(size[kPngLevelSmallest], size[kPngLevelFast]);
  EXPECT_EQ(PngOptions().level, kPngLevelDefault);
  EXPECT_EQ(kPngLevelDefault, 6);
  EXPECT_EQ(png_level_name(kPngLevelFast), "fast");
  EXPECT_EQ(png_level_name(kPngLevelSmallest), "smallest");
  EXPECT_EQ(png_level_name(6), "6");
}

TEST(PngEncode, SameBytesOnEveryRunAndThread) {
  std::vector<Image8> ims;
  for (int i = 0; i < 6; ++i) ims.push_back(test_image(40 + i, 30 + 2 * i, 1 + i % 4, i % 2, uint32_t(i)));
  const int levels[] = {0, 1, 6, kPngLevelFast, kPngLevelSmallest};
  std::vector<std::vector<uint8_t>> expected;
  for (const Image8& im : ims)
    for (int l : levels) {
      PngOptions o;
      o.level = l;
      expected.push_back(encode_png(im, o));
      EXPECT_TRUE(encode_png(im, o) == expected.back());  // the thread's cached encoder again
      EXPECT_TRUE(PngEncoder(l).encode(im) == expected.back());
    }
  // 8 threads, each encoding everything in its own order, through encode_png (thread-local encoders)
  // and through its own PngEncoder objects.
  std::vector<int> bad(8, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t)
    pool.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep)
        for (size_t k = 0; k < expected.size(); ++k) {
          const size_t j = (k * 7 + size_t(t)) % expected.size();
          const Image8& im = ims[j / 5];
          const int l = levels[j % 5];
          PngOptions o;
          o.level = l;
          if (encode_png(im, o) != expected[j]) ++bad[t];
          if (PngEncoder(l).encode(im.pixels.data(), im.width, im.height, im.channels) != expected[j]) ++bad[t];
        }
    });
  for (std::thread& t : pool) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

TEST(PngEncode, ParsesLevels) {
  for (int l = 0; l <= 9; ++l) EXPECT_EQ(parse_png_level(std::to_string(l)), l);
  EXPECT_EQ(parse_png_level("fast"), kPngLevelFast);
  EXPECT_EQ(parse_png_level("smallest"), kPngLevelSmallest);
  EXPECT_EQ(parse_png_level("default"), kPngLevelDefault);
  for (int l = kPngLevelMin; l <= kPngLevelMax; ++l) EXPECT_EQ(parse_png_level(png_level_name(l)), l);
  for (const char* bad : {"", "10", "11", "12", "-1", "01", "1.5", " 1", "x", "100", "fastest"}) {
    try {
      parse_png_level(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_EQ(std::string(e.what()), "'" + std::string(bad) +
                                           "' is not a PNG level (0-9 as PIL's compress_level: 0 stores, 9 "
                                           "smallest, default = 6; or fast, smallest)");
    }
  }
}

TEST(PngEncode, RefusesBadInput) {
  auto kind_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::internal;  // no error: not what any expectation below wants
  };
  EXPECT_EQ(kind_of([] { PngEncoder e(-1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind_of([] { PngEncoder e(kPngLevelMax + 1); }), ErrorKind::invalid_argument);
  PngOptions o;
  o.level = kPngLevelMax + 1;
  const Image8 ok = test_image(4, 4, 3, 0, 1);
  EXPECT_EQ(kind_of([&] { encode_png(ok, o); }), ErrorKind::invalid_argument);
  Image8 short_px = ok;
  short_px.pixels.pop_back();
  EXPECT_EQ(kind_of([&] { encode_png(short_px); }), ErrorKind::invalid_argument);
  for (int c : {0, 5}) {
    Image8 b = ok;
    b.channels = c;
    EXPECT_EQ(kind_of([&] { encode_png(b); }), ErrorKind::invalid_argument) << c;
  }
  Image8 empty;
  EXPECT_EQ(kind_of([&] { encode_png(empty); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind_of([] { encode_png(nullptr, 2, 2, 3); }), ErrorKind::invalid_argument);
  PngEncoder moved(1);
  PngEncoder other(std::move(moved));
  EXPECT_EQ(kind_of([&] { moved.encode(ok); }), ErrorKind::invalid_argument);
  EXPECT_EQ(other.encode(ok), PngEncoder(1).encode(ok));
}

TEST(PngEncode, OneSizeLimitForEveryPng) {
  // check_png_size (sg2/image.h) is the one limit: sides up to kMaxPngSide, and a PNG written whole
  // (this encoder) at most kMaxWholePngBytes of pixels; exactly at the limit passes, one more fails.
  const int64_t L = kMaxWholePngBytes;
  EXPECT_NO_THROW(check_png_size(1 << 14, L >> 14, 1, PngWrite::whole, "x"));
  EXPECT_THROW(check_png_size(1 << 14, (L >> 14) + 1, 1, PngWrite::whole, "x"), Error);
  EXPECT_NO_THROW(check_png_size(kMaxPngSide, 1, 4, PngWrite::whole, "x"));
  EXPECT_THROW(check_png_size(kMaxPngSide + 1, 1, 1, PngWrite::whole, "x"), Error);
  EXPECT_NO_THROW(check_png_size(25000, 25000, 3, PngWrite::streamed, "x"));
  EXPECT_THROW(check_png_size(25000, 25000, 3, PngWrite::whole, "x"), Error);
  for (int64_t big : {int64_t(1) << 40, INT64_MAX})  // no overflow in the check itself
    for (int c = 1; c <= 4; ++c) {
      EXPECT_THROW(check_png_size(big, big, c, PngWrite::whole, "x"), Error);
      EXPECT_THROW(check_png_size(big, 1, c, PngWrite::streamed, "x"), Error);
      EXPECT_THROW(check_png_size(1, big, c, PngWrite::whole, "x"), Error);
    }
  try {
    check_png_size(40000, 40000, 3, PngWrite::whole, "out/grid.png");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    const std::string m = e.what();
    EXPECT_NE(m.find("out/grid.png: a 40000x40000 PNG of 3 channels holds"), std::string::npos) << m;
  }
  // The encoder and make_grid apply it before allocating: 46,000 rows of one 46,000-pixel gray image.
  Image8 row = test_image(46000, 1, 1, 2, 0);
  try {
    make_grid({row}, 1, 46000);
    ADD_FAILURE() << "a 46000x46000 grid was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("46000x46000 PNG of 1 channels holds"), std::string::npos) << e.what();
  }
}

TEST(PngEncode, CliRefusesAGridOverTheLimitBeforeAnyWork) {
  // generate streams its grid (GridPngWriter): 8000 x 1 cells of 128 px make a 1,024,000-pixel row,
  // over the PNG side limit; mix writes its grid whole: 257 x 257 cells of 128 x 128 RGB are over
  // the 512 MiB limit. Both are refused after the model load (which gives the resolution) and
  // before any image is made.
  const std::string dir = test::temp_dir("biggrid");
  const std::string model = dir + "/r128.safetensors";
  save_model_file(model, make_random_model(make_config(128, 1024, 8, 8, 8, 0, 3, 1, Architecture::skip, 256.0f, 0), 1));
  test::CliResult r = test::run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-3", "--grid",
                                     "8000x1", "--outdir", dir + "/g"});
  EXPECT_EQ(r.status, 2) << test::describe(r);
  EXPECT_NE(r.err.find("a 1024000x128 PNG is larger than sg2 writes"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir + "/g"));
  r = test::run_cli(
      {"mix", "--network", model, "--device", "cpu", "--rows", "0-255", "--cols", "0-255", "--outdir", dir + "/m"});
  EXPECT_EQ(r.status, 2) << test::describe(r);
  EXPECT_NE(r.err.find("a 32896x32896 PNG of 3 channels holds"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir + "/m"));
}

TEST(PngEncode, CliPngLevel) {
  // generate --png-level: the same pixels at every level, the files as encode_png makes them.
  // The bundled digits32 model: 32x32 smooth digits, which each level compresses differently.
  const std::string dir = test::temp_dir("cli_level");
  const std::string model = test::digits32();
  std::vector<std::string> files;
  for (const char* level : {"0", "fast", "smallest"}) {
    const std::string out = dir + "/L" + level;
    const test::CliResult r = test::run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "3",
                                             "--class", "3", "--png-level", level, "--outdir", out, "-q"});
    ASSERT_EQ(r.status, 0) << test::describe(r);
    files.push_back(test::slurp(out + "/seed0003.png"));
  }
  const std::vector<uint8_t> stored(files[0].begin(), files[0].end());
  const Image8 im = decode_with_libpng(stored);
  EXPECT_TRUE(decode_with_libpng(std::vector<uint8_t>(files[1].begin(), files[1].end())).pixels == im.pixels);
  EXPECT_TRUE(decode_with_libpng(std::vector<uint8_t>(files[2].begin(), files[2].end())).pixels == im.pixels);
  PngOptions o;
  o.level = 0;
  EXPECT_TRUE(encode_png(im, o) == stored);
  o.level = kPngLevelFast;
  EXPECT_EQ(files[1], std::string(reinterpret_cast<const char*>(encode_png(im, o).data()), encode_png(im, o).size()));
  EXPECT_GT(files[0].size(), files[1].size());
  EXPECT_GT(files[1].size(), files[2].size());
  const test::CliResult bad = test::run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "3",
                                             "--class", "3", "--png-level", "13", "--outdir", dir + "/bad"});
  EXPECT_EQ(bad.status, 2) << test::describe(bad);
  EXPECT_EQ(bad.err,
            "sg2 generate: error: --png-level: '13' is not a PNG level (0-9 as PIL's compress_level: 0 stores, "
            "9 smallest, default = 6; or fast, smallest)\n");
  EXPECT_FALSE(test::file_exists(dir + "/bad"));
}

TEST(PngEncode, WritePngIsAtomicAndNamesTheFile) {
  const std::string dir = test::temp_dir("png_write");
  const Image8 im = test_image(17, 9, 4, 0, 3);
  PngOptions o;
  o.level = kPngLevelFast;
  write_png(dir + "/a.png", im, o);
  const std::string file = test::slurp(dir + "/a.png");
  const std::vector<uint8_t> bytes(file.begin(), file.end());
  EXPECT_EQ(decode_with_libpng(bytes).pixels, im.pixels);
  EXPECT_TRUE(bytes == encode_png(im, o));
  EXPECT_FALSE(test::file_exists(dir + "/a.png.tmp." + std::to_string(::getpid())));
  try {
    write_png(dir + "/missing/b.png", im);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find(dir + "/missing/b.png"), std::string::npos) << e.what();
  }
  Image8 bad = im;
  bad.pixels.resize(3);
  try {
    write_png(dir + "/c.png", bad);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(dir + "/c.png: a 17x9x4 image needs 612 bytes"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(test::file_exists(dir + "/c.png"));
}

}  // namespace
}  // namespace sg2
