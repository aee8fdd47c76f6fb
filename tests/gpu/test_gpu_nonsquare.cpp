// Non-square networks on a GPU machine (issue 25 item 4). The CUDA backend does not run them yet
// (its kernels take one side per feature map): every precision is refused with a one-line
// "non-square" message before anything is allocated, a Generator without a device runs them on
// the CPU (sg2 generate and serve without --device do the same: tests/test_nonsquare.cpp).
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/random_model.h"
#include "test_util.h"

using namespace sg2;

namespace {
Model non_square_model() {
  ModelConfig c = make_config(32, 256, 32, 16, 16, 0, 3, 2, Architecture::skip, 256.0f, 2);
  c.img_height = 32;
  c.img_width = 16;
  c.validate();
  return make_random_model(c, 7);
}
}  // namespace

TEST(GpuNonSquare, EveryPrecisionIsRefusedSayingNonSquare) {
  SG2_REQUIRE_GPU();
  for (Precision p : {Precision::automatic, Precision::fp32, Precision::tf32, Precision::fp16}) {
    GeneratorOptions o;
    o.device = Device{Device::Kind::cuda, 0};
    o.precision = p;
    try {
      Generator g(non_square_model(), o);
      ADD_FAILURE() << "a non-square network ran on the CUDA backend at " << to_string(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsupported);
      EXPECT_NE(std::string(e.what()).find("non-square network (16x32)"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(GpuNonSquare, NoDeviceRunsOnTheCpuAndMatchesIt) {
  SG2_REQUIRE_GPU();
  const Model m = non_square_model();
  Generator any(m, GeneratorOptions{});
  EXPECT_EQ(any.device().kind, Device::Kind::cpu);
  GeneratorOptions cpu;
  cpu.device = Device{};
  Generator ref(m, cpu);
  const Tensor ws = ref.map(z_from_seeds({1, 2}, 16), Tensor(), Truncation{});
  const Tensor a = any.synthesize(ws), b = ref.synthesize(ws);
  ASSERT_EQ(a.shape(), (std::vector<int64_t>{2, 3, 32, 16}));
  EXPECT_TRUE(test::tensors_near(a, b, 0, "no device vs cpu"));
}
