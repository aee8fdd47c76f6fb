// sg2 GPU tests: the whole generator on the CUDA backend — fp32 against the CPU reference backend
// on random models of every architecture (conditional, 1/3/4 image channels, odd channel counts,
// clamp on/off, every noise mode, truncation with cutoff), dumps, determinism, batch invariance,
// the reduced precisions, batch splitting when memory runs out, and error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "engine/backend.h"
#include "engine/cuda/conv.h"
#include "engine/cuda/options.h"
#include "gpu_test_util.h"
#include "kernels/tc_conv.h"
#include "sg2/bench.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"

using namespace sg2;
using namespace sg2::gputest;

namespace {

struct ModelCase {
  std::string label;
  int res, cbase, cmax, z_dim, c_dim, img_channels, map_layers;
  std::string arch;
  std::optional<float> clamp;
  int num_fp16_res;
};

const ModelCase kModels[] = {
    {"skip32", 32, 512, 64, 32, 0, 3, 2, "skip", std::nullopt, 2},
    {"orig16_gray_clamp", 16, 256, 32, 16, 0, 1, 3, "orig", 256.0f, 0},
    {"resnet32_cond_rgba_clamp", 32, 256, 48, 24, 5, 4, 2, "resnet", 0.5f, 2},
    {"skip64_cond", 64, 512, 32, 32, 4, 3, 8, "skip", 256.0f, 3},
    {"skip32_odd_channels", 32, 104, 13, 16, 0, 3, 1, "skip", 1.0f, 1},
    {"resnet16_zdim0", 16, 128, 16, 0, 3, 3, 2, "resnet", std::nullopt, 1},
};

Model make_model(const ModelCase& m, uint64_t seed = 5) {
  return make_random_model(make_config(m.res, m.cbase, m.cmax, m.z_dim, std::max(m.z_dim, 16), m.c_dim, m.img_channels,
                                       m.map_layers, test::architecture(m.arch), m.clamp, m.num_fp16_res),
                           seed);
}

GeneratorOptions opts(Device::Kind kind, Precision p = Precision::fp32, int max_batch = 0) {
  GeneratorOptions o;
  o.device = Device{kind, 0};
  o.precision = p;
  o.max_batch = max_batch;
  o.reference_cpu = kind == Device::Kind::cpu;  // the oracle: the reference ops of kernels/ref
  return o;
}

struct Inputs {
  Tensor z, c;
};

Inputs inputs(const ModelConfig& cfg, std::vector<uint32_t> seeds) {
  Inputs in;
  in.z = z_from_seeds(seeds, cfg.z_dim);
  if (cfg.c_dim > 0) {
    std::vector<int> classes;
    for (size_t i = 0; i < seeds.size(); ++i) classes.push_back(int(i) % cfg.c_dim);
    in.c = one_hot(classes, cfg.c_dim);
  }
  return in;
}

double psnr(const Tensor& a, const Tensor& b, double peak_to_peak) {
  double mse = 0;
  for (int64_t i = 0; i < a.numel(); ++i) mse += double(a[i] - b[i]) * double(a[i] - b[i]);
  mse /= double(std::max<int64_t>(a.numel(), 1));
  return mse == 0 ? 999.0 : 10.0 * std::log10(peak_to_peak * peak_to_peak / mse);
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), size_t(a.numel()) * sizeof(float)) == 0;
}

}  // namespace

