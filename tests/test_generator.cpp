// The Generator front end on the CPU backend: input validation, batching, noise modes, dumps.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"
#include "test_util.h"

using namespace sg2;

namespace {

Model small_model(const std::string& arch = "skip", int c_dim = 0, int channels = 3) {
  return make_random_model(make_config(16, 128, 16, 8, 8, c_dim, channels, 2, test::architecture(arch), 256.0f, 2), 11);
}

GeneratorOptions cpu(int max_batch = 0) {
  GeneratorOptions o;
  o.device = Device{};
  o.max_batch = max_batch;
  return o;
}

ErrorKind kind_of(const std::function<void()>& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.kind();
  }
  return ErrorKind::internal;
}

}  // namespace

TEST(Generator, BadInputsAreClearErrors) {
  Generator g(small_model("skip", 4), cpu());
  Tensor z = z_from_seeds({1, 2}, 8);
  Tensor c = one_hot({0, 3}, 4);
  std::string msg;
  EXPECT_EQ(kind_of([&] { g.map(z, Tensor()); }, &msg), ErrorKind::invalid_argument);
  EXPECT_NE(msg.find("class label is required"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([&] { g.map(z_from_seeds({1}, 7), one_hot({0}, 4)); }, &msg), ErrorKind::invalid_argument);
  EXPECT_NE(msg.find("z must be [N, 8]"), std::string::npos) << msg;
  Truncation nan;
  nan.psi = std::nanf("");
  EXPECT_EQ(kind_of([&] { g.map(z, c, nan); }, &msg), ErrorKind::invalid_argument);
  EXPECT_NE(msg.find("psi"), std::string::npos);
  Truncation inf;
  inf.psi = INFINITY;
  EXPECT_EQ(kind_of([&] { g.map(z, c, inf); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind_of([&] { one_hot({4}, 4); }, &msg), ErrorKind::invalid_argument);
  EXPECT_NE(msg.find("out of range"), std::string::npos);
  EXPECT_EQ(kind_of([&] { one_hot({-1}, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind_of([&] { g.synthesize(Tensor({1, 5, 8})); }, &msg), ErrorKind::invalid_argument);
  EXPECT_NE(msg.find("ws must be [N, 6, 8]"), std::string::npos) << msg;
  NoiseSpec bad_maps;
  bad_maps.maps = {{Tensor({4, 4})}};
  EXPECT_EQ(kind_of([&] { g.synthesize(Tensor({1, 6, 8}), bad_maps); }), ErrorKind::invalid_argument);
  GeneratorOptions fp16 = cpu();
  fp16.precision = Precision::fp16;
  EXPECT_EQ(kind_of([&] { Generator(small_model(), fp16); }, &msg), ErrorKind::invalid_argument);
  EXPECT_NE(msg.find("float32 only"), std::string::npos) << msg;
  fp16.precision = Precision::tf32;
  EXPECT_EQ(kind_of([&] { Generator(small_model(), fp16); }), ErrorKind::invalid_argument);
  Model broken = small_model();
  broken.tensors.erase("mapping.w_avg");
  EXPECT_EQ(kind_of([&] { Generator(broken, cpu()); }, &msg), ErrorKind::bad_file);
  EXPECT_NE(msg.find("mapping.w_avg"), std::string::npos);
}

TEST(Generator, BatchSizeAndPositionDoNotChangeTheOutput) {
  for (const char* arch : {"skip", "orig", "resnet"}) {
    Model m = small_model(arch, 0, 4);
    Generator one(m, cpu(1)), many(m, cpu(3));
    Tensor z = z_from_seeds({5, 6, 7, 8, 9}, 8);
    Truncation t;
    t.psi = 0.6f;
    t.cutoff = 3;
    Tensor a = one.generate(z, Tensor(), t), b = many.generate(z, Tensor(), t);
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{5, 4, 16, 16}));
    EXPECT_EQ(a.vec(), b.vec()) << arch;  // bit-identical across batch sizes on the CPU
    Tensor again = many.generate(z, Tensor(), t);
    EXPECT_EQ(again.vec(), b.vec()) << arch;  // deterministic
  }
}

TEST(Generator, TruncationFollowsLerpTowardWAvgWithCutoff) {
  Model m = small_model();
  Generator g(m, cpu());
  Tensor z = z_from_seeds({3}, 8);
  Tensor w1 = g.map(z, Tensor());
  Truncation t;
  t.psi = 0.7f;
  t.cutoff = 2;
  Tensor wt = g.map(z, Tensor(), t);
  const Tensor& avg = m.at("mapping.w_avg");
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 8; ++j) {
      const float w = w1[r * 8 + j];
      const float want = r < 2 ? avg[j] + 0.7f * (w - avg[j]) : w;
      EXPECT_NEAR(wt[r * 8 + j], want, 1e-6) << r << "," << j;
    }
  t.psi = 0.0f;
  t.cutoff.reset();
  Tensor w0 = g.map(z, Tensor(), t);
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(w0[r * 8 + j], avg[j]);
}

TEST(Generator, NoiseModesAndMaps) {
  Model m = small_model();
  Generator g(m, cpu(2));
  Tensor ws = g.map(z_from_seeds({1, 2, 3}, 8), Tensor());
  NoiseSpec none;
  none.mode = NoiseMode::none;
  NoiseSpec cnst;
  Tensor a = g.synthesize(ws, none), b = g.synthesize(ws, cnst);
  EXPECT_NE(a.vec(), b.vec());
  // Explicit maps equal to the stored noise_const give the const result exactly.
  NoiseSpec given;
  const auto layers = noise_layers(m.config);
  for (int n = 0; n < 3; ++n) {
    std::vector<Tensor> row;
    for (const auto& l : layers) row.push_back(m.at(l.layer + ".noise_const"));
    given.maps.push_back(row);
  }
  EXPECT_EQ(g.synthesize(ws, given).vec(), b.vec());
  // Random noise depends on (seed, key), not on batch position or size.
  NoiseSpec r1;
  r1.mode = NoiseMode::random;
  r1.seed = 9;
  r1.keys = {10, 20, 30};
  Tensor x = g.synthesize(ws, r1);
  NoiseSpec r2 = r1;
  r2.keys = {20};
  Tensor y = g.synthesize(ws.slice0(1, 2), r2);
  EXPECT_EQ(y.vec(), x.slice0(1, 2).vec());
  r2.seed = 10;
  EXPECT_NE(g.synthesize(ws.slice0(1, 2), r2).vec(), y.vec());
  Tensor nm = random_noise_map(1, 2, 3, 64);
  double mean = 0, var = 0;
  for (float v : nm.vec()) mean += v;
  mean /= nm.numel();
  for (float v : nm.vec()) var += (v - mean) * (v - mean);
  var /= nm.numel();
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.08);
}

TEST(Generator, DumpsEveryLayerOfTheFirstBatch) {
  std::string dir = test::temp_dir("dump");
  GeneratorOptions o = cpu();
  o.dump_dir = dir;
  Generator g(small_model(), o);
  Tensor img = g.generate(z_from_seeds({4}, 8), Tensor());
  for (const char* f : {"mapping_fc0.npy", "mapping_fc1.npy", "b4_x.npy", "b4_img.npy", "b8_x.npy", "b16_img.npy"})
    EXPECT_TRUE(std::ifstream(dir + "/" + f).good()) << f;
  EXPECT_EQ(read_npy_tensor(dir + "/b16_img.npy").vec(), img.vec());
}

TEST(Generator, MovedFromGeneratorThrowsAndOneHotIsEmptyForUnconditional) {
  Generator a(small_model(), cpu());
  Generator b(std::move(a));
  std::string msg;
  EXPECT_EQ(kind_of([&] { a.map(z_from_seeds({1}, 8), Tensor()); }, &msg), ErrorKind::invalid_argument);
  EXPECT_NE(msg.find("moved from"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([&] { a.config(); }), ErrorKind::invalid_argument);
  EXPECT_EQ(b.map(z_from_seeds({1}, 8), one_hot({7}, 0)).dim(0), 1);  // one_hot(..., 0) is empty
  EXPECT_TRUE(one_hot({7, 7}, 0).empty());
}

TEST(Generator, DeviceAndEnumParsing) {
  EXPECT_EQ(Device::parse("cpu").str(), "cpu");
  EXPECT_EQ(Device::parse("cuda").str(), "cuda:0");
  EXPECT_EQ(Device::parse("cuda:3").index, 3);
  EXPECT_THROW(Device::parse("gpu"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  EXPECT_EQ(parse_precision("auto"), Precision::automatic);
  EXPECT_THROW(parse_precision("bf16"), Error);
  EXPECT_EQ(parse_noise_mode("none"), NoiseMode::none);
  EXPECT_THROW(parse_noise_mode("zero"), Error);
}
