// The sg2 CLI end to end on the CPU backend with small random model files: help, generate's
// options against the C++ API, and every documented error path (exit status + message).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  return o;
}

}  // namespace

TEST(Cli, HelpListsEveryCommandAndEachHasHelp) {
  CliResult r = run_cli({"--help"});
  ASSERT_EQ(r.status, 0) << describe(r);
  for (const char* cmd : {"generate", "mix", "interpolate", "compare"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
    CliResult h = run_cli({cmd, "--help"});
    EXPECT_EQ(h.status, 0) << cmd << describe(h);
    EXPECT_NE(h.out.find("Usage:"), std::string::npos) << cmd;
    EXPECT_TRUE(h.err.empty()) << h.err;
  }
  CliResult v = run_cli({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_NE(v.out.find(version()), std::string::npos);
}

TEST(Cli, UnknownCommandAndOptionAreUsageErrors) {
  CliResult r = run_cli({"frobnicate"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
  for (const char* cmd : {"generate", "mix", "interpolate", "compare"}) {
    CliResult u = run_cli({cmd, "--no-such-option"});
    EXPECT_EQ(u.status, 2) << cmd << describe(u);
    EXPECT_EQ(u.err.rfind(std::string("sg2 ") + cmd + ": error: ", 0), 0u) << u.err;
    EXPECT_NE(u.err.find("no-such-option"), std::string::npos) << u.err;
    EXPECT_TRUE(u.out.empty());
  }
  CliResult p = run_cli({"generate", "stray", "--seeds", "1"});
  EXPECT_EQ(p.status, 2) << describe(p);
  EXPECT_NE(p.err.find("unexpected argument 'stray'"), std::string::npos) << p.err;
}

TEST(Cli, GenerateMatchesTheApi) {
  const std::string dir = temp_dir("gen");
  const std::string model = write_tiny_model(dir);
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-2,42", "--trunc", "0.7",
                         "--format", "both", "--save-ws", "--grid", "3x2", "--outdir", dir + "/out"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_NE(r.out.find("4 images"), std::string::npos) << r.out;

  Generator gen(load_model_file(model), cpu());
  const std::vector<uint32_t> seeds = {0, 1, 2, 42};
  Truncation tr;
  tr.psi = 0.7f;
  Tensor ws = gen.map(z_from_seeds(seeds, 8), Tensor(), tr);
  Tensor img = gen.synthesize(ws);
  std::vector<Image8> ims;
  for (size_t i = 0; i < seeds.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/out/seed%04u", seeds[i]);
    const std::string stem = dir + name;
    const Image8 png = read_png(stem + ".png");
    const Image8 want = to_image8(img, int64_t(i));
    EXPECT_TRUE(png.pixels == want.pixels) << stem;
    EXPECT_EQ(png.channels, 3);
    EXPECT_TRUE(tensors_near(read_npy_tensor(stem + ".npy"), img.slice0(i, i + 1), 1e-5, stem));
    const Tensor w = read_npy_tensor(stem + "_ws.npy");
    EXPECT_EQ(w.shape(), (std::vector<int64_t>{1, 6, 8}));
    EXPECT_TRUE(tensors_near(w, ws.slice0(i, i + 1), 1e-6, stem));
    ims.push_back(want);
  }
  const Image8 grid = read_png(dir + "/out/grid.png");
  EXPECT_EQ(grid.width, 48);
  EXPECT_EQ(grid.height, 32);
  EXPECT_TRUE(grid.pixels == make_grid(ims, 3, 2).pixels);
}

// SG2_TRACE=1 (util/trace.h): one line per start-up step on stderr, times since the process started
// in order; without it, none.
TEST(Cli, TraceTimesTheStartOnlyWhenAsked) {
  const std::string dir = temp_dir("trace");
  const std::vector<std::string> args = {"generate", "--device", "cpu",      "--seeds",   "0",
                                         "--class",  "3",        "--outdir", dir + "/out"};
  CliResult r = run_cli(args, {"SG2_TRACE=1"});
  ASSERT_EQ(r.status, 0) << describe(r);
  std::istringstream lines(r.err);
  std::vector<std::string> steps;
  double last = 0;
  for (std::string line; std::getline(lines, line);) {
    double t = -1;
    char what[200] = {};
    if (std::sscanf(line.c_str(), "sg2 trace: %lf s  %199[^\n]", &t, what) != 2) continue;
    EXPECT_GE(t, last) << line;
    EXPECT_LT(t, 600.0) << line;
    last = t;
    steps.push_back(what);
  }
  ASSERT_EQ(steps.size(), 2u) << r.err;  // the CPU: only the checkpoint's read
  EXPECT_EQ(steps[0], "checkpoint: reading");
  EXPECT_EQ(steps[1], "checkpoint: read and checked");
  CliResult quiet = run_cli(args, {"SG2_TRACE=0"});
  ASSERT_EQ(quiet.status, 0) << describe(quiet);
  EXPECT_EQ(quiet.err.find("sg2 trace"), std::string::npos) << quiet.err;
}

TEST(Cli, GenerateIsBatchIndependentAndNoiseSeedReproducible) {
  const std::string dir = temp_dir("batch");
  const std::string model = write_tiny_model(dir);
  for (const char* mode : {"const", "random"}) {
    const std::string a = dir + "/a_" + mode, b = dir + "/b_" + mode;
    CliResult r1 = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-4", "--batch", "5",
                            "--noise-mode", mode, "--format", "npy", "--outdir", a});
    CliResult r2 = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "3", "--batch", "1",
                            "--noise-mode", mode, "--format", "npy", "--outdir", b});
    ASSERT_EQ(r1.status, 0) << describe(r1);
    ASSERT_EQ(r2.status, 0) << describe(r2);
    EXPECT_TRUE(tensors_near(read_npy_tensor(a + "/seed0003.npy"), read_npy_tensor(b + "/seed0003.npy"), 1e-5, mode));
  }
  // Another noise seed changes the random noise; the same one reproduces it.
  CliResult r3 = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "3", "--noise-mode", "random",
                          "--noise-seed", "9", "--format", "npy", "--outdir", dir + "/c"});
  CliResult r4 = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "3", "--noise-mode", "random",
                          "--noise-seed", "9", "--format", "npy", "--outdir", dir + "/d"});
  ASSERT_EQ(r3.status, 0) << describe(r3);
  ASSERT_EQ(r4.status, 0) << describe(r4);
  const Tensor c = read_npy_tensor(dir + "/c/seed0003.npy");
  EXPECT_EQ(c.vec(), read_npy_tensor(dir + "/d/seed0003.npy").vec());
  EXPECT_GT(diff_stats(c, read_npy_tensor(dir + "/b_random/seed0003.npy")).max_abs, 1e-3);
}