TEST(GpuGenerator, Fp32MatchesCpuOnRandomModels) {
  SG2_REQUIRE_GPU();
  for (const ModelCase& mc : kModels) {
    Model model = make_model(mc);
    const ModelConfig cfg = model.config;
    Generator cpu(model, opts(Device::Kind::cpu));
    Generator gpu(model, opts(Device::Kind::cuda));
    const Inputs in = inputs(cfg, {1, 2, 3});
    for (const Truncation& tr : {Truncation{1.0f, std::nullopt}, Truncation{0.7f, 3}}) {
      const Tensor ws_cpu = cpu.map(in.z, in.c, tr), ws_gpu = gpu.map(in.z, in.c, tr);
      EXPECT_TRUE(near_rel(ws_gpu, ws_cpu, 2e-5, mc.label + " ws psi " + std::to_string(tr.psi)));
      for (NoiseMode mode : {NoiseMode::const_, NoiseMode::none, NoiseMode::random}) {
        NoiseSpec ns;
        ns.mode = mode;
        ns.seed = 77;
        if (mode == NoiseMode::random) ns.keys = {10, 11, 12};
        const Tensor a = cpu.synthesize(ws_cpu, ns), b = gpu.synthesize(ws_cpu, ns);
        EXPECT_TRUE(
            near_rel(b, a, 1e-4, mc.label + " img psi " + std::to_string(tr.psi) + " noise " + to_string(mode)));
      }
    }
    // per-sample noise maps (the TF run_generator convention)
    if (cfg.synthesis.use_noise) {
      NoiseSpec ns;
      for (uint32_t s : {4u, 5u, 6u}) ns.maps.push_back(tf_seed_inputs(s, cfg).noise_maps);
      const Tensor ws = cpu.map(in.z, in.c);
      EXPECT_TRUE(near_rel(gpu.synthesize(ws, ns), cpu.synthesize(ws, ns), 1e-4, mc.label + " noise maps"));
    }
  }
}

TEST(GpuGenerator, DumpsMatchCpuDumps) {
  SG2_REQUIRE_GPU();
  for (const ModelCase& mc : {kModels[0], kModels[2]}) {
    Model model = make_model(mc);
    const std::string dc = test::temp_dir("gpu_dump_cpu_" + mc.label), dg = test::temp_dir("gpu_dump_gpu_" + mc.label);
    GeneratorOptions oc = opts(Device::Kind::cpu), og = opts(Device::Kind::cuda);
    oc.dump_dir = dc;
    og.dump_dir = dg;
    Generator cpu(model, oc), gpu(model, og);
    const Inputs in = inputs(model.config, {8, 9});
    const Tensor a = cpu.generate(in.z, in.c), b = gpu.generate(in.z, in.c);
    EXPECT_TRUE(near_rel(b, a, 1e-4, mc.label + " dumped run"));
    std::vector<std::string> names;
    for (int i = 0; i < model.config.mapping.num_layers; ++i)
      names.push_back("mapping_fc" + std::to_string(i) + ".npy");
    for (int r : model.config.block_resolutions()) {
      names.push_back("b" + std::to_string(r) + "_x.npy");
      if (mc.arch == "skip" || r == model.config.img_resolution) names.push_back("b" + std::to_string(r) + "_img.npy");
    }
    for (const std::string& n : names) {
      const Tensor x = read_npy_tensor(dg + "/" + n), y = read_npy_tensor(dc + "/" + n);
      EXPECT_TRUE(near_rel(x, y, 1e-4, mc.label + " dump " + n));
    }
  }
}

