// Messages a new user meets (issue 23.17): a text file saved under a checkpoint's name, and
// --device cuda in a build without the CUDA backend.
#include <gtest/gtest.h>

#include "sg2/generator.h"
#include "test_cli_run.h"
#include "util/file_util.h"

using namespace sg2;
using namespace sg2::test;

TEST(UserMessages, ATextFileNamedPklIsNotACheckpoint) {
  const std::string dir = temp_dir("text_pkl");
  const std::string path = dir + "/ffhq.pkl";
  const std::string text = "https://api.ngc.nvidia.com/v2/models/.../stylegan2-ffhq-1024x1024.pkl\n";
  detail::write_file_atomic(path, text.data(), text.size());
  for (const char* cmd : {"inspect", "convert"}) {
    std::vector<std::string> args = {cmd, path};
    if (std::string(cmd) == "convert") args.push_back(dir + "/m.safetensors");
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 1) << describe(r);
    EXPECT_EQ(r.err, std::string("sg2 ") + cmd + ": error: " + path +
                         ": a text file, not a checkpoint (it starts with 'https://api.ngc.nvidia.com/v2/models/...'); "
                         "checkpoints are binary: pickles start with the byte 0x80, torch.save zips with 'PK'\n");
  }
}

TEST(UserMessages, CudaInACpuOnlyBuildSaysHowToBuildIt) {
  std::string why;
  if (cuda_available(&why) || why.find("built without the CUDA backend") == std::string::npos)
    GTEST_SKIP() << "this build has the CUDA backend";
  const CliResult r = run_cli(
      {"generate", "--seeds", "0", "--class", "1", "--device", "cuda", "--outdir", temp_dir("cuda_off") + "/o"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("built without the CUDA backend (configured with SG2_CUDA=OFF, or no CUDA compiler was found "
                       "when it was configured)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("SG2_CUDA=ON scripts/build.sh"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("install"), std::string::npos) << r.err;
}
