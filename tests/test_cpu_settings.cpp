// The CPU backend's settings (engine/cpu_tuning.h), read and checked once: SG2_CPU_THREADS under
// both CPU paths (one rule), the SG2_CPU_REFERENCE / SG2_CPU_PROFILE switches, and a thread that
// cannot start (a process limit) — a clear error for the persistent pool, the same images with
// fewer threads for the reference ops, never an abort.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

CliResult generate(const std::string& dir, const std::vector<std::string>& env,
                   const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"generate", "--seeds", "0-1",      "--class", "1",
                                   "--device", "cpu",     "--outdir", dir,       "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args, env);
}

// `sg2 ARGS` under a shell's limits: 1 GiB stacks (every thread reserves one) in 6 GB of address
// space, so only a few threads can start.
CliResult generate_limited(const std::string& dir, const std::string& env, const std::string& extra) {
  const std::string cmd = "ulimit -s 1048576 && ulimit -v 6000000 && exec env " + env + " '" + std::string(SG2_CLI) +
                          "' generate --seeds 0-1 --class 1 --device cpu --outdir '" + dir + "' -q " + extra;
  return run_cli({"-c", cmd}, {}, "/bin/sh");
}

}  // namespace

TEST(CpuSettings, ThreadCountIsCheckedUnderBothCpuPaths) {
  const std::string dir = temp_dir("cpu_threads");
  for (const char* ref : {"SG2_CPU_REFERENCE=1", "SG2_CPU_REFERENCE="}) {
    CliResult r = generate(dir + "/a", {ref, "SG2_CPU_THREADS=abc"});
    EXPECT_EQ(r.status, 2) << ref << "\n" << describe(r);
    EXPECT_EQ(
        r.err,
        "sg2 generate: error: SG2_CPU_THREADS='abc' is not a thread count in [1, 1024] (unset it for every core)\n")
        << ref;
    r = generate(dir + "/b", {ref, "SG2_CPU_THREADS=0"});
    EXPECT_EQ(r.status, 2) << ref << "\n" << describe(r);
    EXPECT_FALSE(file_exists(dir + "/a/seed0000.png"));
    r = generate(dir + "/c", {ref, "SG2_CPU_THREADS=2"});
    EXPECT_EQ(r.status, 0) << ref << "\n" << describe(r);
  }
}

TEST(CpuSettings, SwitchesTakeOnlyZeroOrOne) {
  const std::string dir = temp_dir("cpu_switch");
  for (const char* v : {"SG2_CPU_REFERENCE=yes", "SG2_CPU_PROFILE=on"}) {
    const CliResult r = generate(dir + "/o", {v});
    EXPECT_EQ(r.status, 2) << v << "\n" << describe(r);
    const std::string name = std::string(v).substr(0, std::string(v).find('='));
    EXPECT_NE(r.err.find(name + "='"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is not a switch: set it to 1 or 0 (or unset it)"), std::string::npos) << r.err;
  }
  const CliResult ok = generate(dir + "/p", {"SG2_CPU_PROFILE=0", "SG2_CPU_REFERENCE=0"});
  EXPECT_EQ(ok.status, 0) << describe(ok);
}

TEST(CpuSettings, AThreadThatCannotStartIsAClearErrorOrFewerThreads) {
  const std::string dir = temp_dir("cpu_limit");
  const CliResult plain = generate(dir + "/plain", {"SG2_CPU_REFERENCE=1"});
  ASSERT_EQ(plain.status, 0) << describe(plain);
  // The oneDNN path's persistent pool: a one-line error naming the limit and what to do.
  const CliResult pool = generate_limited(dir + "/pool", "SG2_CPU_REFERENCE=0", "--threads 64");
  if (pool.status == 0) GTEST_SKIP() << "the shell's limits did not stop a thread here (ulimit -s/-v)";
  EXPECT_EQ(pool.status, 1) << describe(pool);
  EXPECT_NE(pool.err.find("sg2 generate: error: could not start CPU thread "), std::string::npos) << pool.err;
  EXPECT_NE(pool.err.find(" of 64 ("), std::string::npos) << pool.err;
  EXPECT_NE(pool.err.find("the process's limit on threads or memory): use "), std::string::npos) << pool.err;
  EXPECT_EQ(std::count(pool.err.begin(), pool.err.end(), '\n'), 1) << pool.err;
  // The reference ops work on with the threads that started: the same files as without a limit.
  const CliResult ref = generate_limited(dir + "/ref", "SG2_CPU_REFERENCE=1 SG2_CPU_THREADS=64", "");
  ASSERT_EQ(ref.status, 0) << describe(ref);
  for (const char* f : {"/seed0000.png", "/seed0001.png"})
    EXPECT_EQ(slurp(dir + "/ref" + f), slurp(dir + "/plain" + f)) << f;
}