TEST(GpuGenerator, DeterministicAndBatchInvariant) {
  SG2_REQUIRE_GPU();
  for (Precision p : {Precision::fp32, Precision::automatic, Precision::fp16, Precision::tf32}) {
    Model model = make_model(kModels[3]);
    const Inputs in = inputs(model.config, {1, 2, 3, 4, 5});
    Generator g5(model, opts(Device::Kind::cuda, p, 5));
    const Tensor a = g5.generate(in.z, in.c), b = g5.generate(in.z, in.c);
    EXPECT_TRUE(bit_identical(a, b)) << to_string(p) << ": two runs differ";
    Generator again(model, opts(Device::Kind::cuda, p, 5));
    EXPECT_TRUE(bit_identical(a, again.generate(in.z, in.c))) << to_string(p) << ": a fresh generator differs";
    if (p != Precision::fp32) continue;
    // batch sizes 1 and 2 (positions shift), and the batch reversed
    Generator g1(model, opts(Device::Kind::cuda, p, 1)), g2(model, opts(Device::Kind::cuda, p, 2));
    const Tensor c1 = g1.generate(in.z, in.c), c2 = g2.generate(in.z, in.c);
    EXPECT_TRUE(test::tensors_near(c1, a, 1e-5, "fp32 batch 1 vs 5"));
    EXPECT_TRUE(test::tensors_near(c2, a, 1e-5, "fp32 batch 2 vs 5"));
    std::cout << "  fp32 batch 1 vs 5 bit-identical: " << (bit_identical(c1, a) ? "yes" : "no")
              << ", batch 2 vs 5: " << (bit_identical(c2, a) ? "yes" : "no") << "\n";
    // the same samples in reverse order: every image moves to another batch position
    Inputs rev;
    rev.z = z_from_seeds({5, 4, 3, 2, 1}, model.config.z_dim);
    if (model.config.c_dim > 0) {
      std::vector<int> classes;
      for (int j = 0; j < 5; ++j) classes.push_back((4 - j) % model.config.c_dim);
      rev.c = one_hot(classes, model.config.c_dim);
    }
    const Tensor r = g5.generate(rev.z, rev.c);
    const int64_t per = a.numel() / 5;
    Tensor rr(a.shape());
    for (int i = 0; i < 5; ++i) std::copy(r.data() + (4 - i) * per, r.data() + (5 - i) * per, rr.data() + i * per);
    EXPECT_TRUE(test::tensors_near(rr, a, 1e-5, "fp32 reversed batch"));
    std::cout << "  fp32 reversed batch bit-identical: " << (bit_identical(rr, a) ? "yes" : "no") << "\n";
  }
}

TEST(GpuGenerator, ReducedPrecisionsStayClose) {
  SG2_REQUIRE_GPU();
  for (const ModelCase& mc : {kModels[3], kModels[0], kModels[4]}) {
    Model model = make_model(mc);
    const Inputs in = inputs(model.config, {1, 2, 3, 4});
    Generator ref(model, opts(Device::Kind::cuda, Precision::fp32));
    const Tensor r = ref.generate(in.z, in.c);
    const double range = 2.0 * scale_of(r);
    for (Precision p : {Precision::automatic, Precision::tf32, Precision::fp16}) {
      Generator g(model, opts(Device::Kind::cuda, p));
      const Tensor x = g.generate(in.z, in.c);
      const double db = psnr(x, r, range);
      std::cout << "  " << mc.label << " " << to_string(p) << ": PSNR " << db << " dB (peak-to-peak " << range
                << "), max|diff| " << test::diff_stats(x, r).max_abs << "\n";
      bool finite = true;
      for (float v : x.vec()) finite = finite && std::isfinite(v);
      EXPECT_TRUE(finite) << mc.label << " " << to_string(p);
      EXPECT_GT(db, 40.0) << mc.label << " " << to_string(p);
    }
  }
}

TEST(GpuGenerator, SplitsTheBatchWhenMemoryRunsOut) {
  SG2_REQUIRE_GPU();
  Model model = make_model(kModels[3]);
  const Inputs in = inputs(model.config, {1, 2, 3, 4, 5, 6, 7, 8});
  size_t need1 = 0, need2 = 0;
  Tensor full;
  {
    Generator g(model, opts(Device::Kind::cuda, Precision::fp32, 8));
    full = g.generate(in.z, in.c);
    const BenchResult r1 = bench_generate(g, 1, 0, 1, 0);
    const BenchResult r2 = bench_generate(g, 2, 0, 1, 0);
    need1 = r1.model_bytes + r1.batch_bytes;
    need2 = r2.model_bytes + r2.batch_bytes;
  }
  auto mib = [](double bytes) { return std::to_string(bytes / 1048576.0); };
  // room for about two images, not eight: the batch is split
  cuda::CudaOptions limited;
  limited.memory_limit_bytes = static_cast<size_t>(double(need2) * 1.3);
  {
    Generator g = cuda_generator(model, Precision::fp32, 8, limited);
    const Tensor split = g.generate(in.z, in.c);
    EXPECT_TRUE(test::tensors_near(split, full, 1e-5,
                                   "batch 8 split under a " + mib(double(limited.memory_limit_bytes)) + " MiB limit"));
  }
  // no room for one image: a clear out-of-memory error
  limited.memory_limit_bytes = static_cast<size_t>(double(need1) * 0.7);
  try {
    Generator g = cuda_generator(model, Precision::fp32, 8, limited);
    g.generate(in.z, in.c);
    ADD_FAILURE() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory) << e.what();
    std::cout << "  " << e.what() << "\n";
  }
}

