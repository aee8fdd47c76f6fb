// `sg2 generate` split over processes by the launchers people already run, on the CPU backend:
// `mpirun -np 2 --oversubscribe` (Open MPI, Debian's openmpi-bin) and a Slurm job array and srun
// step emulated through their environment variables. Each part writes only its own share, and the
// union of the parts' files equals one run byte for byte. Also --shard, --grid under shards, and
// the messages for bad values.
#include <dirent.h>

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sg2/npy.h"
#include "sg2/tensor.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

/// Every file of `dir`: name -> bytes.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out[n] = slurp(dir + "/" + n);
  }
  ::closedir(d);
  return out;
}

std::vector<std::string> names_of(const std::map<std::string, std::string>& files) {
  std::vector<std::string> v;
  for (const auto& [k, _] : files) v.push_back(k);
  return v;
}

std::vector<std::string> seed_files(int first, int last) {
  std::vector<std::string> v;
  for (int s = first; s <= last; ++s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "seed%04d.png", s);
    v.push_back(buf);
  }
  return v;
}

/// Merges the parts' files; a name in two parts is a failure (each file is made by one shard).
::testing::AssertionResult union_equals(const std::vector<std::string>& part_dirs, const std::string& one_dir) {
  std::map<std::string, std::string> all;
  for (const std::string& d : part_dirs)
    for (auto& [name, bytes] : files_of(d))
      if (!all.emplace(name, bytes).second) return ::testing::AssertionFailure() << name << " made by two shards";
  const std::map<std::string, std::string> one = files_of(one_dir);
  if (one.empty()) return ::testing::AssertionFailure() << "the one-process run wrote nothing";
  if (names_of(all) != names_of(one))
    return ::testing::AssertionFailure() << "the parts made " << all.size() << " files, the one run " << one.size();
  for (const auto& [name, bytes] : one)
    if (all[name] != bytes) return ::testing::AssertionFailure() << name << " differs from the one-process run's";
  return ::testing::AssertionSuccess();
}

