// sg2 mix, interpolate and compare end to end on the CPU backend with small random model files,
// checked against the C++ API and the official scripts' conventions.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "test_cli_run.h"
#include "util/file_util.h"

using namespace sg2;
using namespace sg2::test;

namespace {

GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  return o;
}

/// style_mixing.py's all_w for one seed: mapping at psi 1, then w_avg + (w - w_avg) * psi.
Tensor official_mix_w(Generator& gen, uint32_t seed, float psi, const Tensor& c = Tensor()) {
  Tensor w = gen.map(z_from_seeds({seed}, gen.config().z_dim), c);
  const Tensor& avg = gen.model().at("mapping.w_avg");
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float a = avg[i % gen.config().w_dim];
    const float d = w[i] - a;
    const float m = d * psi;
    w[i] = a + m;
  }
  return w;
}

Image8 solid(int size, int channels, uint8_t v) {
  Image8 im;
  im.width = im.height = size;
  im.channels = channels;
  im.pixels.assign(size_t(size * size * channels), v);
  return im;
}

}  // namespace

TEST(CliMix, MatchesStyleMixingConventions) {
  const std::string dir = temp_dir("mix");
  const std::string model = write_tiny_model(dir);
  CliResult r = run_cli({"mix", "--network", model, "--device", "cpu", "--rows", "85,100", "--cols", "1,55,821",
                         "--styles", "0-2,4", "--trunc", "0.8", "--format", "both", "--outdir", dir + "/o"});
  ASSERT_EQ(r.status, 0) << describe(r);
  Generator gen(load_model_file(model), cpu());
  const Tensor w85 = official_mix_w(gen, 85, 0.8f), w55 = official_mix_w(gen, 55, 0.8f);
  Tensor mixed = w85;
  for (int k : {0, 1, 2, 4})
    for (int i = 0; i < 8; ++i) mixed[k * 8 + i] = w55[k * 8 + i];
  const Tensor img = gen.synthesize(mixed);
  EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/o/85-55.npy"), img, 1e-5, "85-55"));
  EXPECT_TRUE(read_png(dir + "/o/85-55.png").pixels == to_image8(img, 0).pixels);
  EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/o/55-55.npy"), gen.synthesize(w55), 1e-5, "55-55"));
  for (const char* f : {"85-85", "100-100", "1-1", "821-821", "100-821", "85-1"})
    EXPECT_TRUE(file_exists(dir + "/o/" + f + ".png")) << f;

  // grid.png: (3+1) x (2+1) cells, top-left black, first row the column seeds, first column the rows.
  const Image8 grid = read_png(dir + "/o/grid.png");
  ASSERT_EQ(grid.width, 4 * 16);
  ASSERT_EQ(grid.height, 3 * 16);
  std::vector<Image8> cells = {solid(16, 3, 0)};
  for (const char* f :
       {"1-1", "55-55", "821-821", "85-85", "85-1", "85-55", "85-821", "100-100", "100-1", "100-55", "100-821"})
    cells.push_back(read_png(dir + "/o/" + f + ".png"));
  EXPECT_TRUE(grid.pixels == make_grid(cells, 4, 3).pixels);
}

TEST(CliMix, ConditionalModelsTakeAClassAndErrorsAreClear) {
  const std::string dir = temp_dir("mixerr");
  const std::string cond = write_tiny_model(dir, 3, 3, "cond.safetensors");
  CliResult ok = run_cli({"mix", "--network", cond, "--device", "cpu", "--rows", "1", "--cols", "2", "--class", "2",
                          "--format", "npy", "--outdir", dir + "/ok"});
  ASSERT_EQ(ok.status, 0) << describe(ok);
  Generator gen(load_model_file(cond), cpu());
  const Tensor w2 = official_mix_w(gen, 2, 1.0f, one_hot({2}, 3));
  EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/ok/2-2.npy"), gen.synthesize(w2), 1e-5, "conditional 2-2"));

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--rows", "1", "--cols", "2"}, "--class K is required"},
           {{"--rows", "1", "--cols", "2", "--class", "3"}, "--class 3 is out of range"},
           {{"--rows", "1", "--class", "0"}, "--rows LIST and --cols LIST are required"},
           {{"--rows", "1", "--cols", "2", "--class", "0", "--styles", "0-6"}, "--styles: ws row 6 does not exist"},
           {{"--rows", "1", "--cols", "2", "--class", "0", "--styles", "3-1"}, "ends below its start"},
           {{"--rows", "1", "--cols", "99999999999", "--class", "0"}, "out of range"},
       }) {
    std::vector<std::string> args = {"mix", "--network", cond, "--device", "cpu", "--outdir", dir + "/bad"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 2) << c.message << describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(file_exists(dir + "/bad")) << c.message;
  }
}

