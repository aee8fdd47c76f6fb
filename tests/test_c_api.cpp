// The C ABI (sg2_c.h): same numbers as the C++ API, status codes and last-error messages, no
// exception crossing the boundary.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "sg2/sg2.h"
#include "sg2/sg2_c.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

struct Handle {
  sg2_generator* g = nullptr;
  ~Handle() { sg2_generator_close(g); }
};

sg2_options cpu_options() {
  sg2_options o;
  sg2_options_init(&o);
  o.device = "cpu";
  return o;
}

}  // namespace

TEST(CApi, GeneratesWhatTheCppApiGenerates) {
  const std::string dir = temp_dir("c");
  const std::string model = write_tiny_model(dir, 4);
  const sg2_options opt = cpu_options();
  Handle h;
  ASSERT_EQ(sg2_generator_open(model.c_str(), &opt, &h.g), SG2_OK) << sg2_last_error();
  sg2_model_info info;
  ASSERT_EQ(sg2_generator_info(h.g, &info), SG2_OK);
  EXPECT_EQ(info.z_dim, 8);
  EXPECT_EQ(info.c_dim, 4);
  EXPECT_EQ(info.num_ws, 6);
  EXPECT_EQ(info.img_resolution, 16);
  EXPECT_EQ(info.img_channels, 3);

  GeneratorOptions cpu;
  cpu.device = Device{};
  Generator gen(load_model_file(model), cpu);
  const uint32_t seeds[] = {3, 9};
  Truncation tr;
  tr.psi = 0.6f;
  const Tensor c = one_hot({2, 2}, 4);
  const Tensor want = gen.generate(z_from_seeds({3, 9}, 8), c, tr);

  std::vector<float> img(size_t(2 * 3 * 16 * 16));
  ASSERT_EQ(sg2_generate_seeds(h.g, seeds, 2, 2, 0.6f, SG2_NOISE_CONST, img.data()), SG2_OK) << sg2_last_error();
  EXPECT_TRUE(tensors_near(Tensor({2, 3, 16, 16}, img), want, 1e-6, "generate_seeds"));

  // map + synthesize = generate.
  const Tensor z = z_from_seeds({3, 9}, 8);
  std::vector<float> ws(size_t(2 * 6 * 8));
  ASSERT_EQ(sg2_map(h.g, z.data(), c.data(), 2, 0.6f, -1, ws.data()), SG2_OK) << sg2_last_error();
  EXPECT_TRUE(tensors_near(Tensor({2, 6, 8}, ws), gen.map(z, c, tr), 1e-6, "map"));
  std::vector<float> img2(img.size());
  ASSERT_EQ(sg2_synthesize(h.g, ws.data(), 2, SG2_NOISE_CONST, 0, nullptr, img2.data()), SG2_OK) << sg2_last_error();
  EXPECT_TRUE(tensors_near(Tensor({2, 3, 16, 16}, img2), want, 1e-6, "synthesize"));

  // Random noise keyed by caller-given keys: the same key gives the same image in any batch.
  const uint64_t keys[] = {77, 78};
  std::vector<float> r2(img.size()), r1(img.size() / 2);
  ASSERT_EQ(sg2_synthesize(h.g, ws.data(), 2, SG2_NOISE_RANDOM, 5, keys, r2.data()), SG2_OK);
  ASSERT_EQ(sg2_synthesize(h.g, ws.data(), 1, SG2_NOISE_RANDOM, 5, keys, r1.data()), SG2_OK);
  EXPECT_TRUE(tensors_near(Tensor({1, 3, 16, 16}, r1), Tensor({2, 3, 16, 16}, r2).slice0(0, 1), 1e-5, "random noise"));

  // uint8 conversion and PNG writing.
  std::vector<uint8_t> px(16 * 16 * 3);
  ASSERT_EQ(sg2_to_uint8(img.data(), 3, 16, 16, px.data()), SG2_OK);
  EXPECT_TRUE(px == to_image8(want, 0).pixels);
  const std::string png = dir + "/c.png";
  ASSERT_EQ(sg2_write_png(png.c_str(), px.data(), 16, 16, 3), SG2_OK) << sg2_last_error();
  EXPECT_TRUE(read_png(png).pixels == px);
}

