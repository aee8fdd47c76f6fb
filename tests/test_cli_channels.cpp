// Models whose images are not RGB (issue 23 item 6): 2 channels are gray + alpha in a PNG, more
// than 4 channels only fit .npy, and every command says so before any work, in its own terms.
#include <gtest/gtest.h>

#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {
bool has_text(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }
}  // namespace

TEST(CliChannels, FiveChannelsAreWrittenAsNpyAndRefusedAsPng) {
  const std::string dir = temp_dir("cli_ch5");
  const std::string model = write_tiny_model(dir, 0, 5);
  const std::vector<std::string> base = {"--network", model, "--device", "cpu"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.begin() + 1, base.begin(), base.end());
    return a;
  };
  // PNG output is refused up front, in the CLI's terms, naming the way out
  for (const std::vector<std::string>& args :
       {with({"generate", "--seeds", "0", "--outdir", dir + "/g"}),
        with({"generate", "--seeds", "0", "--format", "u8npy", "--outdir", dir + "/g"}),
        with({"generate", "--seeds", "0", "--format", "npy", "--grid", "1x1", "--outdir", dir + "/g"}),
        with({"mix", "--rows", "1", "--cols", "2", "--outdir", dir + "/g"}),
        with({"interpolate", "--seeds", "0,1", "--frames", "2", "--outdir", dir + "/g"})}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 2) << describe(r);
    EXPECT_TRUE(has_text(r.err, "this model's images have 5 channels")) << r.err;
    EXPECT_TRUE(has_text(r.err, "use --format npy")) << r.err;
    EXPECT_FALSE(has_text(r.err, "to_image8")) << r.err;
    EXPECT_FALSE(file_exists(dir + "/g")) << args[0];
  }
  // generate --format npy
  CliResult r = run_cli(with({"generate", "--seeds", "0-1", "--format", "npy", "--outdir", dir + "/gen"}));
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(read_npy_tensor(dir + "/gen/seed0001.npy").shape(), (std::vector<int64_t>{1, 5, 16, 16}));
  // mix --format npy: every image, no grid.png
  r = run_cli(with({"mix", "--rows", "1", "--cols", "2", "--format", "npy", "--outdir", dir + "/mix"}));
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(file_exists(dir + "/mix/1-2.npy"));
  EXPECT_TRUE(file_exists(dir + "/mix/2-2.npy"));
  EXPECT_FALSE(file_exists(dir + "/mix/grid.png"));
  EXPECT_TRUE(has_text(r.out, "no grid.png")) << r.out;
  // interpolate --format npy: frames as .npy, no video, a note saying why
  r = run_cli(with({"interpolate", "--seeds", "0,1", "--frames", "2", "--format", "npy", "--outdir", dir + "/int"}));
  ASSERT_EQ(r.status, 0) << describe(r);
  for (const char* f : {"/int/frame00000.npy", "/int/frame00001.npy", "/int/frame00002.npy"})
    EXPECT_EQ(read_npy_tensor(dir + f).shape(), (std::vector<int64_t>{1, 5, 16, 16})) << f;
  EXPECT_FALSE(file_exists(dir + "/int/frame00000.png"));
  EXPECT_FALSE(file_exists(dir + "/int/interpolation.mp4"));
  EXPECT_TRUE(has_text(r.err, "sg2 interpolate: note: --format npy writes no PNG frames, so no video was made"))
      << r.err;
  // the library's own message says what can be done and names no internal function
  Tensor img({1, 5, 2, 2});
  try {
    (void)to_image8(img, 0);
    ADD_FAILURE() << "5 channels became 8-bit pixels";
  } catch (const Error& e) {
    EXPECT_TRUE(has_text(e.message(), "an image of 5 channels cannot be stored as 8-bit pixels or a PNG")) << e.what();
    EXPECT_FALSE(has_text(e.what(), "to_image8")) << e.what();
    EXPECT_EQ(e.hint(), "keep such images as float32 .npy");
  }
}

TEST(CliChannels, TwoChannelsAreGrayAndAlphaInAPng) {
  const std::string dir = temp_dir("cli_ch2");
  const std::string model = write_tiny_model(dir, 0, 2);
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-1", "--format", "both",
                         "--grid", "2x1", "--outdir", dir + "/g"});
  ASSERT_EQ(r.status, 0) << describe(r);
  const Image8 png = read_png(dir + "/g/seed0000.png");
  EXPECT_EQ(png.channels, 2);
  const Tensor t = read_npy_tensor(dir + "/g/seed0000.npy");
  EXPECT_TRUE(png.pixels == to_image8(t, 0).pixels);
  EXPECT_EQ(read_png(dir + "/g/grid.png").channels, 2);
  EXPECT_TRUE(has_text(r.out, "2 channels")) << r.out;
  r = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "0,1", "--frames", "2", "--format",
               "both", "--no-video", "--outdir", dir + "/i"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(read_png(dir + "/i/frame00001.png").channels, 2);
  EXPECT_TRUE(file_exists(dir + "/i/frame00001.npy"));
  r = run_cli({"mix", "--network", model, "--device", "cpu", "--rows", "1", "--cols", "2", "--outdir", dir + "/m"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(read_png(dir + "/m/grid.png").channels, 2);
}