TEST(CliInterpolate, FramesStartAndEndOnTheSeeds) {
  const std::string dir = temp_dir("interp");
  const std::string model = write_tiny_model(dir);
  CliResult g = run_cli(
      {"generate", "--network", model, "--device", "cpu", "--seeds", "3,8", "--trunc", "0.7", "--outdir", dir + "/g"});
  ASSERT_EQ(g.status, 0) << describe(g);
  CliResult r = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "3,8", "--frames", "4",
                         "--trunc", "0.7", "--no-video", "--outdir", dir + "/w"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_NE(r.out.find("5 frames"), std::string::npos) << r.out;
  // t = 0 reproduces the seed's image exactly; the last frame is the last seed.
  EXPECT_TRUE(read_png(dir + "/w/frame00000.png").pixels == read_png(dir + "/g/seed0003.png").pixels);
  EXPECT_TRUE(read_png(dir + "/w/frame00004.png").pixels == read_png(dir + "/g/seed0008.png").pixels);
  EXPECT_FALSE(file_exists(dir + "/w/frame00005.png"));
  // A middle frame is the lerp of the ws.
  Generator gen(load_model_file(model), cpu());
  Truncation tr;
  tr.psi = 0.7f;
  const Tensor ws = gen.map(z_from_seeds({3, 8}, 8), Tensor(), tr);
  Tensor mid({1, 6, 8});
  for (int i = 0; i < 48; ++i) mid[i] = ws[i] + 0.5f * (ws[48 + i] - ws[i]);
  EXPECT_TRUE(read_png(dir + "/w/frame00002.png").pixels == to_image8(gen.synthesize(mid), 0).pixels);

  // --loop: segments back to the first seed, no duplicate last frame; z space works too.
  CliResult l = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "3,8,9", "--frames", "2",
                         "--loop", "--space", "z", "--no-video", "--outdir", dir + "/l"});
  ASSERT_EQ(l.status, 0) << describe(l);
  EXPECT_TRUE(file_exists(dir + "/l/frame00005.png"));
  EXPECT_FALSE(file_exists(dir + "/l/frame00006.png"));
}

TEST(CliInterpolate, VideoWhenFfmpegIsOnPath) {
  const std::string dir = temp_dir("video");
  const std::string model = write_tiny_model(dir);
  // Without ffmpeg on PATH: the frames, and a note on stderr.
  CliResult n = run_cli(
      {"interpolate", "--network", model, "--device", "cpu", "--seeds", "1,2", "--frames", "2", "--outdir", dir + "/n"},
      {"PATH=/nonexistent"});
  ASSERT_EQ(n.status, 0) << describe(n);
  EXPECT_NE(n.err.find("ffmpeg is not on PATH"), std::string::npos) << n.err;
  EXPECT_TRUE(file_exists(dir + "/n/frame00002.png"));
  EXPECT_FALSE(file_exists(dir + "/n/interpolation.mp4"));
  if (!file_exists("/usr/bin/ffmpeg")) GTEST_SKIP() << "ffmpeg is not installed: the mp4 path is not exercised";
  CliResult v = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "1,2", "--frames", "3",
                         "--outdir", dir + "/v"});
  ASSERT_EQ(v.status, 0) << describe(v);
  EXPECT_GT(slurp(dir + "/v/interpolation.mp4").size(), 100u);
  EXPECT_FALSE(file_exists(dir + "/v/.interpolation.tmp.mp4"));
}

TEST(CliInterpolate, ErrorPaths) {
  const std::string dir = temp_dir("interr");
  const std::string model = write_tiny_model(dir);
  for (const auto& [args, msg] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--seeds", "1"},
            "at least two seeds to interpolate between (or one seed with --edit FILE --strengths A:B"},
           {{"--seeds", "1,2", "--frames", "0"}, "--frames: 0 is out of range"},
           {{"--seeds", "1,2", "--space", "q"}, "unknown space 'q'"},
           {{}, "--seeds LIST is required"}}) {
    std::vector<std::string> a = {"interpolate", "--network", model, "--outdir", dir + "/o"};
    a.insert(a.end(), args.begin(), args.end());
    CliResult r = run_cli(a);
    EXPECT_EQ(r.status, 2) << msg << describe(r);
    EXPECT_NE(r.err.find(msg), std::string::npos) << r.err;
  }
}

