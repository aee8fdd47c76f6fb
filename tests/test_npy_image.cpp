// .npy files, the official uint8 conversion, PNG files and grids.
#include <gtest/gtest.h>

#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;

TEST(Npy, ReadsFixtureFilesOfEveryDtypeUsed) {
  Tensor img = read_npy_tensor(test::source_path("tests/data/fixtures/tiny32/img_s0_psi1_const.npy"));
  EXPECT_EQ(img.shape(), (std::vector<int64_t>{1, 3, 32, 32}));
  std::vector<int64_t> shape;
  auto z = read_npy_f64(test::source_path("tests/data/fixtures/tiny32/z_s0.npy"), &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(z[0], 1.764052345967664);
}

TEST(Npy, WriteReadRoundTripAllRanks) {
  std::string dir = test::temp_dir("npy");
  for (auto shape : std::vector<std::vector<int64_t>>{{}, {5}, {2, 3}, {1, 3, 4, 5}, {0, 4}}) {
    Tensor t(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = float(i) * 0.5f - 1.0f;
    write_npy(dir + "/t.npy", t);
    Tensor r = read_npy_tensor(dir + "/t.npy");
    EXPECT_EQ(r.shape(), t.shape());
    EXPECT_EQ(r.vec(), t.vec());
    auto bytes = detail::read_file(dir + "/t.npy");
    EXPECT_EQ((bytes.size() - t.numel() * 4) % 64, 0u);  // header padded to 64 bytes
  }
}

TEST(Npy, BadFilesAreErrors) {
  std::string dir = test::temp_dir("npybad");
  Tensor t({2, 2}, 1.0f);
  write_npy(dir + "/ok.npy", t);
  auto bytes = detail::read_file(dir + "/ok.npy");
  detail::write_file_atomic(dir + "/short.npy", bytes.data(), bytes.size() - 3);
  EXPECT_THROW(read_npy(dir + "/short.npy"), Error);
  detail::write_file_atomic(dir + "/magic.npy", "hello world", 11);
  EXPECT_THROW(read_npy(dir + "/magic.npy"), Error);
  EXPECT_THROW(read_npy(dir + "/none.npy"), Error);
}

TEST(Image, OfficialConversionTruncatesAndClamps) {
  Tensor img({1, 1, 1, 6}, std::vector<float>{-2.0f, -1.0f, 0.0f, 0.999f, 1.0f, 5.0f});
  Image8 im = to_image8(img, 0);
  EXPECT_EQ(im.pixels, (std::vector<uint8_t>{0, 0, 128, 255, 255, 255}));
  // 0.5 * 127.5 + 128 = 191.75 -> 191 (truncation, not rounding)
  Tensor h({1, 1, 1, 1}, std::vector<float>{0.5f});
  EXPECT_EQ(to_image8(h, 0).pixels[0], 191);
}

TEST(Image, ConversionMatchesOfficialPngsOfFixtures) {
  // The official PNG is exactly the conversion of the official float image.
  for (const char* c : {"tiny32/img_s0_psi1_const.npy|tiny32/seed0000_psi1_const.png",
                        "gray32/img_s2_psi1_const.npy|gray32/seed0002_psi1_const.png"}) {
    std::string s(c);
    std::string npy = s.substr(0, s.find('|')), png = s.substr(s.find('|') + 1);
    Tensor img = read_npy_tensor(test::source_path("tests/data/fixtures/" + npy));
    Image8 ref = read_png(test::source_path("tests/data/fixtures/" + png));
    Image8 got = to_image8(img, 0);
    EXPECT_EQ(got.channels, ref.channels) << png;
    EXPECT_EQ(got.pixels, ref.pixels) << png;
  }
}

TEST(Image, PngRoundTripAndGrid) {
  std::string dir = test::temp_dir("png");
  for (int ch : {1, 2, 3, 4}) {
    Image8 a{3, 2, ch, {}};
    for (int i = 0; i < 3 * 2 * ch; ++i) a.pixels.push_back(uint8_t(i * 11));
    write_png(dir + "/a.png", a);
    Image8 r = read_png(dir + "/a.png");
    EXPECT_EQ(r.channels, ch);
    EXPECT_EQ(r.pixels, a.pixels);
  }
  Image8 a{1, 1, 1, {10}}, b{1, 1, 1, {20}}, c{1, 1, 1, {30}};
  Image8 g = make_grid({a, b, c}, 2, 2);
  EXPECT_EQ(g.pixels, (std::vector<uint8_t>{10, 20, 30, 0}));
  EXPECT_THROW(make_grid({a, b, c}, 1, 2), Error);
  EXPECT_THROW(read_png(dir + "/nothing.png"), Error);
  detail::write_file_atomic(dir + "/fake.png", "<html>", 6);
  EXPECT_THROW(read_png(dir + "/fake.png"), Error);
}

// Issue 23.15: the header dict is read as numpy reads it (exactly descr, fortran_order and shape),
// and a key given twice — numpy keeps the last, an earlier sg2 kept the first, so `sg2 compare`
// could call two different arrays identical — is refused as ambiguous.
TEST(Npy, HeaderIsReadAsNumpyReadsItAndAmbiguityIsRefused) {
  const std::string dir = test::temp_dir("npyhdr");
  auto npy = [&](const std::string& name, std::string header, size_t payload_floats) {
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::string bytes =
        std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 255) + char(header.size() >> 8) + header;
    bytes.append(payload_floats * 4, '\0');
    detail::write_file_atomic(dir + "/" + name, bytes.data(), bytes.size());
    return dir + "/" + name;
  };
  auto error_of = [](const std::string& path) {
    try {
      read_npy(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_file) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
      return std::string(e.what());
    }
    return std::string();
  };
  // What numpy's writer and hand-written headers numpy reads look like.
  EXPECT_EQ(error_of(npy("ok.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 6)), "");
  EXPECT_EQ(error_of(npy("ok2.npy", "{\"descr\":\"<f4\",\"fortran_order\":True,\"shape\":(6,)}", 6)), "");
  EXPECT_EQ(read_npy(dir + "/ok.npy").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(error_of(npy("scalar.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", 1)), "");
  // Ambiguous or not what numpy reads.
  EXPECT_NE(error_of(npy("dup.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (1,)}", 2))
                .find("gives 'shape' twice (numpy would read the last one): refused as ambiguous"),
            std::string::npos);
  EXPECT_NE(error_of(npy("dup2.npy", "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", 4))
                .find("gives 'descr' twice"),
            std::string::npos);
  EXPECT_NE(error_of(npy("extra.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 2))
                .find("has the key 'x' (numpy reads only descr, fortran_order and shape)"),
            std::string::npos);
  EXPECT_NE(error_of(npy("missing.npy", "{'descr': '<f4', 'shape': (2,)}", 2)).find("has no 'fortran_order'"),
            std::string::npos);
  EXPECT_NE(error_of(npy("int.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", 2))
                .find("malformed .npy shape (2)"),
            std::string::npos);
  EXPECT_NE(error_of(npy("list.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", 2))
                .find("shape is not a tuple"),
            std::string::npos);
  EXPECT_NE(error_of(npy("bool.npy", "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", 2))
                .find("fortran_order is not True or False"),
            std::string::npos);
  EXPECT_NE(error_of(npy("hex.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (0x2,)}", 2))
                .find("malformed .npy shape"),
            std::string::npos);
  // A value that looks like a key inside a string is not a key.
  EXPECT_NE(
      error_of(npy("str.npy", "{'descr': 'shape', 'fortran_order': False, 'shape': (2,)}", 2)).find("dtype 'shape'"),
      std::string::npos);
}
