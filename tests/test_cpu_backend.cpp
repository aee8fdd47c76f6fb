// The oneDNN CPU backend (engine/cpu) against the reference ops (kernels/ref, the oracle):
// every architecture, noise mode, filter and intermediate; bit-identical output across batch
// sizes, positions in the batch and thread counts; the persistent thread pool; the work split;
// progress reports; the switch to the reference ops. (The official goldens run on this backend
// in test_goldens.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <unistd.h>

#include "engine/backend.h"
#include "engine/generator_access.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"
#include "test_util.h"

#if SG2_WITH_ONEDNN
#include "engine/cpu/layers.h"
#include "engine/cpu/thread_pool.h"
#include "util/cpu_threads.h"
#endif

using namespace sg2;

namespace {

GeneratorOptions cpu_options(int threads = 0, bool reference = false, int max_batch = 0) {
  GeneratorOptions o;
  o.device = Device{};
  o.precision = Precision::fp32;
  o.threads = threads;
  o.reference_cpu = reference;
  o.max_batch = max_batch;
  return o;
}

double peak(const Tensor& t) {
  double p = 0;
  for (float v : t.vec()) p = std::max(p, double(std::fabs(v)));
  return p;
}

/// oneDNN output vs the reference: max |diff| <= 2e-5 * max(1, max |ref|) (float32 sums in
/// another order; measured up to ~5e-6 on these models).
[[maybe_unused]] ::testing::AssertionResult close_to_reference(const Tensor& a, const Tensor& ref,
                                                               const std::string& label) {
  return test::tensors_near(a, ref, 2e-5 * std::max(1.0, peak(ref)), label);
}

std::string backend_name(const Model& m, const GeneratorOptions& o) {
  Generator g(m, o);
  return GeneratorAccess::backend(g).name();
}

[[maybe_unused]] bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), sizeof(float) * size_t(a.numel())) == 0;
}

struct ModelCase {
  std::string name;
  ModelConfig cfg;
};

[[maybe_unused]] std::vector<ModelCase> model_cases() {
  std::vector<ModelCase> v;
  v.push_back({"skip_rgb_clamp", make_config(32, 256, 64, 16, 16, 0, 3, 2, Architecture::skip, 256.0f, 2)});
  v.push_back({"orig_gray", make_config(16, 128, 32, 8, 8, 0, 1, 2, Architecture::orig, std::nullopt, 0)});
  v.push_back({"resnet_rgba_cond", make_config(32, 256, 32, 8, 16, 5, 4, 2, Architecture::resnet, 16.0f, 2)});
  ModelCase f3{"skip_filter3", make_config(16, 128, 32, 8, 8, 0, 3, 1, Architecture::skip, std::nullopt, 0)};
  f3.cfg.synthesis.resample_filter = {1, 2, 1};
  v.push_back(f3);
  ModelCase f6{"resnet_filter6_asym", make_config(16, 128, 32, 8, 8, 0, 3, 1, Architecture::resnet, 64.0f, 0)};
  f6.cfg.synthesis.resample_filter = {1, 3, 4, 2, 1, 1};
  v.push_back(f6);
  ModelCase f2{"skip_filter2", make_config(16, 128, 32, 8, 8, 0, 3, 1, Architecture::skip, std::nullopt, 0)};
  f2.cfg.synthesis.resample_filter = {1, 1};
  v.push_back(f2);
  return v;
}

}  // namespace

#if SG2_WITH_ONEDNN

TEST(CpuBackend, DefaultIsOnednnAndTheReferenceOpsAreOneSwitchAway) {
  const Model m = make_random_model(make_config(8, 64, 16, 4, 4, 0, 3, 1, Architecture::skip, std::nullopt, 0), 1);
  EXPECT_EQ(backend_name(m, cpu_options()), "cpu");
  EXPECT_EQ(backend_name(m, cpu_options(0, true)), "cpu (reference ops)");
  ::setenv("SG2_CPU_REFERENCE", "1", 1);
  EXPECT_EQ(backend_name(m, cpu_options()), "cpu (reference ops)");
  ::unsetenv("SG2_CPU_REFERENCE");
  GeneratorOptions bad = cpu_options();
  bad.precision = Precision::tf32;
  EXPECT_THROW(Generator(m, bad), Error);
  bad = cpu_options(-1);
  EXPECT_THROW(Generator(m, bad), Error);
}