TEST(CliCompare, ImagesArraysAndFolders) {
  const std::string dir = temp_dir("compare");
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/a " + dir + "/b").c_str()), 0);
  Image8 x = solid(8, 3, 100), y = x;
  y.pixels[5] = 101;  // one value one level off
  write_png(dir + "/a/img.png", x);
  write_png(dir + "/b/img.png", y);
  write_png(dir + "/a/same.png", x);
  write_png(dir + "/b/same.png", x);
  Tensor t({1, 3, 4, 4}, 0.25f), u = t;
  u[3] = 0.2505f;
  write_npy(dir + "/a/img.npy", t);
  write_npy(dir + "/b/img.npy", u);

  CliResult same = run_cli({"compare", dir + "/a/same.png", dir + "/b/same.png"});
  EXPECT_EQ(same.status, 0) << describe(same);
  EXPECT_NE(same.out.find("PASS"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("PSNR inf dB"), std::string::npos) << same.out;

  CliResult off = run_cli({"compare", dir + "/a/img.png", dir + "/b/img.png"});
  EXPECT_EQ(off.status, 1) << describe(off);
  EXPECT_NE(off.out.find("FAIL"), std::string::npos);
  EXPECT_NE(off.out.find("max|diff| 1 levels"), std::string::npos) << off.out;
  EXPECT_NE(off.out.find("1 of 192 values differ"), std::string::npos) << off.out;
  EXPECT_EQ(run_cli({"compare", dir + "/a/img.png", dir + "/b/img.png", "--max-levels", "1"}).status, 0);
  EXPECT_EQ(run_cli({"compare", dir + "/a/img.png", dir + "/b/img.png", "--min-psnr", "40"}).status, 0);
  // Every given threshold must hold.
  EXPECT_EQ(
      run_cli({"compare", dir + "/a/img.png", dir + "/b/img.png", "--max-levels", "1", "--min-psnr", "100"}).status, 1);

  CliResult npy = run_cli({"compare", dir + "/a/img.npy", dir + "/b/img.npy"});
  EXPECT_EQ(npy.status, 1) << describe(npy);
  EXPECT_EQ(run_cli({"compare", dir + "/a/img.npy", dir + "/b/img.npy", "--max-abs", "1e-3"}).status, 0);
  EXPECT_EQ(run_cli({"compare", dir + "/a/img.npy", dir + "/b/img.npy", "--max-abs", "1e-4"}).status, 1);

  // Folders: pairs by name; a file on one side only fails.
  EXPECT_EQ(run_cli({"compare", dir + "/a", dir + "/b", "--max-levels", "1", "--max-abs", "1e-3"}).status, 0);
  write_png(dir + "/a/only_a.png", x);
  CliResult folders = run_cli({"compare", dir + "/a", dir + "/b", "--max-levels", "1", "--max-abs", "1e-3"});
  EXPECT_EQ(folders.status, 1) << describe(folders);
  EXPECT_NE(folders.out.find("FAIL only_a.png: missing in " + dir + "/b"), std::string::npos) << folders.out;
  EXPECT_NE(folders.out.find("PASS same.png"), std::string::npos) << folders.out;

  // Shape mismatch and mixed kinds are failures with a message.
  write_png(dir + "/small.png", solid(4, 3, 0));
  CliResult shape = run_cli({"compare", dir + "/a/same.png", dir + "/small.png"});
  EXPECT_EQ(shape.status, 1);
  EXPECT_NE(shape.out.find("shape mismatch: 8x8x3 vs 4x4x3"), std::string::npos) << shape.out;
  write_npy(dir + "/other.npy", Tensor({1, 3, 4, 5}));
  CliResult nshape = run_cli({"compare", dir + "/a/img.npy", dir + "/other.npy"});
  EXPECT_EQ(nshape.status, 1);
  EXPECT_NE(nshape.out.find("shape mismatch: [1, 3, 4, 4] vs [1, 3, 4, 5]"), std::string::npos) << nshape.out;
  CliResult mixed = run_cli({"compare", dir + "/a/img.png", dir + "/a/img.npy"});
  EXPECT_EQ(mixed.status, 1);
  EXPECT_NE(mixed.out.find("both must be .png or both .npy"), std::string::npos) << mixed.out;

  // Usage errors.
  CliResult one = run_cli({"compare", dir + "/a/img.png"});
  EXPECT_EQ(one.status, 2);
  EXPECT_NE(one.err.find("expected two paths A B"), std::string::npos) << one.err;
  CliResult missing = run_cli({"compare", dir + "/nope.png", dir + "/a/img.png"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("nope.png: no such file or folder"), std::string::npos) << missing.err;
  EXPECT_EQ(run_cli({"compare", dir + "/a", dir + "/a/img.png"}).status, 2);
  EXPECT_EQ(run_cli({"compare", dir + "/a/img.npy", dir + "/b/img.npy", "--max-abs", "-1"}).status, 2);
  EXPECT_EQ(run_cli({"compare", dir + "/a/img.png", dir + "/b/img.png", "--max-levels", "-1"}).status, 2);
}

// sg2 bench --end-to-end on the CPU backend: seeds to files, the stages named; the files are those of
// sg2 generate; refused options outside --end-to-end.
TEST(CliBench, EndToEndWritesTheFilesAndNamesTheStages) {
  const std::string dir = test::temp_dir("e2e");
  test::CliResult r =
      test::run_cli({"bench", "--end-to-end", "--network", test::source_path("models/digits32/digits32.pkl"),
                     "--device", "cpu", "--seeds", "0-9", "--jobs", "2", "--outdir", dir + "/b"});
  ASSERT_EQ(r.status, 0) << test::describe(r);
  EXPECT_NE(r.out.find("10 images (seeds 0-9) on cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("img/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("encode"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the limit is"), std::string::npos) << r.out;
  ASSERT_EQ(
      test::run_cli({"generate", "--device", "cpu", "--seeds", "0-9", "--class", "0", "--outdir", dir + "/g", "-q"})
          .status,
      0);
  for (int s = 0; s < 10; ++s) {
    const std::string f = "/seed000" + std::to_string(s) + ".png";
    EXPECT_EQ(test::slurp(dir + "/b" + f), test::slurp(dir + "/g" + f)) << f;
  }
  r = test::run_cli({"bench", "--config", "paper256", "--device", "cpu", "--seeds", "0-3"});
  EXPECT_EQ(r.status, 2) << test::describe(r);
  EXPECT_NE(r.err.find("--seeds is an option of --end-to-end"), std::string::npos) << r.err;
}

// Issue 23.12: without --outdir the files go to a folder created new and private under $TMPDIR
// (mkdtemp); what was there before (an old run's folder under the PID-style name, a link) is never
// touched, and the run leaves nothing behind.
TEST(CliBench, EndToEndTemporaryFolderIsNewAndPrivate) {
  const std::string tmp = test::temp_dir("e2e_tmp");
  const std::string victim = test::temp_dir("e2e_victim");
  sg2::detail::write_file_atomic(victim + "/keep.txt", "keep", 4);
  ASSERT_EQ(::symlink(victim.c_str(), (tmp + "/sg2-bench-e2e-" + std::to_string(::getpid() + 1)).c_str()), 0);
  ::mkdir((tmp + "/sg2-bench-e2e-old").c_str(), 0755);
  sg2::detail::write_file_atomic(tmp + "/sg2-bench-e2e-old/seed0000.png", "old", 3);
  const test::CliResult r =
      test::run_cli({"bench", "--end-to-end", "--network", test::source_path("models/digits32/digits32.pkl"),
                     "--device", "cpu", "--seeds", "0-3", "--jobs", "2"},
                    {"TMPDIR=" + tmp});
  ASSERT_EQ(r.status, 0) << test::describe(r);
  std::vector<std::string> names;
  if (DIR* d = ::opendir(tmp.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    ::closedir(d);
  }
  EXPECT_EQ(names.size(), 2u) << "the run left something in TMPDIR";
  EXPECT_EQ(test::slurp(victim + "/keep.txt"), "keep");
  EXPECT_EQ(test::slurp(tmp + "/sg2-bench-e2e-old/seed0000.png"), "old");
}
