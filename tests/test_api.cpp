// The public C++ API as a user meets it: the bundled-model lookup (design.md §6), one exception
// type for every failure, and the sg2.h umbrella header.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "sg2/sg2.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

/// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST(DefaultModel, FoundInTheBuildTreeAndOverriddenBySG2_MODEL) {
  ::unsetenv("SG2_MODEL");
  const std::vector<std::string> c = default_model_candidates();
  const std::string build_path = std::string(SG2_BINARY_DIR) + "/models/digits32/digits32.pkl";
  EXPECT_NE(std::find(c.begin(), c.end(), build_path), c.end()) << "candidates do not include " << build_path;
  EXPECT_EQ(default_model_path(), build_path);
  {
    const std::string dir = temp_dir("env");
    const std::string model = write_tiny_model(dir);
    ScopedEnv env("SG2_MODEL", model);
    EXPECT_EQ(default_model_candidates(), std::vector<std::string>{model});
    EXPECT_EQ(default_model_path(), model);
    EXPECT_EQ(load_default_model().config.img_resolution, 16);
  }
  {
    ScopedEnv env("SG2_MODEL", "/nonexistent/model.pkl");
    try {
      default_model_path();
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::io);
      EXPECT_NE(std::string(e.what()).find("SG2_MODEL is set to '/nonexistent/model.pkl'"), std::string::npos)
          << e.what();
    }
  }
}

// An installed layout (<prefix>/bin/sg2, <prefix>/lib/libsg2.so, <prefix>/share/sg2/models/...):
// the CLI finds the model there from any working directory, and lists every place it looked when
// the model is missing.
TEST(DefaultModel, InstalledLayoutAndTheMissingModelMessage) {
  const std::string prefix = temp_dir("prefix");
  ASSERT_EQ(std::system(("mkdir -p " + prefix + "/bin " + prefix + "/lib && cp " + SG2_CLI + " " + prefix +
                         "/bin/sg2 && cp -P " + SG2_BINARY_DIR + "/libsg2.so* " + prefix + "/lib/")
                            .c_str()),
            0);
  const std::vector<std::string> env = {"LD_LIBRARY_PATH=" + prefix + "/lib", "SG2_MODEL="};
  const std::string exe = prefix + "/bin/sg2";
  CliResult missing = run_cli({"generate", "--seeds", "1", "--outdir", prefix + "/out"}, env, exe);
  EXPECT_EQ(missing.status, 1) << describe(missing);
  EXPECT_NE(
      missing.err.find("the bundled model (digits32/digits32.pkl) was not found; looked in: " + prefix +
                       "/bin/models/digits32/digits32.pkl, " + prefix + "/share/sg2/models/digits32/digits32.pkl"),
      std::string::npos)
      << missing.err;
  EXPECT_NE(missing.err.find("\nsg2 generate: hint: pass --network FILE, set SG2_MODEL=FILE"), std::string::npos)
      << missing.err;

  ASSERT_EQ(std::system(("mkdir -p " + prefix + "/share/sg2/models/digits32").c_str()), 0);
  // Any loadable model works under the bundled name (load_model detects the format by content).
  write_tiny_model(prefix + "/share/sg2/models/digits32", 0, 3, "digits32.pkl");
  CliResult found = run_cli({"generate", "--seeds", "1", "--device", "cpu", "--outdir", prefix + "/out"}, env, exe);
  EXPECT_EQ(found.status, 0) << describe(found);
  EXPECT_TRUE(file_exists(prefix + "/out/seed0001.png"));
}

TEST(Api, EveryFailureIsAnSg2Error) {
  const std::string dir = temp_dir("errors");
  { std::ofstream(dir + "/html.pkl") << "<!DOCTYPE html><html>not a checkpoint</html>"; }
  for (const std::string& path : {dir + "/html.pkl", dir + "/missing.pkl"}) {
    try {
      load_model(path);
      ADD_FAILURE() << path << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  const std::string model = write_tiny_model(dir);
  GeneratorOptions cuda;
  cuda.device = Device::parse("cuda:7");
  EXPECT_NO_THROW(warm_up(*cuda.device));  // reports nothing: the generator below does
  EXPECT_NO_THROW(warm_up(Device{}));
  if (!cuda_available()) {
    try {
      Generator g(load_model_file(model), cuda);
      ADD_FAILURE() << "a GPU generator without a GPU";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::device) << e.what();
    }
  }
  GeneratorOptions cpu;
  cpu.device = Device{};
  Generator g(load_model_file(model), cpu);
  EXPECT_THROW(g.map(z_from_seeds({1}, 9), Tensor()), Error);
  EXPECT_THROW(parse_seeds("1,-2"), Error);
  EXPECT_THROW(parse_seeds("4294967296"), Error);
  EXPECT_EQ(parse_seeds("4294967295").at(0), 4294967295u);
}
