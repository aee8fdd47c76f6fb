// The CLI against the official outputs: `sg2 generate` and `sg2 mix` on the fixtures' checkpoints
// and the bundled digits32 model, on the CPU backend, compared with the official PNGs (identical,
// or at most 1 level apart on at most 0.2 % of the values) and the raw float goldens (max |diff|
// <= 1e-4 on the [-1, 1] scale; fixtures/README.md). `sg2 compare` is exercised on the same files.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sg2/image.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;
using nlohmann::json;

namespace {

constexpr double kImgTol = 1e-4;    // float images vs the official float32 output
constexpr double kPngFrac = 0.002;  // PNG: 1 level on at most 0.2 % of the values

std::string psi_text(double psi) {
  std::ostringstream os;
  os << psi;
  return os.str();
}

/// The project's tolerance as one sg2 compare line, for a folder of PNGs and float .npy files.
const std::vector<std::string> kPolicy = {"--max-levels", "1", "--max-differing", "0.2%", "--max-abs", "1e-4"};
const std::string kPolicyRule =
    "(PNGs and uint8 arrays: max|diff| <= 1 level and at most 0.2 % of the values differ; float arrays: max|diff| <= "
    "0.0001)";

/// Copies `from` to `to` (a golden under the name sg2 writes), for a folder compare.
void copy_as(const std::string& from, const std::string& to) {
  const std::string bytes = slurp(from);
  ASSERT_FALSE(bytes.empty()) << from;
  std::ofstream(to, std::ios::binary) << bytes;
}

/// sg2 compare OUT GOLD with the project's tolerance in one call: every file of both passes.
void compare_folders(const std::string& out, const std::string& gold, size_t files, const std::string& label) {
  std::vector<std::string> args = {"compare", out, gold};
  args.insert(args.end(), kPolicy.begin(), kPolicy.end());
  CliResult r = run_cli(args);
  EXPECT_EQ(r.status, 0) << label << describe(r);
  const std::string n = std::to_string(files);
  EXPECT_NE(r.out.find("sg2 compare: " + n + " of " + n + " files match " + kPolicyRule + "\n"), std::string::npos)
      << label << ": " << r.out;
}

/// Checks one output (stem.png / stem.npy in dir) against an official golden PNG and .npy.
void check_output(const std::string& dir, const std::string& stem, const std::string& golden_png,
                  const std::string& golden_img, const std::string& label) {
  EXPECT_TRUE(images_near(read_png(dir + "/" + stem + ".png"), read_png(golden_png), kPngFrac, label + " png"));
  EXPECT_TRUE(
      tensors_near(read_npy_tensor(dir + "/" + stem + ".npy"), read_npy_tensor(golden_img), kImgTol, label + " img"));
}

class FixtureGoldens : public ::testing::TestWithParam<std::string> {};
class FixtureMixGoldens : public ::testing::TestWithParam<std::string> {};

}  // namespace