// The advice is apart from the message: sg2_last_error() is the message, sg2_last_error_hint() the hint
// ("" when there is none, and after a failure without one).
TEST(CApi, NonSquareNetworksGiveTheirHeightAndWidth) {
  const std::string pkl = source_path("tests/data/nonsquare/human_skip32x16/network-snapshot.pkl");
  const sg2_options opt = cpu_options();
  Handle h;
  ASSERT_EQ(sg2_generator_open(pkl.c_str(), &opt, &h.g), SG2_OK) << sg2_last_error();
  sg2_model_info info;
  ASSERT_EQ(sg2_generator_info(h.g, &info), SG2_OK);
  EXPECT_EQ(info.img_resolution, 32);  // the larger side
  int height = 0, width = 0;
  ASSERT_EQ(sg2_generator_image_size(h.g, &height, &width), SG2_OK);
  EXPECT_EQ(height, 32);
  EXPECT_EQ(width, 16);
  EXPECT_EQ(sg2_generator_image_size(h.g, nullptr, &width), SG2_ERR_INVALID_ARGUMENT);
  GeneratorOptions cpu;
  cpu.device = Device{};
  Generator gen(load_model(pkl), cpu);
  const Tensor want = gen.generate(z_from_seeds({5}, info.z_dim), Tensor(), Truncation{});
  std::vector<float> img(size_t(3 * 32 * 16));
  const uint32_t seed = 5;
  ASSERT_EQ(sg2_generate_seeds(h.g, &seed, 1, -1, 1.0f, SG2_NOISE_CONST, img.data()), SG2_OK) << sg2_last_error();
  EXPECT_TRUE(want.vec() == img);
}

TEST(CApi, TheHintIsApartFromTheMessage) {
  const std::string dir = temp_dir("chint");
  const std::string gz = dir + "/model.pkl";
  {
    std::ofstream f(gz, std::ios::binary);
    f << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8) << std::string(64, '\0');
  }
  const sg2_options opt = cpu_options();
  sg2_generator* g = nullptr;
  EXPECT_EQ(sg2_generator_open(gz.c_str(), &opt, &g), SG2_ERR_BAD_FILE);
  EXPECT_EQ(std::string(sg2_last_error()), gz + ": a gzip-compressed file, not a checkpoint");
  EXPECT_EQ(std::string(sg2_last_error_hint()), "decompress it first");
  EXPECT_EQ(sg2_generator_open(nullptr, &opt, nullptr), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(sg2_last_error_hint()), "");
}

