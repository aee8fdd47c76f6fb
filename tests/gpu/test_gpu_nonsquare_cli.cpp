// Non-square networks through the CLI on the CUDA backend (issue 25 item 4): `sg2 generate --device
// cuda` on StyleGAN-Human's pickles (tests/data/nonsquare) writes PNGs, npy, a grid, a dataset zip and
// --size images at the network's aspect ratio, and `sg2 interpolate --no-video` its frames; each
// against the same command on the CPU. The float images (--format npy, --precision fp32) within the
// GPU non-square tests' tolerance (1e-4 of the image's scale, tests/gpu/test_gpu_nonsquare.cpp); the
// PNGs, their uint8 conversion, within 1 level on at most 2 % of the values. Within the GPU run, what
// is the same data is checked byte for byte: the grid's cells are its PNGs, the zip's entries are the
// folder's files, and --size is the box filter of its full-size PNGs (docs/bulk.md's integer formula).
//
// The CLI is the sg2 binary of this build (SG2_CLI, else ../sg2 beside this test binary, where
// CMake puts it). Every test skips without a GPU.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {
std::string gpu_cli_path();
}  // namespace

#ifndef SG2_CLI
#define SG2_CLI gpu_cli_path()
#endif

#include "gpu_test_util.h"
#include "readers/zip_reader.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

/// The sg2 CLI of this build: $SG2_CLI, else ../sg2 from this test binary (build/tests/sg2_gpu_tests).
std::string gpu_cli_path() {
  if (const char* e = std::getenv("SG2_CLI"); e != nullptr && *e != '\0') return e;
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "sg2";
  const std::string self(buf, size_t(n));
  return self.substr(0, self.rfind('/')) + "/../sg2";
}

const std::string kSkip = "tests/data/nonsquare/human_skip32x16/network-snapshot.pkl";     // 16 wide, 32 high
const std::string kResnet = "tests/data/nonsquare/human_resnet16x8/network-snapshot.pkl";  // 8 wide, 16 high

std::pair<uint32_t, uint32_t> png_file_size(const std::string& path) { return png_size(slurp(path)); }

/// The cell (col, row) of a grid of w x h images.
Image8 cell(const Image8& grid, int col, int row, int w, int h) {
  Image8 o;
  o.width = w;
  o.height = h;
  o.channels = grid.channels;
  const size_t line = size_t(w) * grid.channels;
  for (int y = 0; y < h; ++y) {
    const size_t from = (size_t(row * h + y) * grid.width + size_t(col) * w) * grid.channels;
    o.pixels.insert(o.pixels.end(), grid.pixels.begin() + long(from), grid.pixels.begin() + long(from + line));
  }
  return o;
}

/// Runs `sg2 args...` on `device` (fp32, so that the float images compare at the GPU tests'
/// tolerance), asserting success.
CliResult run_on(const std::string& device, std::vector<std::string> args) {
  args.insert(args.end(), {"--device", device, "--precision", "fp32"});
  return run_cli(args);
}

constexpr double kPngFrac = 0.02;  // PNGs: 1 level on at most 2 % of the values

}  // namespace

TEST(GpuNonSquareCli, GenerateMatchesTheCpu) {
  SG2_REQUIRE_GPU();
  ASSERT_TRUE(file_exists(SG2_CLI)) << "no sg2 CLI at " << SG2_CLI << " (build the sg2_cli target, or set SG2_CLI)";
  const std::string dir = temp_dir("gpu_ns_cli_generate");
  struct Case {
    std::string label, pkl;
    int w, h;
  };
  for (const Case& c : {Case{"skip32x16", kSkip, 16, 32}, Case{"resnet16x8", kResnet, 8, 16}}) {
    const std::string pkl = source_path(c.pkl);
    const std::string wxh = std::to_string(c.w) + "x" + std::to_string(c.h);
    for (const std::string dev : {"cpu", "cuda"}) {
      const std::string out = dir + "/" + c.label + "_" + dev;
      CliResult r = run_on(dev, {"generate", "--network", pkl, "--seeds", "0-3", "--trunc", "0.7", "--outdir", out});
      ASSERT_EQ(r.status, 0) << describe(r);
      EXPECT_NE(r.out.find("(" + wxh + ", 3 channels, " + dev), std::string::npos) << r.out;
      r = run_on(dev, {"generate", "--network", pkl, "--seeds", "0-3", "--trunc", "0.7", "--format", "npy", "--outdir",
                       out + "_npy", "-q"});
      ASSERT_EQ(r.status, 0) << describe(r);
      // --noise-mode none and random take the same paths through the CLI
      r = run_on(dev, {"generate", "--network", pkl, "--seeds", "0-1", "--noise-mode", "random", "--noise-seed", "3",
                       "--format", "npy", "--outdir", out + "_random", "-q"});
      ASSERT_EQ(r.status, 0) << describe(r);
    }
    for (int s = 0; s < 4; ++s) {
      char name[32];
      std::snprintf(name, sizeof name, "/seed%04d", s);
      const std::string label = c.label + name;
      const std::string cpu = dir + "/" + c.label + "_cpu", gpu = dir + "/" + c.label + "_cuda";
      EXPECT_EQ(png_file_size(gpu + name + ".png"), std::make_pair(uint32_t(c.w), uint32_t(c.h))) << label;
      EXPECT_TRUE(images_near(read_png(gpu + name + ".png"), read_png(cpu + name + ".png"), kPngFrac, label));
      const Tensor want = read_npy_tensor(cpu + "_npy" + name + ".npy");
      const Tensor got = read_npy_tensor(gpu + "_npy" + name + ".npy");
      ASSERT_EQ(got.shape(), (std::vector<int64_t>{1, 3, c.h, c.w})) << label;
      EXPECT_TRUE(gputest::near_rel(got, want, 1e-4, label + " npy"));
      if (s < 2)
        EXPECT_TRUE(gputest::near_rel(read_npy_tensor(gpu + "_random" + name + ".npy"),
                                      read_npy_tensor(cpu + "_random" + name + ".npy"), 1e-4, label + " noise random"));
    }
  }
}