TEST(CpuBackend, MatchesTheReferenceOpsLayerByLayer) {
  for (const ModelCase& mc : model_cases()) {
    SCOPED_TRACE(mc.name);
    const Model m = make_random_model(mc.cfg, 7);
    const std::string d_fast = test::temp_dir("cpu_fast_" + mc.name), d_ref = test::temp_dir("cpu_ref_" + mc.name);
    GeneratorOptions of = cpu_options(2), orf = cpu_options(2, true);
    of.dump_dir = d_fast;
    orf.dump_dir = d_ref;
    Generator fast(m, of), ref(m, orf);
    const Tensor z = z_from_seeds({3, 4, 5}, mc.cfg.z_dim);
    const Tensor c = one_hot({1, 4, 0}, mc.cfg.c_dim);
    Truncation t;
    t.psi = 0.7f;
    t.cutoff = 3;
    const Tensor ws_fast = fast.map(z, c, t), ws_ref = ref.map(z, c, t);
    EXPECT_TRUE(test::tensors_near(ws_fast, ws_ref, 2e-5 * std::max(1.0, peak(ws_ref)), mc.name + " ws"));
    for (const char* mode : {"const", "random", "none"}) {
      NoiseSpec noise;
      noise.mode = parse_noise_mode(mode);
      noise.seed = 9;
      noise.keys = {11, 12, 13};
      EXPECT_TRUE(close_to_reference(fast.synthesize(ws_ref, noise), ref.synthesize(ws_ref, noise),
                                     mc.name + " noise " + mode));
    }
    // every dumped intermediate of the last call's first batch: mapping layers, blocks' x and img
    fast.generate(z, c, t);
    ref.generate(z, c, t);
    int compared = 0;
    for (int i = 0; i < mc.cfg.mapping.num_layers; ++i, ++compared) {
      const std::string f = "/mapping_fc" + std::to_string(i) + ".npy";
      const Tensor b = read_npy_tensor(d_ref + f);
      EXPECT_TRUE(test::tensors_near(read_npy_tensor(d_fast + f), b, 2e-5 * std::max(1.0, peak(b)), mc.name + f));
    }
    for (int r = 4; r <= mc.cfg.img_resolution; r *= 2)
      for (const char* what : {"_x.npy", "_img.npy"}) {
        const std::string f = "/b" + std::to_string(r) + what;
        const bool has_ref = std::ifstream(d_ref + f).good();
        EXPECT_EQ(std::ifstream(d_fast + f).good(), has_ref) << f;
        if (!has_ref) continue;
        EXPECT_TRUE(close_to_reference(read_npy_tensor(d_fast + f), read_npy_tensor(d_ref + f), mc.name + f));
        ++compared;
      }
    EXPECT_GT(compared, mc.cfg.mapping.num_layers + 2);
  }
}

TEST(CpuBackend, GivenNoiseMapsMatchTheReference) {
  const ModelConfig cfg = make_config(16, 128, 32, 8, 8, 0, 3, 1, Architecture::skip, 256.0f, 0);
  const Model m = make_random_model(cfg, 3);
  NoiseSpec noise;
  for (uint32_t s : {1u, 2u}) noise.maps.push_back(tf_seed_inputs(s, cfg).noise_maps);
  Generator fast(m, cpu_options()), ref(m, cpu_options(0, true));
  const Tensor ws = ref.map(z_from_seeds({1, 2}, cfg.z_dim), Tensor());
  EXPECT_TRUE(close_to_reference(fast.synthesize(ws, noise), ref.synthesize(ws, noise), "given maps"));
}

// A model whose layers are cut into several bands and channel blocks (checked below), so the
// invariance is that of the real split, not of one unit per sample.
ModelConfig split_config() { return make_config(64, 4096, 256, 16, 32, 0, 3, 1, Architecture::skip, 256.0f, 0); }