// The kernels other GPUs take stay correct here: as on a GPU without wgmma and with 99 KiB of
// shared memory per block (sm_86 / sm_89), fp32 runs on the SIMT kernel, tf32 and fp16 on the
// mma.sync kernels, fp16 conv1 of 64 channels unfused; each precision against this GPU's own
// choice (fp32 also against the CPU reference), and batch-invariant.
TEST(GpuGenerator, FallbackKernelsOfOtherGpusStayCorrect) {
  SG2_REQUIRE_GPU();
  cuda::CudaOptions other;
  other.allow_wgmma = false;
  other.smem_per_block_limit = 99 * 1024;
  for (const ModelCase& mc : {kModels[3], kModels[2], kModels[4]}) {
    Model model = make_model(mc);
    const Inputs in = inputs(model.config, {1, 2, 3, 4});
    Generator cpu(model, opts(Device::Kind::cpu));
    const Tensor ref = cpu.generate(in.z, in.c);
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::automatic}) {
      Generator fast(model, opts(Device::Kind::cuda, p, 4));
      Generator slow = cuda_generator(model, p, 4, other);
      const Tensor a = fast.generate(in.z, in.c), b = slow.generate(in.z, in.c);
      const double range = 2.0 * scale_of(ref);
      std::cout << "  " << mc.label << " " << to_string(p) << " as on sm_86: PSNR vs this GPU's kernels "
                << psnr(b, a, range) << " dB\n";
      if (p == Precision::fp32)
        EXPECT_TRUE(near_rel(b, ref, 1e-4, mc.label + " fp32 fallback kernels vs CPU"));
      else
        EXPECT_GT(psnr(b, a, range), 40.0) << mc.label << " " << to_string(p);
      Generator one = cuda_generator(model, p, 1, other);
      EXPECT_TRUE(bit_identical(one.generate(in.z, in.c), b)) << mc.label << " " << to_string(p) << ": batch 1 vs 4";
    }
  }
}

TEST(GpuGenerator, BadDeviceIndexIsAClearError) {
  SG2_REQUIRE_GPU();
  Model model = make_model(kModels[0]);
  GeneratorOptions o;
  o.device = Device{Device::Kind::cuda, 99};
  try {
    Generator g(model, o);
    ADD_FAILURE() << "cuda:99 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    EXPECT_NE(std::string(e.what()).find("cuda:99"), std::string::npos) << e.what();
  }
}

// warm_up (sg2/generator.h) starts a GPU's context on another thread while the model is made;
// a generator opened afterwards gives the same images as one opened cold, and warming a GPU that
// does not exist, or the CPU, neither throws nor keeps a generator from reporting the problem.
TEST(GpuGenerator, WarmUpOnAnotherThreadThenTheSameImages) {
  SG2_REQUIRE_GPU();
  GeneratorOptions o;
  o.device = Device{Device::Kind::cuda, 0};
  const Inputs in = inputs(make_model(kModels[0]).config, {3, 4});
  Tensor cold;
  {
    Generator g(make_model(kModels[0]), o);
    cold = g.generate(in.z, in.c);
  }
  std::thread t([] {
    warm_up(Device{Device::Kind::cuda, 0});
    warm_up(Device{Device::Kind::cuda, 99});
    warm_up(Device{});
  });
  Model model = make_model(kModels[0]);
  t.join();
  Generator g(std::move(model), o);
  EXPECT_TRUE(bit_identical(g.generate(in.z, in.c), cold));
  o.device = Device{Device::Kind::cuda, 99};
  EXPECT_THROW(Generator(make_model(kModels[0]), o), Error);
}