TEST(Cli, GenerateTfSeedModeRedrawsTheNoise) {
  const std::string dir = temp_dir("tf");
  const std::string model = write_tiny_model(dir);
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "6", "--seed-mode", "tf",
                         "--trunc", "0.5", "--format", "npy", "--outdir", dir + "/out"});
  ASSERT_EQ(r.status, 0) << describe(r);
  Generator gen(load_model_file(model), cpu());
  TfSeedInputs in = tf_seed_inputs(6, gen.config());
  NoiseSpec noise;
  noise.maps = {in.noise_maps};
  Truncation tr;
  tr.psi = 0.5f;
  Tensor want = gen.generate(in.z, Tensor(), tr, noise);
  EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/out/seed0006.npy"), want, 1e-6, "tf seed mode"));
}

TEST(Cli, GenerateFromWAndWPlus) {
  const std::string dir = temp_dir("ws");
  const std::string model = write_tiny_model(dir);
  Generator gen(load_model_file(model), cpu());
  Tensor wplus = gen.map(z_from_seeds({1, 2}, 8), Tensor());  // [2, 6, 8]
  Tensor w({2, 8});
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 8; ++i) w[n * 8 + i] = wplus[n * 48 + i];
  write_npy(dir + "/wplus.npy", wplus);
  write_npy(dir + "/w.npy", w);
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--ws", dir + "/wplus.npy", "--format",
                         "both", "--outdir", dir + "/p"});
  ASSERT_EQ(r.status, 0) << describe(r);
  Tensor img = gen.synthesize(wplus);
  EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/p/ws0001.npy"), img.slice0(1, 2), 1e-6, "W+ row 1"));
  EXPECT_TRUE(file_exists(dir + "/p/ws0000.png"));
  CliResult r2 = run_cli({"generate", "--network", model, "--device", "cpu", "--ws", dir + "/w.npy", "--format", "npy",
                          "--outdir", dir + "/w"});
  ASSERT_EQ(r2.status, 0) << describe(r2);
  Tensor bw({2, 6, 8});
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 6; ++l)
      for (int i = 0; i < 8; ++i) bw[(n * 6 + l) * 8 + i] = w[n * 8 + i];
  EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/w/ws0000.npy"), gen.synthesize(bw).slice0(0, 1), 1e-6, "W row 0"));

  // A shape that fits neither W nor W+ is a usage error naming both forms.
  write_npy(dir + "/bad.npy", Tensor({2, 5, 8}));
  CliResult bad = run_cli({"generate", "--network", model, "--ws", dir + "/bad.npy", "--outdir", dir + "/bad"});
  EXPECT_EQ(bad.status, 2) << describe(bad);
  EXPECT_NE(bad.err.find("does not fit this model: expected [N, 8] (W) or [N, 6, 8] (W+)"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(file_exists(dir + "/bad")) << "an output folder was left behind";
  CliResult tr =
      run_cli({"generate", "--network", model, "--ws", dir + "/w.npy", "--trunc", "0.5", "--outdir", dir + "/t"});
  EXPECT_EQ(tr.status, 2) << describe(tr);
  EXPECT_NE(tr.err.find("--trunc does not apply to --ws"), std::string::npos) << tr.err;
}

TEST(Cli, GrayscaleModelsWriteOneChannelPngs) {
  const std::string dir = temp_dir("gray");
  const std::string model = write_tiny_model(dir, 0, 1);
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "3", "--outdir", dir + "/o"});
  ASSERT_EQ(r.status, 0) << describe(r);
  const Image8 im = read_png(dir + "/o/seed0003.png");
  EXPECT_EQ(im.channels, 1);
  EXPECT_EQ(im.width, 16);
}