TEST(CpuBackend, SplitCutsBigLayersIntoBandsAndChannelBlocks) {
  // b8.conv1 of split_config: 256 -> 256 channels at 8x8 (37.7 M multiply-adds per row block of 8)
  const cpu::Split a = cpu::choose_split(8, 8, 256, int64_t(256) * 256 * 9 * 8, false);
  EXPECT_EQ(a.bands, 1);  // 64 pixels: never below 256 per band
  EXPECT_EQ(a.oc_blocks, 1);
  // b32.conv1: 128 -> 128 at 32x32: 151 M -> 4 bands of 8 rows (256 pixels)
  const cpu::Split b = cpu::choose_split(32, 32, 128, int64_t(128) * 128 * 9 * 32, false);
  EXPECT_EQ(b.band_rows, 8);
  EXPECT_EQ(b.bands, 4);
  // 512 channels at 16x16 (604 M): whole image, blocks of 64 channels
  const cpu::Split c = cpu::choose_split(16, 16, 512, int64_t(512) * 512 * 9 * 16, false);
  EXPECT_EQ(c.bands, 1);
  EXPECT_EQ(c.oc_block, 64);
  EXPECT_EQ(c.oc_blocks, 8);
  // up-sampling layers: even band heights of at least 32 rows (b1024.conv0: 32 bands)
  const cpu::Split d = cpu::choose_split(1024, 1024, 32, int64_t(32) * 64 * 9 * 512 * 512 / 1024, true);
  EXPECT_EQ(d.band_rows, 32);
  EXPECT_EQ(d.bands, 32);
  const cpu::Split d2 = cpu::choose_split(16, 16, 512, int64_t(512) * 512 * 9 * 8 * 8 / 16, true);
  EXPECT_EQ(d2.bands, 1);  // whole image (16 rows)
  EXPECT_GT(d2.oc_blocks, 1);
  // the split is a function of the shape only
  const cpu::Split e = cpu::choose_split(32, 32, 128, int64_t(128) * 128 * 9 * 32, false);
  EXPECT_EQ(std::make_tuple(e.band_rows, e.oc_block), std::make_tuple(b.band_rows, b.oc_block));
  // split_config's b64.conv1 (64 -> 64 at 64x64) and b32.conv0 have several bands
  const cpu::Split f = cpu::choose_split(64, 64, 64, int64_t(64) * 64 * 9 * 64, false);
  EXPECT_GT(f.bands, 1);
}

TEST(CpuBackend, BitIdenticalAcrossBatchSizesPositionsAndThreadCounts) {
  const ModelConfig cfg = split_config();
  const Model m = make_random_model(cfg, 5);
  const std::vector<uint32_t> seeds = {10, 11, 12, 13, 14, 15, 16, 17};
  const Tensor ws_all = Generator(m, cpu_options(1)).map(z_from_seeds(seeds, cfg.z_dim), Tensor());
  for (const char* mode : {"const", "random"}) {
    SCOPED_TRACE(mode);
    auto noise_for = [&](const std::vector<size_t>& idx) {
      NoiseSpec n;
      n.mode = parse_noise_mode(mode);
      n.seed = 3;
      for (size_t i : idx) n.keys.push_back(seeds[i]);
      return n;
    };
    auto rows = [&](const std::vector<size_t>& idx) {
      std::vector<Tensor> parts;
      for (size_t i : idx) parts.push_back(ws_all.slice0(int64_t(i), int64_t(i) + 1));
      return concat0(parts);
    };
    // one image at a time, one thread: the baseline
    std::vector<Tensor> single;
    {
      Generator g(m, cpu_options(1, false, 1));
      for (size_t i = 0; i < seeds.size(); ++i) single.push_back(g.synthesize(rows({i}), noise_for({i})));
    }
    const std::vector<size_t> shuffled = {5, 2, 7, 0, 3, 6, 1, 4};
    for (int threads : {1, 2, 4}) {
      for (int batch : {1, 3, 8}) {
        Generator g(m, cpu_options(threads, false, batch));
        const Tensor out = g.synthesize(rows(shuffled), noise_for(shuffled));
        for (size_t k = 0; k < shuffled.size(); ++k)
          EXPECT_TRUE(same_bytes(out.slice0(int64_t(k), int64_t(k) + 1), single[shuffled[k]]))
              << "image " << shuffled[k] << " at position " << k << ", batch " << batch << ", threads " << threads;
      }
    }
  }
  // mapping too
  for (int threads : {1, 3}) {
    Generator g(m, cpu_options(threads, false, 3));
    EXPECT_TRUE(same_bytes(g.map(z_from_seeds(seeds, cfg.z_dim), Tensor()), ws_all)) << threads;
  }
}

