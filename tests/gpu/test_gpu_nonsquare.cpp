// Non-square networks on the CUDA backend (issue 25 item 4): every precision against the CPU
// reference ops, every architecture and aspect, the three noise modes, batch invariance, batch
// invariance off, the uint8 pipe, and StyleGAN-Human's own goldens. Non-square layers run only the
// convolution kernels whose indexing keeps height and width apart (SIMT in fp32, else the direct
// kernel; cuDNN with batch invariance off); GpuNonSquare.RoutingKeepsTiledKernelsOff checks the
// selection without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/cuda/recipe.h"
#include "gpu_test_util.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/image_pipe.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"

using namespace sg2;
using namespace sg2::gputest;

namespace {

struct Shape {
  const char* label;
  int res, h, w;
  Architecture arch;
  std::optional<float> clamp;
  int num_fp16_res;
  int cbase, cmax;
};

// Channels 32..64 (the SIMT kernel's multiples) and odd ones (the direct kernel).
const Shape kShapes[] = {
    {"skip32x16_fp16blocks", 32, 32, 16, Architecture::skip, 256.0f, 2, 1024, 64},
    {"resnet16x32_clamp", 32, 16, 32, Architecture::resnet, 0.5f, 1, 1024, 32},
    {"orig32x8", 32, 32, 8, Architecture::orig, std::nullopt, 0, 512, 32},
    {"skip8x32_odd", 32, 8, 32, Architecture::skip, 1.0f, 1, 208, 13},
};

Model make(const Shape& s) {
  ModelConfig c = make_config(s.res, s.cbase, s.cmax, 16, 16, 0, 3, 2, s.arch, s.clamp, s.num_fp16_res);
  c.img_height = s.h;
  c.img_width = s.w;
  c.validate();
  return make_random_model(c, 9);
}

GeneratorOptions on(Device::Kind k, Precision p = Precision::fp32, int max_batch = 0, bool invariant = true) {
  GeneratorOptions o;
  o.device = Device{k, 0};
  o.precision = p;
  o.max_batch = max_batch;
  o.batch_invariant = invariant;
  o.reference_cpu = k == Device::Kind::cpu;
  return o;
}

double psnr(const Tensor& a, const Tensor& b, double range) {
  double mse = 0;
  for (int64_t i = 0; i < a.numel(); ++i) mse += double(a[i] - b[i]) * double(a[i] - b[i]);
  mse /= double(std::max<int64_t>(a.numel(), 1));
  return mse == 0 ? 999.0 : 10.0 * std::log10(range * range / mse);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), size_t(a.numel()) * sizeof(float)) == 0;
}

}  // namespace

TEST(GpuNonSquare, RoutingKeepsTiledKernelsOff) {
  // No GPU needed: the selection table on a Hopper-like device.
  cuda::DeviceCaps caps;
  caps.cc_major = 9;
  caps.sm_count = 132;
  caps.smem_per_block_optin = 227 * 1024;
  caps.wgmma = true;
  for (const Shape& s : kShapes) {
    const Model m = make(s);
    const SynthesisPlan plan = make_synthesis_plan(m.config);
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::automatic})
      for (bool inv : {true, false}) {
        const auto recipes = cuda::make_recipes(plan, 3, p, caps, inv);
        for (size_t i = 0; i < recipes.size(); ++i) {
          const cuda::BlockRecipe& r = recipes[i];
          const std::string where = std::string(s.label) + " b" + std::to_string(plan.blocks[i].resolution) + " " +
                                    to_string(p) + (inv ? "" : " invariance off");
          EXPECT_FALSE(r.fused_conv1) << where;
          std::vector<const cuda::ConvChoice*> used = {&r.conv1};
          if (plan.blocks[i].in_channels > 0) used.push_back(&r.conv0);
          if (plan.blocks[i].skip) used.push_back(&r.skip);
          for (const cuda::ConvChoice* c : used) {
            EXPECT_NE(c->impl, cuda::ConvImpl::tensor_core) << where;
            EXPECT_NE(c->impl, cuda::ConvImpl::tc_transposed) << where;
            EXPECT_NE(c->fallback, cuda::ConvImpl::tensor_core) << where;
            EXPECT_NE(c->fallback, cuda::ConvImpl::tc_transposed) << where;
            EXPECT_EQ(c->impl == cuda::ConvImpl::cudnn, !inv) << where;
          }
        }
      }
  }
}