TEST(Cli, GenerateErrorPaths) {
  const std::string dir = temp_dir("errors");
  const std::string model = write_tiny_model(dir);
  const std::string cond = write_tiny_model(dir, 4, 3, "cond.safetensors");
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const std::string out = dir + "/out";
  const int w_dim = sg2::load_model_file(model).config.w_dim;
  sg2::write_npy(dir + "/nan_ws.npy", sg2::Tensor({1, w_dim}, std::nanf("")));
  sg2::write_npy(dir + "/empty_ws.npy", sg2::Tensor({0, w_dim}));
  ASSERT_EQ(::mkfifo((dir + "/fifo.pkl").c_str(), 0644), 0);
  const std::vector<Case> cases = {
      {{"--seeds", "4294967296"}, 2, "seed 4294967296 is out of range"},
      {{"--seeds", "-1"}, 2, "seeds"},
      {{"--seeds", "1,x"}, 2, "bad seed 'x'"},
      {{"--seeds", "5-3"}, 2, "the end is below the start"},
      {{}, 2, "--seeds LIST"},
      {{"--seeds", "1", "--ws", "x.npy"}, 2, "either --seeds or --ws"},
      {{"--seeds", "1", "--network", cond}, 2, "--class K is required, with K in [0, 3]"},
      {{"--seeds", "1", "--network", cond, "--class", "4"},
       2,
       "--class 4 is out of range: this model has classes 0..3"},
      {{"--seeds", "1", "--class", "0"}, 2, "this model is unconditional"},
      {{"--seeds", "1", "--class", "x"}, 2, "--class: 'x' is not an integer"},
      {{"--seeds", "1", "--trunc", "nan"}, 2, "--trunc"},
      {{"--seeds", "1", "--trunc-cutoff", "-2"}, 2, "trunc-cutoff"},
      {{"--seeds", "1", "--noise-mode", "loud"}, 2, "unknown noise mode 'loud'"},
      {{"--seeds", "1", "--noise-seed", "3"}, 2, "--noise-seed is only used with --noise-mode random"},
      {{"--seeds", "1", "--seed-mode", "jax"}, 2, "--seed-mode"},
      {{"--seeds", "1", "--seed-mode", "tf", "--noise-mode", "none"}, 2, "use --noise-mode const"},
      {{"--seeds", "1", "--format", "jpg"}, 2, "unknown format 'jpg'"},
      {{"--seeds", "0-4", "--grid", "2x2"}, 2, "--grid 2x2 has 4 cells for 5 images"},
      {{"--seeds", "1", "--grid", "2by2"}, 2, "COLSxROWS"},
      {{"--seeds", "1", "--batch", "0"}, 2, "--batch: 0 is out of range"},
      {{"--seeds", "1", "--device", "tpu"}, 2, "unknown device 'tpu'"},
      {{"--seeds", "1", "--precision", "fp8"}, 2, "unknown precision 'fp8'"},
      {{"--seeds", "1", "--device", "cpu", "--precision", "fp16"}, 2, "fp16"},
      {{"--ws", dir + "/missing.npy"}, 1, "missing.npy"},
      {{"--seeds", "1", "--network", dir + "/missing.pkl"}, 1, "missing.pkl"},
      {{"--seeds", "1", "--network", dir + "/fifo.pkl"}, 1, "fifo.pkl: not a regular file"},
      {{"--ws", dir + "/nan_ws.npy"}, 1, "nan_ws.npy: contains NaN or infinite values"},
      {{"--ws", dir + "/empty_ws.npy"}, 1, "empty_ws.npy: has no rows"},
      {{"--seeds", "1", "--grid", "4096x4096"}, 2, "a grid holds at most 65536 images"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"generate", "--outdir", out};
    bool has_network = false;
    for (const auto& a : c.args) has_network |= a == "--network";
    if (!has_network) args.insert(args.end(), {"--network", model});
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliResult r = run_cli(args);
    std::string label;
    for (const auto& a : c.args) label += a + " ";
    EXPECT_EQ(r.status, c.status) << label << describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << label << "\nwanted: " << c.message << "\ngot: " << r.err;
    EXPECT_EQ(r.err.rfind("sg2 generate: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(file_exists(out)) << label << ": the output folder was left behind";
  }
}

TEST(Cli, UnwritableOutdirFailsBeforeGenerating) {
  const std::string dir = temp_dir("unwritable");
  const std::string model = write_tiny_model(dir);
  { std::ofstream(dir + "/a_file") << "x"; }
  for (const std::string& out : {dir + "/a_file", dir + "/a_file/sub", std::string("/proc/sg2_cannot_write_here")}) {
    CliResult r = run_cli({"generate", "--network", model, "--seeds", "1", "--outdir", out});
    EXPECT_EQ(r.status, 1) << out << describe(r);
    EXPECT_NE(r.err.find("cannot write to output directory " + out), std::string::npos) << r.err;
  }
}

TEST(Cli, SeedsOutsideTheOfficialNamesKeepAllDigits) {
  const std::string dir = temp_dir("wide");
  const std::string model = write_tiny_model(dir);
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "4294967295,7", "--quiet",
                         "--outdir", dir + "/o"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(r.out.empty()) << "--quiet prints nothing: " << r.out;
  EXPECT_TRUE(file_exists(dir + "/o/seed4294967295.png"));
  EXPECT_TRUE(file_exists(dir + "/o/seed0007.png"));
}