TEST(GpuNonSquareCli, GridZipSizeAndFramesOnTheGpu) {
  SG2_REQUIRE_GPU();
  ASSERT_TRUE(file_exists(SG2_CLI)) << "no sg2 CLI at " << SG2_CLI << " (build the sg2_cli target, or set SG2_CLI)";
  const std::string dir = temp_dir("gpu_ns_cli_outputs");
  const std::string pkl = source_path(kSkip);  // 16 wide, 32 high
  const int W = 16, H = 32;
  for (const std::string dev : {"cpu", "cuda"}) {
    const std::string out = dir + "/" + dev;
    // PNGs and a 3x2 grid of 6 images
    CliResult r =
        run_on(dev, {"generate", "--network", pkl, "--seeds", "0-5", "--grid", "3x2", "--outdir", out + "/g", "-q"});
    ASSERT_EQ(r.status, 0) << describe(r);
    // a dataset zip of the same seeds
    r = run_on(dev, {"generate", "--network", pkl, "--seeds", "0-5", "--outdir", out + "/d.zip", "-q"});
    ASSERT_EQ(r.status, 0) << describe(r);
    // --size: N the larger side, and WxH
    for (const std::string size : {"8", "8x16"}) {
      r = run_on(dev, {"generate", "--network", pkl, "--seeds", "0-5", "--size", size, "--outdir", out + "/s" + size});
      ASSERT_EQ(r.status, 0) << describe(r);
      EXPECT_NE(r.out.find(size == "8" ? "(4x8, 3 channels" : "(8x16, 3 channels"), std::string::npos) << r.out;
    }
    // interpolate: frames between two seeds
    r = run_on(dev, {"interpolate", "--network", pkl, "--seeds", "0,1", "--frames", "3", "--no-video", "--outdir",
                     out + "/i"});
    ASSERT_EQ(r.status, 0) << describe(r);
  }
  const std::string cpu = dir + "/cpu", gpu = dir + "/cuda";
  // the grid: 3 x 2 cells of 16x32, each the GPU's own PNG of that seed, bit for bit
  EXPECT_EQ(png_file_size(gpu + "/g/grid.png"), std::make_pair(uint32_t(3 * W), uint32_t(2 * H)));
  const Image8 grid = read_png(gpu + "/g/grid.png");
  EXPECT_TRUE(images_near(grid, read_png(cpu + "/g/grid.png"), kPngFrac, "grid"));
  const std::string zb = slurp(gpu + "/d.zip");
  readers::ZipArchive zip(reinterpret_cast<const uint8_t*>(zb.data()), zb.size(), "d.zip");
  EXPECT_NE(zip.find("dataset.json"), nullptr);
  for (int s = 0; s < 6; ++s) {
    char name[32], entry[40];
    std::snprintf(name, sizeof name, "/seed%04d.png", s);
    std::snprintf(entry, sizeof entry, "00000/img%08d.png", s);
    const std::string label = std::string("seed ") + std::to_string(s);
    const std::string png = slurp(gpu + "/g" + name);
    EXPECT_EQ(png_size(png), std::make_pair(uint32_t(W), uint32_t(H))) << label;
    const Image8 full = read_png(gpu + "/g" + name);
    EXPECT_TRUE(images_near(full, read_png(cpu + "/g" + name), kPngFrac, label));
    EXPECT_TRUE(same_pixels(cell(grid, s % 3, s / 3, W, H), full)) << label << ": the grid's cell";
    // the zip's entry: the folder run's bytes
    const readers::ZipEntry* e = zip.find(entry);
    ASSERT_NE(e, nullptr) << entry;
    EXPECT_TRUE(std::string(zip.data(*e)) == png) << label << ": the zip's " << entry;
    // --size: the box filter of the GPU's full-size image (run on the GPU), and near the CPU's
    for (const auto& [size, f] : {std::pair<std::string, int>{"8", 4}, {"8x16", 2}}) {
      const std::string small = gpu + "/s" + size + name;
      EXPECT_EQ(png_file_size(small), std::make_pair(uint32_t(W / f), uint32_t(H / f))) << label << " --size " << size;
      EXPECT_TRUE(same_pixels(read_png(small), box_downscale(full, f))) << label << " --size " << size;
      EXPECT_TRUE(images_near(read_png(small), read_png(cpu + "/s" + size + name), kPngFrac,
                              label + " --size " + size + " vs the CPU"));
    }
  }
  // interpolate's frames: 16x32, near the CPU's; the first is seed 0's image
  for (int i = 0; i < 4; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/i/frame%05d.png", i);
    if (!file_exists(cpu + name)) break;
    EXPECT_EQ(png_file_size(gpu + name), std::make_pair(uint32_t(W), uint32_t(H))) << name;
    EXPECT_TRUE(images_near(read_png(gpu + name), read_png(cpu + name), kPngFrac, name));
  }
  EXPECT_TRUE(file_exists(gpu + "/i/frame00002.png"));
  EXPECT_TRUE(images_near(read_png(gpu + "/i/frame00000.png"), read_png(gpu + "/g/seed0000.png"), kPngFrac,
                          "frame 0 vs seed 0"));
}