TEST(GpuNonSquare, EveryPrecisionMatchesTheCpu) {
  SG2_REQUIRE_GPU();
  for (const Shape& s : kShapes) {
    const Model m = make(s);
    Generator cpu(m, on(Device::Kind::cpu));
    const Tensor z = z_from_seeds({1, 2, 3}, 16);
    const Tensor ws = cpu.map(z, Tensor(), Truncation{});
    for (NoiseMode mode : {NoiseMode::const_, NoiseMode::none, NoiseMode::random}) {
      NoiseSpec n;
      n.mode = mode;
      const Tensor ref = cpu.synthesize(ws, n);
      ASSERT_EQ(ref.shape(), (std::vector<int64_t>{3, 3, s.h, s.w}));
      const double range = 2.0 * scale_of(ref);
      for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::automatic}) {
        const std::string label = std::string(s.label) + " " + to_string(p) + " noise " + to_string(mode);
        Generator gpu(m, on(Device::Kind::cuda, p));
        const Tensor got = gpu.synthesize(ws, n);
        ASSERT_EQ(got.shape(), ref.shape()) << label;
        if (p == Precision::fp32) {
          EXPECT_TRUE(near_rel(got, ref, 1e-4, label));
          EXPECT_TRUE(near_rel(gpu.map(z, Tensor(), Truncation{}), ws, 2e-5, label + " ws"));
        } else {
          EXPECT_GT(psnr(got, ref, range), 40.0) << label;
        }
        // batch invariance: the last image alone, the same bits
        NoiseSpec one = n;
        if (mode == NoiseMode::random) one.keys = {2};
        Generator gpu1(m, on(Device::Kind::cuda, p, 1));
        EXPECT_TRUE(same_bits(gpu1.synthesize(ws.slice0(2, 3), one), got.slice0(2, 3))) << label << ": batch 1 vs 3";
        // batch invariance off (cuDNN first)
        Generator fast(m, on(Device::Kind::cuda, p, 0, false));
        if (p == Precision::fp32)
          EXPECT_TRUE(near_rel(fast.synthesize(ws, n), ref, 1e-4, label + " invariance off"));
        else
          EXPECT_GT(psnr(fast.synthesize(ws, n), ref, range), 40.0) << label << " invariance off";
      }
    }
  }
}

TEST(GpuNonSquare, TheUint8PipeHasTheImageShape) {
  SG2_REQUIRE_GPU();
  const Model m = make(kShapes[0]);
  Generator cpu(m, on(Device::Kind::cpu)), gpu(m, on(Device::Kind::cuda));
  const Tensor ws = cpu.map(z_from_seeds({4, 5}, 16), Tensor(), Truncation{});
  ImagePipe pipe(gpu, 2, 2);
  const int id = pipe.submit(ws, NoiseSpec{});
  const ImageBatch b = pipe.wait(id);
  EXPECT_EQ(b.width, 16);
  EXPECT_EQ(b.height, 32);
  const Tensor img = gpu.synthesize(ws);
  for (int i = 0; i < 2; ++i) {
    const Image8 want = to_image8(img, i);
    EXPECT_EQ(std::memcmp(b.u8 + size_t(i) * want.pixels.size(), want.pixels.data(), want.pixels.size()), 0) << i;
  }
  pipe.release(id);
}

TEST(GpuNonSquare, StyleGanHumanGoldens) {
  SG2_REQUIRE_GPU();
  for (const char* c : {"human_skip32x16", "human_resnet16x8"}) {
    const std::string dir = test::source_path(std::string("tests/data/nonsquare/") + c) + "/";
    std::ifstream f(dir + "manifest.json");
    const nlohmann::json man = nlohmann::json::parse(f);
    Generator gpu(convert_checkpoint(dir + "network-snapshot.pkl"), on(Device::Kind::cuda));
    for (const auto& g : man["goldens"]) {
      NoiseSpec n;
      n.mode = parse_noise_mode(g["noise_mode"].get<std::string>());
      const Tensor img = gpu.synthesize(read_npy_tensor(dir + g["ws"].get<std::string>()), n);
      EXPECT_TRUE(near_rel(img, read_npy_tensor(dir + g["img"].get<std::string>()), 1e-4,
                           std::string(c) + " " + g["img"].get<std::string>()));
    }
  }
}

// StyleGAN-Human's rosinality fork (torch_utils/models.py, tests/data/nonsquare/human_rosinality32x16):
// the fork's W+ rows (its returned latents, or a W+ input) with the stored noise or none.
TEST(GpuNonSquare, StyleGanHumanRosinalityGoldens) {
  SG2_REQUIRE_GPU();
  const std::string dir = test::source_path("tests/data/nonsquare/human_rosinality32x16") + "/";
  std::ifstream f(dir + "manifest.json");
  const nlohmann::json man = nlohmann::json::parse(f);
  Generator gpu(convert_checkpoint(dir + "checkpoint.pt"), on(Device::Kind::cuda));
  int checked = 0;
  for (const auto& g : man["goldens"]) {
    std::string ws;
    if (g.contains("wplus")) {
      ws = g["wplus"].get<std::string>();
    } else {
      const double t = g["truncation"].get<double>();
      ws = "latents_s" + std::to_string(g["seed"].get<int>()) + (t < 1 ? "_trunc" + nlohmann::json(t).dump() : "") +
           ".npy";
    }
    NoiseSpec n;
    if (g["call"].get<std::string>().find("zeros") != std::string::npos) n.mode = NoiseMode::none;
    const Tensor img = gpu.synthesize(read_npy_tensor(dir + ws), n);
    ASSERT_EQ(img.shape(), (std::vector<int64_t>{1, 3, 32, 16}));
    EXPECT_TRUE(near_rel(img, read_npy_tensor(dir + g["img"].get<std::string>()), 1e-4,
                         "human_rosinality32x16 " + g["img"].get<std::string>()));
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}