TEST(CApi, ErrorsAreStatusCodesWithMessages) {
  const std::string dir = temp_dir("cerr");
  const sg2_options opt = cpu_options();
  sg2_generator* g = reinterpret_cast<sg2_generator*>(0x1);
  EXPECT_NE(sg2_generator_open((dir + "/missing.pkl").c_str(), &opt, &g), SG2_OK);
  EXPECT_EQ(g, nullptr);
  EXPECT_NE(std::string(sg2_last_error()).find("missing.pkl"), std::string::npos) << sg2_last_error();
  EXPECT_EQ(sg2_generator_open(nullptr, &opt, nullptr), SG2_ERR_INVALID_ARGUMENT);

  sg2_options bad = opt;
  bad.precision = "fp64";
  const std::string model = write_tiny_model(dir, 4);
  EXPECT_EQ(sg2_generator_open(model.c_str(), &bad, &g), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sg2_last_error()).find("unknown precision 'fp64'"), std::string::npos);
  bad = opt;
  bad.device = "cuda:3";
  if (!cuda_available()) {
    EXPECT_EQ(sg2_generator_open(model.c_str(), &bad, &g), SG2_ERR_DEVICE);
  }

  Handle h;
  ASSERT_EQ(sg2_generator_open(model.c_str(), &opt, &h.g), SG2_OK);
  std::vector<float> img(3 * 16 * 16);
  const uint32_t seed = 1;
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, 1, -1, 1.0f, SG2_NOISE_CONST, img.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sg2_last_error()).find("conditional"), std::string::npos) << sg2_last_error();
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, 1, 4, 1.0f, SG2_NOISE_CONST, img.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sg2_last_error()).find("pass a class_idx in [0, 3], got 4"), std::string::npos)
      << sg2_last_error();
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, 1, 0, NAN, SG2_NOISE_CONST, img.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sg2_generate_seeds(h.g, nullptr, 1, 0, 1.0f, SG2_NOISE_CONST, img.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, -1, 0, 1.0f, SG2_NOISE_CONST, img.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, 1, 0, 1.0f, static_cast<sg2_noise_mode>(9), img.data()),
            SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, 1, 0, 1.0f, SG2_NOISE_NONE, img.data()), SG2_OK) << sg2_last_error();
  EXPECT_EQ(sg2_generator_info(nullptr, nullptr), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sg2_write_png((dir + "/no/such/dir/x.png").c_str(), std::vector<uint8_t>(12).data(), 2, 2, 3), SG2_ERR_IO);
  EXPECT_EQ(sg2_write_png((dir + "/x.png").c_str(), std::vector<uint8_t>(12).data(), 2, 2, 5),
            SG2_ERR_INVALID_ARGUMENT);
  sg2_generator_close(nullptr);

  // The bundled model's path: size query, too small a buffer.
  ::unsetenv("SG2_MODEL");
  size_t needed = 0;
  EXPECT_EQ(sg2_default_model_path(nullptr, 0, &needed), SG2_ERR_INVALID_ARGUMENT);
  ASSERT_GT(needed, 1u);
  std::vector<char> buf(needed);
  ASSERT_EQ(sg2_default_model_path(buf.data(), buf.size(), nullptr), SG2_OK);
  EXPECT_EQ(std::string(buf.data()), default_model_path());
  EXPECT_STREQ(sg2_version(), version());
}

// Issue 23.11: every argument checked before the caller's arrays are read (sizes in checked
// arithmetic), a NaN label refused, a huge n a usage error (not "internal"), an empty PNG path
// named as such, and a handle used from two threads at once fails instead of deadlocking.
TEST(CApi, ArgumentsAreCheckedBeforeAnyArrayIsRead) {
  const std::string dir = temp_dir("c_args");
  const std::string model = write_tiny_model(dir, 4);
  const sg2_options opt = cpu_options();
  Handle h;
  ASSERT_EQ(sg2_generator_open(model.c_str(), &opt, &h.g), SG2_OK) << sg2_last_error();
  sg2_model_info info;
  ASSERT_EQ(sg2_generator_info(h.g, &info), SG2_OK);
  float z[8] = {0}, c[4] = {0, 1, 0, 0};
  std::vector<float> ws(size_t(info.num_ws) * info.w_dim);
  // A huge n: a usage error before z (8 floats here) is read.
  EXPECT_EQ(sg2_map(h.g, z, c, int64_t(1) << 40, 1.0f, -1, ws.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(sg2_last_error(), "n must be in [0, 2^31], got 1099511627776");
  uint32_t seed = 0;
  std::vector<float> img(size_t(info.img_channels) * info.img_resolution * info.img_resolution);
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, int64_t(1) << 62, 1, 1.0f, SG2_NOISE_CONST, img.data()),
            SG2_ERR_INVALID_ARGUMENT);
  // A bad class, psi or noise mode: refused before the arrays are read (n = 2^31 would over-read).
  EXPECT_EQ(sg2_generate_seeds(h.g, &seed, int64_t(1) << 31, 9, 1.0f, SG2_NOISE_CONST, img.data()),
            SG2_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sg2_last_error()).find("pass a class_idx in [0, 3], got 9"), std::string::npos)
      << sg2_last_error();
  EXPECT_EQ(sg2_map(h.g, z, c, int64_t(1) << 31, std::nanf(""), -1, ws.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sg2_synthesize(h.g, ws.data(), int64_t(1) << 31, static_cast<sg2_noise_mode>(7), 0, nullptr, img.data()),
            SG2_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sg2_map(h.g, z, nullptr, 1, 1.0f, -1, ws.data()), SG2_ERR_INVALID_ARGUMENT);
  // A NaN in the label.
  float bad_c[4] = {0, std::nanf(""), 0, 0};
  EXPECT_EQ(sg2_map(h.g, z, bad_c, 1, 1.0f, -1, ws.data()), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sg2_last_error()).find("the class label c contains NaN"), std::string::npos)
      << sg2_last_error();
  // to_uint8: 5 channels refused before 5 x 30000 x 30000 floats are read from a 1-float buffer.
  float one = 0;
  uint8_t px[4];
  EXPECT_EQ(sg2_to_uint8(&one, 5, 30000, 30000, px), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sg2_last_error()).find("channels 1-4"), std::string::npos) << sg2_last_error();
  // An empty PNG path.
  EXPECT_EQ(sg2_write_png("", px, 1, 1, 3), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(sg2_last_error(), "the path is empty: give the PNG file's name");
}

