// sg2 GPU tests: the CUDA backend in fp32 against the official goldens — every fixture case of
// tests/data/fixtures (img_s{seed}_psi{psi}_{const|none}.npy from z_s{seed}.npy and c_s{seed}.npy)
// and the bundled digits32 model (models/digits32/manifest.json), max |diff| <= 1e-4. Cases whose
// checkpoint cannot be loaded fail the test. The reduced
// precisions on digits32 are measured against sg2's own fp32 and printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "gpu_test_util.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/npy.h"

using namespace sg2;
using namespace sg2::gputest;
namespace fs = std::filesystem;

namespace {

Model load_or_throw(const std::string& path) { return sg2::load_model(path); }

GeneratorOptions gpu_opts(Precision p = Precision::fp32) {
  GeneratorOptions o;
  o.device = Device{Device::Kind::cuda, 0};
  o.precision = p;
  return o;
}

Tensor z_of(const std::string& path) {
  std::vector<int64_t> shape;
  const std::vector<double> z = read_npy_f64(path, &shape);
  Tensor t({1, static_cast<int64_t>(z.size())});
  for (size_t i = 0; i < z.size(); ++i) t.vec()[i] = static_cast<float>(z[i]);  // as the official mapping casts
  return t;
}

}  // namespace

namespace {

/// Compares every img_s{seed}_psi{psi}[_cut{k}]_{mode}.npy of a case folder; returns how many, or
/// -1 when the checkpoint cannot be loaded by this build.
double g_worst = 0;  // largest max|diff| over every golden compared, printed by the tests

int check_case(const fs::path& dir, const std::string& model_file, const std::string& name) {
  Model model;
  try {
    model = load_or_throw((dir / model_file).string());
  } catch (const Error& e) {
    ADD_FAILURE() << name << ": load_model failed: " << e.what();
    return -1;
  }
  Generator g(model, gpu_opts());
  const std::regex img_re(R"(img_s(\d+)_psi([0-9.]+)(_cut(\d+))?_(const|none)\.npy)");
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string fn = entry.path().filename().string();
    if (!std::regex_match(fn, m, img_re)) continue;
    const std::string seed = m[1], mode = m[5];
    if (!fs::exists(dir / ("z_s" + seed + ".npy"))) continue;
    const Tensor z = z_of((dir / ("z_s" + seed + ".npy")).string());
    Tensor c;
    if (fs::exists(dir / ("c_s" + seed + ".npy"))) {
      c = read_npy_tensor((dir / ("c_s" + seed + ".npy")).string());
      c = c.reshaped({1, c.numel()});
    }
    Truncation tr;
    tr.psi = std::stof(m[2]);
    if (m[4].matched) tr.cutoff = std::stoi(m[4]);
    NoiseSpec ns;
    ns.mode = parse_noise_mode(mode);
    const Tensor img = g.generate(z, c, tr, ns);
    const Tensor ref = read_npy_tensor(entry.path().string());
    EXPECT_TRUE(test::tensors_near(img, ref.reshaped(img.shape()), 1e-4, name + "/" + fn));
    g_worst = std::max(g_worst, test::diff_stats(img, ref.reshaped(img.shape())).max_abs);
    ++compared;
  }
  return compared;
}

}  // namespace

TEST(GpuGoldens, FixturesMatchInFp32) {
  SG2_REQUIRE_GPU();
  int compared = 0, skipped = 0;
  const fs::path root = test::source_path("tests/data/fixtures");
  if (fs::exists(root / "index.json")) {
    nlohmann::json index = nlohmann::json::parse(std::ifstream(root / "index.json"));
    for (auto& [name, info] : index["cases"].items()) {
      const int n = check_case(root / name, info["model_file"].get<std::string>(), name);
      if (n < 0)
        ++skipped;
      else
        compared += n;
    }
  }
  const fs::path extra = test::source_path("tests/data/official_extra");
  if (fs::exists(extra)) {
    for (const auto& d : fs::directory_iterator(extra)) {
      if (!fs::exists(d.path() / "manifest.json")) continue;
      nlohmann::json man = nlohmann::json::parse(std::ifstream(d.path() / "manifest.json"));
      const int n = check_case(d.path(), man.value("model_file", "network-snapshot.pkl"),
                               "official_extra/" + d.path().filename().string());
      if (n < 0)
        ++skipped;
      else
        compared += n;
    }
  }
  std::cout << "  compared " << compared << " golden images; " << skipped << " cases skipped; worst max|diff| "
            << g_worst << "\n";
  EXPECT_EQ(skipped, 0) << "every golden case must load";
  EXPECT_GT(compared, 100) << "golden images compared";
}

TEST(GpuGoldens, Digits32MatchesInFp32AndReducedPrecisionsAreClose) {
  SG2_REQUIRE_GPU();
  const fs::path dir = test::source_path("models/digits32");
  if (!fs::exists(dir / "manifest.json")) GTEST_SKIP() << "no digits32 at " << dir;
  nlohmann::json man = nlohmann::json::parse(std::ifstream(dir / "manifest.json"));
  Model model;
  try {
    model = load_or_throw((dir / man["model_file"].get<std::string>()).string());
  } catch (const Error& e) {
    FAIL() << "load_model cannot read digits32: " << e.what();
  }
  Generator g(model, gpu_opts());
  double worst = 0;
  for (const auto& gd : man["goldens"]) {
    const Tensor z = z_of((dir / gd["z"].get<std::string>()).string());
    const Tensor c = one_hot({gd["class_idx"].get<int>()}, model.config.c_dim);
    Truncation tr;
    tr.psi = gd["truncation_psi"].get<float>();
    NoiseSpec ns;
    ns.mode = parse_noise_mode(gd["noise_mode"].get<std::string>());
    const Tensor img = g.generate(z, c, tr, ns);
    const Tensor ref = read_npy_tensor((dir / gd["img"].get<std::string>()).string());
    EXPECT_TRUE(test::tensors_near(img, ref.reshaped(img.shape()), 1e-4, "digits32 " + gd["img"].get<std::string>()));
    worst = std::max(worst, test::diff_stats(img, ref.reshaped(img.shape())).max_abs);
  }
  std::cout << "  digits32 fp32 vs official goldens: worst max|diff| " << worst << " over " << man["goldens"].size()
            << " images\n";
  // 16 images, classes 0-9 cycled, against sg2's own fp32 (performance.md §2 bars: auto 75.2 dB)
  std::vector<uint32_t> seeds;
  std::vector<int> classes;
  for (int i = 0; i < 16; ++i) {
    seeds.push_back(uint32_t(i));
    classes.push_back(i % 10);
  }
  const Tensor z = z_from_seeds(seeds, model.config.z_dim), c = one_hot(classes, model.config.c_dim);
  const Tensor ref = g.generate(z, c);
  for (Precision p : {Precision::automatic, Precision::tf32, Precision::fp16}) {
    Generator gp(model, gpu_opts(p));
    const Tensor x = gp.generate(z, c);
    const test::DiffStats d = test::diff_stats(x, ref);
    std::cout << "  digits32 " << to_string(p) << " vs fp32: PSNR " << d.psnr << " dB, max|diff| " << d.max_abs << "\n";
    EXPECT_GT(d.psnr, p == Precision::automatic ? 75.2 : 60.0) << to_string(p) << " (official auto: 75.2 dB)";
  }
}