// generate: every image golden of a case, one CLI run per (psi, noise mode, class) with all its seeds.
TEST_P(FixtureGoldens, GenerateMatchesTheOfficialImages) {
  const std::string c = GetParam();
  const json m = json::parse(slurp(fixture(c + "/manifest.json")));
  const std::string pkl = fixture(c + "/" + m["model_file"].get<std::string>());
  std::map<std::string, std::vector<json>> groups;
  for (const json& g : m["goldens"]) {
    if (g["type"] != "image") continue;
    ASSERT_TRUE(g["truncation_cutoff"].is_null());
    std::string key = psi_text(g["psi"].get<double>()) + " " + g["noise_mode"].get<std::string>() + " " +
                      (g["class_idx"].is_null() ? std::string("-") : std::to_string(g["class_idx"].get<int>()));
    groups[key].push_back(g);
  }
  ASSERT_FALSE(groups.empty());
  int n = 0;
  for (const auto& [key, goldens] : groups) {
    const std::string out = temp_dir("g" + std::to_string(n++));
    std::string seeds;
    for (const json& g : goldens) seeds += (seeds.empty() ? "" : ",") + std::to_string(g["seed"].get<int>());
    std::vector<std::string> args = {"generate",
                                     "--network",
                                     pkl,
                                     "--device",
                                     "cpu",
                                     "--seeds",
                                     seeds,
                                     "--trunc",
                                     psi_text(goldens[0]["psi"].get<double>()),
                                     "--noise-mode",
                                     goldens[0]["noise_mode"].get<std::string>(),
                                     "--format",
                                     "both",
                                     "--outdir",
                                     out};
    if (!goldens[0]["class_idx"].is_null())
      args.insert(args.end(), {"--class", std::to_string(goldens[0]["class_idx"].get<int>())});
    CliResult r = run_cli(args);
    ASSERT_EQ(r.status, 0) << c << " " << key << describe(r);
    const std::string gold = temp_dir("gold" + std::to_string(n));
    for (const json& g : goldens) {
      char stem[32];
      std::snprintf(stem, sizeof stem, "seed%04d", g["seed"].get<int>());
      check_output(out, stem, fixture(c + "/" + g["png"].get<std::string>()),
                   fixture(c + "/" + g["img"].get<std::string>()), c + " " + g["png"].get<std::string>());
      copy_as(fixture(c + "/" + g["png"].get<std::string>()), gold + "/" + stem + ".png");
      copy_as(fixture(c + "/" + g["img"].get<std::string>()), gold + "/" + stem + ".npy");
    }
    // The same check as sg2 compare's one line on the two folders (PNGs and float arrays together).
    compare_folders(out, gold, 2 * goldens.size(), c + " " + key);
  }
}

// mix: style_mixing.py --rows R --cols C (styles 0-6, psi 1, noise const).
TEST_P(FixtureMixGoldens, MixMatchesTheOfficialImages) {
  const std::string c = GetParam();
  const json m = json::parse(slurp(fixture(c + "/manifest.json")));
  ASSERT_TRUE(m.contains("style_mixing")) << c;
  const json& sm = m["style_mixing"];
  const std::string row = std::to_string(sm["row_seed"].get<int>()), col = std::to_string(sm["col_seed"].get<int>());
  std::string styles;
  for (const json& k : sm["col_styles"]) styles += (styles.empty() ? "" : ",") + std::to_string(k.get<int>());
  const std::string out = temp_dir("mix");
  CliResult r = run_cli({"mix", "--network", fixture(c + "/" + m["model_file"].get<std::string>()), "--device", "cpu",
                         "--rows", row, "--cols", col, "--styles", styles, "--trunc", psi_text(sm["psi"].get<double>()),
                         "--noise-mode", sm["noise_mode"].get<std::string>(), "--format", "both", "--outdir", out});
  ASSERT_EQ(r.status, 0) << describe(r);
  check_output(out, row + "-" + col, fixture(c + "/" + sm["png"].get<std::string>()),
               fixture(c + "/" + sm["img"].get<std::string>()), c + " mix " + row + "-" + col);
  EXPECT_TRUE(tensors_near(read_npy_tensor(out + "/" + row + "-" + row + ".npy"),
                           read_npy_tensor(fixture(c + "/mix_diag_s" + row + "_img.npy")), kImgTol,
                           c + " diag " + row));
  EXPECT_TRUE(tensors_near(read_npy_tensor(out + "/" + col + "-" + col + ".npy"),
                           read_npy_tensor(fixture(c + "/mix_diag_s" + col + "_img.npy")), kImgTol,
                           c + " diag " + col));
  for (const std::string& d : {row + "-" + row, col + "-" + col}) {
    const std::string official = fixture(c + "/mix_" + d + ".png");
    if (file_exists(official)) {
      EXPECT_TRUE(images_near(read_png(out + "/" + d + ".png"), read_png(official), kPngFrac, c + " " + d));
    }
  }
  const Image8 grid = read_png(out + "/grid.png");
  EXPECT_EQ(grid.width, 2 * m["config"]["img_resolution"].get<int>());
  EXPECT_EQ(grid.height, grid.width);
}

INSTANTIATE_TEST_SUITE_P(Cases, FixtureGoldens,
                         ::testing::Values("tiny32", "cond64", "gray32", "tf_sg2_32", "fp16clamp64", "sg3_sg2_32"));
INSTANTIATE_TEST_SUITE_P(Cases, FixtureMixGoldens,
                         ::testing::Values("tiny32", "tf_sg2_32", "fp16clamp64", "sg3_sg2_32"));