// The library names the reason (no driver, no device) without CLI hints; sg2's CLI adds
// "use --device cpu" (CliErrors tests, test_new_user.cpp).
TEST(GpuGenerator, WithoutAGpuTheErrorNamesTheReason) {
  std::string why;
  if (cuda_available(&why)) GTEST_SKIP() << "a GPU is present";
  Model model = make_model(kModels[0]);
  GeneratorOptions o;
  o.device = Device{Device::Kind::cuda, 0};
  try {
    Generator g(model, o);
    ADD_FAILURE() << "a CUDA generator was created without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot run on the GPU: "), std::string::npos) << m;
    EXPECT_TRUE(m.find("no NVIDIA driver") != std::string::npos || m.find("no CUDA-capable GPU") != std::string::npos ||
                m.find("CUDA") != std::string::npos)
        << m;
    EXPECT_EQ(m.find("--device"), std::string::npos) << "a CLI hint in a library message: " << m;
  }
}

// fp32 runs its 3x3 convolutions on tensor cores in the 3xTF32 mode (kernels/tc_conv.h). On a
// model with 512-channel layers (4608 terms per output) its distance to the CPU reference is that
// of the FMA-only path (the SIMT kernel, as on a GPU with 99 KiB of shared memory per block), and
// far below plain TF32's.
TEST(GpuGenerator, Fp32OnTensorCoresIsAsAccurateAsFma) {
  SG2_REQUIRE_GPU();
  Model model =
      make_random_model(make_config(64, 16384, 512, 64, 64, 0, 3, 2, Architecture::skip, std::nullopt, 0), 21);
  Generator cpu(model, opts(Device::Kind::cpu));
  const Inputs in = inputs(model.config, {7, 8});
  const Tensor ws = cpu.map(in.z, in.c);
  const Tensor ref = cpu.synthesize(ws);
  auto max_diff = [](const Tensor& a, const Tensor& b) {
    double m = 0;
    for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
  };
  Generator tc_gen(model, opts(Device::Kind::cuda));
  const Tensor tc = tc_gen.synthesize(ws);
  // the 3xTF32 mode must really have run (where this GPU can run it)
  if (tf32x3_runs_here(512, 512)) {
    const BenchResult r = bench_generate(tc_gen, 2, 0, 1, 1);
    int n_tc = 0;
    for (const std::string& d : r.conv_algorithms) n_tc += d.find("3xtf32") != std::string::npos ? 1 : 0;
    EXPECT_GE(n_tc, 8) << "the 512-channel convolutions should run on the 3xTF32 kernel";
    if (gpu_caps().wgmma) {  // Hopper: on its wgmma implementation
      int n_wg = 0;
      for (const std::string& d : r.conv_algorithms) n_wg += d.find("wgmma") != std::string::npos ? 1 : 0;
      EXPECT_EQ(n_wg, n_tc) << "on sm_90 the 3xTF32 convolutions should use wgmma";
    }
  } else {
    std::cout << "  this GPU cannot run the 3xTF32 kernel: fp32 ran on the FMA path\n";
  }
  const Tensor tf32 = Generator(model, opts(Device::Kind::cuda, Precision::tf32)).synthesize(ws);
  cuda::CudaOptions simt;
  simt.smem_per_block_limit = 99 * 1024;  // no room for the 3xTF32 tiles: the SIMT kernel
  simt.allow_wgmma = false;               // Hopper: nor tc_tconv's 3xTF32 conv0 (its wgmma path ignores the limit)
  const Tensor fma = cuda_generator(model, Precision::fp32, 0, simt).synthesize(ws);
  const double e_tc = max_diff(tc, ref), e_fma = max_diff(fma, ref), e_tf32 = max_diff(tf32, ref);
  std::cout << "  fp32 vs CPU on a 512-channel model: 3xtf32 max|diff| " << e_tc << ", fma (simt) " << e_fma
            << ", tf32 " << e_tf32 << " (PSNR 3xtf32 " << psnr(tc, ref, 2.0) << " dB, fma " << psnr(fma, ref, 2.0)
            << " dB, tf32 " << psnr(tf32, ref, 2.0) << " dB)\n";
  EXPECT_LE(e_tc, 1e-4);
  EXPECT_LE(e_tc, std::max(3.0 * e_fma, 2e-6));
  EXPECT_LT(e_tc * 30.0, e_tf32);
}