TEST(CpuBackend, ThreadPoolIsPersistentRunsEveryUnitOnceAndRethrows) {
  std::mutex mu;
  std::set<std::thread::id> init_ids;
  cpu::ThreadPool pool(3, [&](int) {
    std::lock_guard<std::mutex> lock(mu);
    init_ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(pool.size(), 3);
  EXPECT_EQ(init_ids.size(), 3u);
  std::set<std::thread::id> run_ids;
  for (int rep = 0; rep < 50; ++rep) {
    std::vector<std::atomic<int>> hits(97);
    pool.run(97, [&](int64_t u, int w) {
      EXPECT_GE(w, 0);
      EXPECT_LT(w, 3);
      hits[size_t(u)]++;
      std::lock_guard<std::mutex> lock(mu);
      run_ids.insert(std::this_thread::get_id());
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  for (const auto& id : run_ids) EXPECT_TRUE(init_ids.count(id)) << "a unit ran on a thread the pool did not start";
  EXPECT_FALSE(run_ids.count(std::this_thread::get_id()));
  EXPECT_THROW(pool.run(10,
                        [](int64_t u, int) {
                          if (u == 4) fail(ErrorKind::internal, "unit 4");
                        }),
               Error);
  std::atomic<int> after{0};
  pool.run(5, [&](int64_t, int) { after++; });  // still usable
  EXPECT_EQ(after.load(), 5);
  EXPECT_THROW(cpu::ThreadPool(2,
                               [](int w) {
                                 if (w == 1) fail(ErrorKind::internal, "init");
                               }),
               Error);
  EXPECT_EQ(detail::cpu_thread_count(3), 3);
  EXPECT_GE(detail::cpu_thread_count(0), 1);
  EXPECT_THROW(detail::cpu_thread_count(-2), Error);
}

TEST(CpuBackend, ProgressRisesPerLayerToOneAcrossChunks) {
  const ModelConfig cfg = make_config(32, 256, 64, 8, 8, 0, 3, 1, Architecture::skip, std::nullopt, 0);
  const Model m = make_random_model(cfg, 2);
  Generator g(m, cpu_options(2, false, 2));
  std::vector<double> seen;
  g.set_progress([&](double f) { seen.push_back(f); });
  const Tensor ws = g.map(z_from_seeds({1, 2, 3, 4, 5}, cfg.z_dim), Tensor());
  g.synthesize(ws);
  // 3 chunks (2, 2, 1) x (4 blocks: 1 + 3 x 2 convs, 4 ToRGB) reports
  EXPECT_EQ(seen.size(), 3u * (7 + 4));
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  ASSERT_FALSE(seen.empty());
  EXPECT_GT(seen.front(), 0.0);
  EXPECT_NEAR(seen.back(), 1.0, 1e-12);
  EXPECT_NEAR(seen[10], 0.4, 1e-12);  // end of the first chunk: 2 of 5 images
  g.set_progress({});
  seen.clear();
  g.synthesize(ws);
  EXPECT_TRUE(seen.empty());
}

TEST(CpuBackend, ABatchTheMachineCannotHoldIsRefusedBeforeAllocating) {
  // paper256 needs about 44 MiB of activations per image; ask for more images than the RAM holds
  const Model m = make_random_model(named_config("paper256"), 1);
  const int64_t ram = int64_t(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
  const int64_t n = ram / (int64_t(40) << 20) + 1;
  Generator g(m, cpu_options(1, false, static_cast<int>(n)));
  try {
    g.synthesize(Tensor({n, m.config.num_ws, m.config.w_dim}));
    ADD_FAILURE() << "a batch of " << n << " images was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("smaller batch (max_batch)"), std::string::npos) << e.what();
  }
}

#else

TEST(CpuBackend, BuiltWithoutOnednnRunsTheReferenceOps) {
  const Model m = make_random_model(make_config(8, 64, 16, 4, 4, 0, 3, 1, Architecture::skip, std::nullopt, 0), 1);
  EXPECT_EQ(backend_name(m, cpu_options()), "cpu (reference ops)");
}

#endif