// TF run_generator convention: --seed-mode tf --trunc 0.5 on the TF pickle.
TEST(CliGoldens, TfSeedModeMatchesRunGenerator) {
  const std::string out = temp_dir("tfrun");
  CliResult r = run_cli({"generate", "--network", fixture("tf_sg2_32/network-snapshot.pkl"), "--device", "cpu",
                         "--seeds", "0,6", "--seed-mode", "tf", "--trunc", "0.5", "--format", "both", "--outdir", out});
  ASSERT_EQ(r.status, 0) << describe(r);
  check_output(out, "seed0000", fixture("tf_sg2_32/tfrun_seed0000_psi0.5.png"),
               fixture("tf_sg2_32/tfrun_s0_psi0.5_img.npy"), "tfrun 0");
  check_output(out, "seed0006", fixture("tf_sg2_32/tfrun_seed0006_psi0.5.png"),
               fixture("tf_sg2_32/tfrun_s6_psi0.5_img.npy"), "tfrun 6");
}

// The bundled model, found with nothing else: every digits32 golden (seeds 0-9, class = seed,
// psi 1 and 0.7), and sg2 compare on the results: file by file, and the folders in one call.
TEST(CliGoldens, BundledDigits32MatchesTheOfficialImages) {
  for (const char* psi : {"1", "0.7"}) {
    const std::string mine = temp_dir(std::string("mine") + psi), gold = temp_dir(std::string("gold") + psi);
    for (int s = 0; s <= 9; ++s) {
      const std::string out = temp_dir(std::string("d") + psi + "_" + std::to_string(s));
      CliResult r = run_cli({"generate", "--device", "cpu", "--seeds", std::to_string(s), "--class", std::to_string(s),
                             "--trunc", psi, "--format", "both", "--outdir", out},
                            {"SG2_MODEL="});
      ASSERT_EQ(r.status, 0) << describe(r);
      char stem[64];
      std::snprintf(stem, sizeof stem, "seed%04d_class%d_psi%s", s, s, psi);
      const std::string png = digits32_golden(std::string(stem) + ".png");
      const std::string img =
          digits32_golden("img_s" + std::to_string(s) + "_c" + std::to_string(s) + "_psi" + psi + "_const.npy");
      char name[16];
      std::snprintf(name, sizeof name, "seed%04d", s);
      check_output(out, name, png, img, stem);
      CliResult cmp = run_cli({"compare", out + "/" + name + ".npy", img, "--max-abs", "1e-4"});
      EXPECT_EQ(cmp.status, 0) << describe(cmp);
      CliResult cmp_png =
          run_cli({"compare", out + "/" + name + ".png", png, "--max-levels", "1", "--max-differing", "0.2%"});
      EXPECT_EQ(cmp_png.status, 0) << describe(cmp_png);
      for (const char* ext : {".png", ".npy"}) copy_as(out + "/" + name + ext, mine + "/" + name + ext);
      copy_as(png, gold + "/" + name + ".png");
      copy_as(img, gold + "/" + name + ".npy");
    }
    compare_folders(mine, gold, 20, std::string("digits32 psi ") + psi);
  }
}

// The README's first command (scripts/demo.sh).
TEST(CliGoldens, DemoCommandWritesTenSixesAndAGrid) {
  const std::string out = temp_dir("demo");
  CliResult r =
      run_cli({"generate", "--seeds", "0-9", "--class", "6", "--grid", "10x1", "--device", "cpu", "--outdir", out},
              {"SG2_MODEL="});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_NE(r.out.find("10 images"), std::string::npos) << r.out;
  const Image8 grid = read_png(out + "/grid.png");
  EXPECT_EQ(grid.width, 320);
  EXPECT_EQ(grid.height, 32);
  // seed 6 with class 6 is an official golden.
  EXPECT_TRUE(images_near(read_png(out + "/seed0006.png"), read_png(digits32_golden("seed0006_class6_psi1.png")),
                          kPngFrac, "demo seed 6"));
  // the demo's command, as scripts/demo.sh runs it
  const std::string demo = slurp(source_path("scripts/demo.sh"));
  EXPECT_NE(demo.find("generate --seeds 0-9 --class 6 --grid 10x1 --outdir out"), std::string::npos);
}