/// The common arguments: a tiny random model on the CPU, 10 seeds in batches of 3, random noise
/// (keyed by the seed) and truncation, so that anything position-dependent would show.
std::vector<std::string> generate_args(const std::string& model, const std::string& outdir) {
  return {"generate",     "--network", model,          "--device", "cpu",     "--seeds", "0-9",      "--batch", "3",
          "--noise-mode", "random",    "--noise-seed", "5",        "--trunc", "0.7",     "--outdir", outdir};
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<std::string> kMpiRoot = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

TEST(CliShard, MpirunTwoProcessesEqualOneRun) {
  const std::string mpirun = SG2_MPIRUN;
  if (mpirun.empty()) GTEST_SKIP() << "mpirun not found: install openmpi-bin (scripts/setup.sh does)";
  const std::string dir = temp_dir("mpirun");
  const std::string model = write_tiny_model(dir);
  const CliResult one = run_cli(generate_args(model, dir + "/one"));
  ASSERT_EQ(one.status, 0) << describe(one);

  // Two ranks of one launch, each told (by MPMD) to write into its own folder: each makes only its half.
  std::vector<std::string> args = {"--oversubscribe", "-np", "1", SG2_CLI};
  args = plus(args, generate_args(model, dir + "/rank0"));
  args = plus(args, {":", "-np", "1", SG2_CLI});
  args = plus(args, generate_args(model, dir + "/rank1"));
  const CliResult mpmd = run_cli(args, kMpiRoot, mpirun);
  ASSERT_EQ(mpmd.status, 0) << describe(mpmd);
  EXPECT_EQ(names_of(files_of(dir + "/rank0")), seed_files(0, 4));
  EXPECT_EQ(names_of(files_of(dir + "/rank1")), seed_files(5, 9));
  EXPECT_NE(
      mpmd.err.find("sg2 generate: note: shard 1/2 (OMPI_COMM_WORLD_RANK): positions 5-9 of the list's 10 (5 images)"),
      std::string::npos)
      << mpmd.err;
  EXPECT_TRUE(union_equals({dir + "/rank0", dir + "/rank1"}, dir + "/one"));

  // The usual form: `mpirun -np 2 sg2 generate ...` into one folder.
  const CliResult shared =
      run_cli(plus({"--oversubscribe", "-np", "2", SG2_CLI}, generate_args(model, dir + "/shared")), kMpiRoot, mpirun);
  ASSERT_EQ(shared.status, 0) << describe(shared);
  EXPECT_TRUE(union_equals({dir + "/shared"}, dir + "/one"));
}

TEST(CliShard, SlurmJobArrayEqualsOneRun) {
  // sbatch --array=1-5:2: tasks 1, 3, 5 are positions 0, 1, 2 of 3; 10 seeds split 4, 3, 3.
  const std::string dir = temp_dir("array");
  const std::string model = write_tiny_model(dir);
  ASSERT_EQ(run_cli(generate_args(model, dir + "/one")).status, 0);
  std::vector<std::string> parts;
  const int first_seed[] = {0, 4, 7, 10};
  for (int pos = 0; pos < 3; ++pos) {
    const std::string out = dir + "/task" + std::to_string(pos);
    const CliResult r = run_cli(generate_args(model, out),
                                {"SLURM_ARRAY_TASK_ID=" + std::to_string(1 + 2 * pos), "SLURM_ARRAY_TASK_MIN=1",
                                 "SLURM_ARRAY_TASK_MAX=5", "SLURM_ARRAY_TASK_STEP=2", "SLURM_ARRAY_TASK_COUNT=3",
                                 "SLURM_ARRAY_JOB_ID=1234", "SLURM_JOB_ID=1235", "SLURM_NTASKS=1", "SLURM_PROCID=0"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(names_of(files_of(out)), seed_files(first_seed[pos], first_seed[pos + 1] - 1)) << pos;
    EXPECT_NE(r.err.find("shard " + std::to_string(pos) + "/3 (SLURM_ARRAY_TASK_ID)"), std::string::npos) << r.err;
    parts.push_back(out);
  }
  EXPECT_TRUE(union_equals(parts, dir + "/one"));
}

// Re-running one task of an array (sbatch --array=3): Slurm calls it an array of one task, so
// it makes the whole list; a note says so and how to make one part.
TEST(CliShard, ARerunOfOneArrayTaskSaysHowToMakeOnePart) {
  const std::string dir = temp_dir("array_one");
  const std::string model = write_tiny_model(dir);
  const CliResult r = run_cli(generate_args(model, dir + "/o"), {"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_MIN=3",
                                                                 "SLURM_ARRAY_TASK_MAX=3", "SLURM_ARRAY_TASK_COUNT=1"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(names_of(files_of(dir + "/o")), seed_files(0, 9));
  EXPECT_NE(r.err.find("sg2 generate: note: this Slurm job array has one task (SLURM_ARRAY_TASK_ID=3), so it makes "
                       "the whole list; to re-run one part of the original array, pass --shard I/N (part I of its "
                       "N tasks, e.g. --shard 3/8)"),
            std::string::npos)
      << r.err;
  const CliResult part = run_cli(
      [&] {
        auto a = generate_args(model, dir + "/p");
        a.push_back("--shard");
        a.push_back("3/8");
        return a;
      }(),
      {"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_MIN=3", "SLURM_ARRAY_TASK_MAX=3", "SLURM_ARRAY_TASK_COUNT=1"});
  ASSERT_EQ(part.status, 0) << describe(part);
  EXPECT_EQ(part.err.find("has one task"), std::string::npos) << part.err;
}

TEST(CliShard, SrunStepsShardButABatchScriptDoesNot) {
  const std::string dir = temp_dir("srun");
  const std::string model = write_tiny_model(dir);
  ASSERT_EQ(run_cli(generate_args(model, dir + "/one")).status, 0);
  for (int rank = 0; rank < 2; ++rank) {
    const CliResult r = run_cli(generate_args(model, dir + "/step" + std::to_string(rank)),
                                {"SLURM_PROCID=" + std::to_string(rank), "SLURM_STEP_NUM_TASKS=2", "SLURM_NTASKS=2",
                                 "SLURM_LOCALID=" + std::to_string(rank), "SLURM_STEP_ID=0"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(names_of(files_of(dir + "/step" + std::to_string(rank))), seed_files(5 * rank, 5 * rank + 4));
  }
  EXPECT_TRUE(union_equals({dir + "/step0", dir + "/step1"}, dir + "/one"));
  // sg2 run straight from a batch script of a 4-task allocation (no srun): one process, every seed.
  const CliResult batch = run_cli(generate_args(model, dir + "/batch"),
                                  {"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0", "SLURM_JOB_ID=9"});
  ASSERT_EQ(batch.status, 0) << describe(batch);
  EXPECT_TRUE(union_equals({dir + "/batch"}, dir + "/one"));
  EXPECT_EQ(batch.err.find("shard"), std::string::npos) << batch.err;
}

TEST(CliShard, WsRowsKeepTheirNamesAcrossShards) {
  const std::string dir = temp_dir("ws");
  const std::string model = write_tiny_model(dir);
  Tensor w({5, 8});
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = 0.1f * float(i % 17) - 0.8f;
  write_npy(dir + "/w.npy", w);
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{"generate", "--network",    model,     "--device", "cpu",
                                    "--ws",     dir + "/w.npy", "--batch", "2",        "--noise-mode",
                                    "random",   "--outdir",     out};
  };
  ASSERT_EQ(run_cli(args(dir + "/one")).status, 0);
  for (int i = 0; i < 2; ++i) {
    const CliResult r = run_cli(plus(args(dir + "/p" + std::to_string(i)), {"--shard", std::to_string(i) + "/2"}));
    ASSERT_EQ(r.status, 0) << describe(r);
  }
  EXPECT_EQ(names_of(files_of(dir + "/p1")), (std::vector<std::string>{"ws0003.png", "ws0004.png"}));
  EXPECT_TRUE(union_equals({dir + "/p0", dir + "/p1"}, dir + "/one"));
}

TEST(CliShard, ExplicitShardGridAndErrors) {
  const std::string dir = temp_dir("errors");
  const std::string model = write_tiny_model(dir);
  const std::vector<std::string> array_env = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_MIN=0",
                                              "SLURM_ARRAY_TASK_COUNT=2"};

  // --shard wins over the environment; 0/1 turns sharding off (and allows --grid).
  CliResult r = run_cli(plus(generate_args(model, dir + "/explicit"), {"--shard", "0/5"}), array_env);
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(names_of(files_of(dir + "/explicit")), seed_files(0, 1));
  r = run_cli(plus(generate_args(model, dir + "/all"), {"--shard", "0/1", "--grid", "5x2"}), array_env);
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(files_of(dir + "/all").size(), 11u);

  // --grid under shards is refused before any work.
  r = run_cli(plus(generate_args(model, dir + "/grid"), {"--grid", "5x2"}), array_env);
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_EQ(r.err,
            "sg2 generate: error: --grid needs the whole list in one process, but this is shard 1/2 "
            "(SLURM_ARRAY_TASK_ID): make the grid in a run of its own (--shard 0/1 turns sharding off)\n");
  EXPECT_FALSE(file_exists(dir + "/grid"));

  // Bad values: one line, exit 2, no output folder.
  r = run_cli(plus(generate_args(model, dir + "/bad"), {"--shard", "2/2"}));
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_EQ(r.err, "sg2 generate: error: --shard 2/2: I must be below N (shards are numbered 0 to N-1)\n");
  r = run_cli(plus(generate_args(model, dir + "/bad"), {"--shard", "1of2"}));
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_EQ(r.err, "sg2 generate: error: --shard '1of2' is not I/N (shard I of N, 0 <= I < N, e.g. 0/4)\n");
  r = run_cli(generate_args(model, dir + "/bad"), {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=one"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_EQ(r.err,
            "sg2 generate: error: environment: OMPI_COMM_WORLD_SIZE='one' is not a non-negative integer\n"
            "sg2 generate: hint: pass --shard I/N to choose this process's part\n");
  EXPECT_FALSE(file_exists(dir + "/bad"));

  // More shards than seeds: the last ones have nothing to do, and say so.
  r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-2", "--shard", "5/8", "--outdir",
               dir + "/empty"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_NE(r.err.find("shard 5/8 (--shard): nothing to make (3 items for 8 shards)"), std::string::npos) << r.err;
  EXPECT_TRUE(files_of(dir + "/empty").empty());
  // -q: no note.
  r = run_cli(plus(generate_args(model, dir + "/quiet"), {"--shard", "1/2", "-q"}));
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(r.err, "");
}

}  // namespace