TEST(CApi, AHandleUsedFromTwoThreadsFailsInsteadOfDeadlocking) {
  const sg2_options opt = cpu_options();
  Handle h;
  ASSERT_EQ(sg2_generator_open(nullptr, &opt, &h.g), SG2_OK) << sg2_last_error();  // the bundled 32x32 model
  sg2_model_info info;
  ASSERT_EQ(sg2_generator_info(h.g, &info), SG2_OK);
  const int64_t n = 48;
  std::vector<uint32_t> seeds(n);
  for (int64_t i = 0; i < n; ++i) seeds[size_t(i)] = uint32_t(i);
  const size_t per = size_t(info.img_channels) * info.img_resolution * info.img_resolution;
  std::vector<float> a(per * n), b(per * n);
  // Two threads call at once; whichever call lands second must fail with the busy error (either
  // side may be first, so both record it). The long call is retried until it runs to the end.
  std::atomic<bool> started{false}, done{false};
  std::atomic<int> busy{0};
  std::string message_long, message_short;
  sg2_status first = SG2_ERR_INVALID_ARGUMENT;
  std::thread t([&] {
    started = true;
    for (int i = 0; i < 2000 && first != SG2_OK; ++i) {
      first = sg2_generate_seeds(h.g, seeds.data(), n, 1, 1.0f, SG2_NOISE_CONST, a.data());
      if (first == SG2_ERR_INVALID_ARGUMENT) {  // a short call held the handle: wait for it, again
        ++busy;
        message_long = sg2_last_error();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    done = true;
  });
  while (!started) std::this_thread::yield();
  // Call again while the long call runs (it takes about a second on 2 cores), until two calls
  // have overlapped (either way round) or the long call has ended.
  for (int i = 0; i < 20000 && !done && busy == 0; ++i) {
    const sg2_status s = sg2_generate_seeds(h.g, seeds.data(), 1, 1, 1.0f, SG2_NOISE_CONST, b.data());
    if (s == SG2_ERR_INVALID_ARGUMENT) {
      ++busy;
      message_short = sg2_last_error();
      break;
    }
    EXPECT_EQ(s, SG2_OK) << sg2_last_error();
  }
  t.join();
  EXPECT_EQ(first, SG2_OK);
  ASSERT_GE(busy.load(), 1) << "no call overlapped another";
  const std::string message = message_short.empty() ? message_long : message_short;
  EXPECT_NE(message.find("is running a call on another thread: a generator is not thread-safe"), std::string::npos)
      << message;
  // The handle works afterwards.
  EXPECT_EQ(sg2_generate_seeds(h.g, seeds.data(), 1, 1, 1.0f, SG2_NOISE_CONST, b.data()), SG2_OK);
}
