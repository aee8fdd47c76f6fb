// Tests of sharding (engine/shard.cpp): --shard parsing, the block rule (the shards' union is
// the whole list, disjoint, in order, balanced), each launcher's environment (Slurm arrays with
// MIN/STEP, srun steps, Open MPI, PMI), their combination and precedence, the batch-script trap,
// the local rank's GPU, the per-shard zip name, and the messages for bad values.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sg2/error.h"
#include "sg2/shard.h"

namespace sg2 {
namespace {

EnvLookup env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(to_string(e.kind())) + ": " + e.what();
  }
  return "no error";
}

TEST(Shard, ParsesIOfN) {
  Shard s = parse_shard("3/8");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(s.source, "given");
  EXPECT_EQ(s.str(), "3/8");
  EXPECT_TRUE(s.sharded());
  EXPECT_FALSE(parse_shard("0/1").sharded());
  EXPECT_EQ(parse_shard("1048575/1048576").index, 1048575);
  EXPECT_EQ(error_of([] { parse_shard("4/4"); }),
            "invalid_argument: shard 4/4: I must be below N (shards are numbered 0 to N-1)");
  EXPECT_EQ(error_of([] { parse_shard("0/0"); }), "invalid_argument: shard 0/0: N must be in [1, 1048576]");
  EXPECT_EQ(error_of([] { parse_shard("0/1048577"); }), "invalid_argument: shard 0/1048577: N must be in [1, 1048576]");
  for (const char* bad :
       {"", "3", "/4", "3/", "-1/4", "1/-4", "a/b", "1/4/5", " 1/4", "1/4 ", "+1/4", "1.0/4", "99999999999999999999/4"})
    EXPECT_EQ(error_of([&] { parse_shard(bad); }).substr(0, 25), "invalid_argument: shard '") << bad;
  EXPECT_EQ(error_of([] { parse_shard("1\x1b[2J/4"); }),
            "invalid_argument: shard '1\\x1b[2J/4' is not I/N (shard I of N, 0 <= I < N, e.g. 0/4)");
}

TEST(Shard, BlocksCoverTheListOnceInOrder) {
  for (int64_t total : {0, 1, 2, 5, 7, 16, 100, 1001})
    for (int64_t n : {1, 2, 3, 4, 7, 16, 1000}) {
      int64_t next = 0;
      for (int64_t i = 0; i < n; ++i) {
        Shard s;
        s.index = i;
        s.count = n;
        const IndexRange r = shard_range(total, s);
        EXPECT_EQ(r.begin, next) << total << " " << i << "/" << n;
        EXPECT_GE(r.size(), total / n);
        EXPECT_LE(r.size(), total / n + 1);
        next = r.end;
      }
      EXPECT_EQ(next, total) << total << " over " << n;
    }
  Shard s = parse_shard("1/4");
  EXPECT_EQ(shard_range(10, s).begin, 3);  // sizes 3, 3, 2, 2
  EXPECT_EQ(shard_range(10, s).end, 6);
  s = parse_shard("1048575/1048576");  // no overflow at the extremes
  const IndexRange big = shard_range(INT64_MAX, s);
  EXPECT_EQ(big.end, INT64_MAX);
  EXPECT_THROW(shard_range(-1, s), Error);
  s.index = 5;
  s.count = 5;
  EXPECT_THROW(shard_range(10, s), Error);
}

TEST(Shard, NoLauncherMeansTheWholeRun) {
  const Shard s = shard_from_environment(env_of({{"HOME", "/root"}}));
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.local_rank, -1);
  EXPECT_EQ(s.source, "");
}

TEST(Shard, SlurmJobArrays) {
  // --array=0-9
  Shard s = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "4"},
                                           {"SLURM_ARRAY_TASK_COUNT", "10"},
                                           {"SLURM_ARRAY_TASK_MIN", "0"},
                                           {"SLURM_ARRAY_TASK_MAX", "9"},
                                           {"SLURM_ARRAY_TASK_STEP", "1"}}));
  EXPECT_EQ(s.str(), "4/10");
  EXPECT_EQ(s.source, "SLURM_ARRAY_TASK_ID");
  // --array=1-7:2 (ids 1, 3, 5, 7): id 5 is position 2 of 4.
  s = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "5"},
                                     {"SLURM_ARRAY_TASK_COUNT", "4"},
                                     {"SLURM_ARRAY_TASK_MIN", "1"},
                                     {"SLURM_ARRAY_TASK_MAX", "7"},
                                     {"SLURM_ARRAY_TASK_STEP", "2"}}));
  EXPECT_EQ(s.str(), "2/4");
  // --array=1-16 without STEP (older Slurm): step 1.
  s = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "16"},
                                     {"SLURM_ARRAY_TASK_COUNT", "16"},
                                     {"SLURM_ARRAY_TASK_MIN", "1"},
                                     {"SLURM_ARRAY_TASK_MAX", "16"}}));
  EXPECT_EQ(s.str(), "15/16");
  EXPECT_EQ(s.local_rank, -1);  // an array task alone gives no local rank
  // --array=1,4,9: not a range; a task cannot know its position.
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "4"},
                                             {"SLURM_ARRAY_TASK_COUNT", "3"},
                                             {"SLURM_ARRAY_TASK_MIN", "1"},
                                             {"SLURM_ARRAY_TASK_MAX", "9"},
                                             {"SLURM_ARRAY_TASK_STEP", "1"}}));
            }),
            "invalid_argument: environment: the job array's task ids are not a range (SLURM_ARRAY_TASK_MIN=1, "
            "SLURM_ARRAY_TASK_STEP=1, SLURM_ARRAY_TASK_COUNT=3, SLURM_ARRAY_TASK_MAX=9): submit it as --array=A-B or "
            "A-B:S");
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "4"},
                                             {"SLURM_ARRAY_TASK_COUNT", "4"},
                                             {"SLURM_ARRAY_TASK_MIN", "1"},
                                             {"SLURM_ARRAY_TASK_STEP", "2"}}));
            }),
            "invalid_argument: environment: SLURM_ARRAY_TASK_ID=4 is not a task of the array (SLURM_ARRAY_TASK_MIN=1, "
            "SLURM_ARRAY_TASK_STEP=2, SLURM_ARRAY_TASK_COUNT=4)");
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "4"}}));
            }),
            "invalid_argument: environment: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT or "
            "SLURM_ARRAY_TASK_MIN is not");
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
            }),
            "invalid_argument: environment: SLURM_ARRAY_TASK_ID='x' is not a non-negative integer");
}

TEST(Shard, SrunSteps) {
  Shard s = shard_from_environment(env_of({{"SLURM_PROCID", "5"},
                                           {"SLURM_NTASKS", "8"},
                                           {"SLURM_STEP_NUM_TASKS", "8"},
                                           {"SLURM_LOCALID", "1"},
                                           {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(s.str(), "5/8");
  EXPECT_EQ(s.local_rank, 1);
  EXPECT_EQ(s.source, "SLURM_PROCID");
  // A batch script run without srun sees the allocation's SLURM_NTASKS and SLURM_PROCID=0: one process.
  s = shard_from_environment(
      env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}, {"SLURM_JOB_ID", "77"}}));
  EXPECT_EQ(s.str(), "0/1");
  EXPECT_FALSE(s.sharded());
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"SLURM_PROCID", "8"}, {"SLURM_STEP_NUM_TASKS", "8"}}));
            }),
            "invalid_argument: environment: SLURM_PROCID=8 is not below SLURM_STEP_NUM_TASKS=8");
}

TEST(Shard, MpiLaunchers) {
  Shard s = shard_from_environment(
      env_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(s.str(), "3/4");
  EXPECT_EQ(s.local_rank, 1);
  EXPECT_EQ(s.source, "OMPI_COMM_WORLD_RANK");
  s = shard_from_environment(env_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "6"}, {"MPI_LOCALRANKID", "2"}}));
  EXPECT_EQ(s.str(), "2/6");
  EXPECT_EQ(s.local_rank, 2);
  s = shard_from_environment(env_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "6"}, {"PMI_LOCAL_RANK", "0"}}));
  EXPECT_EQ(s.local_rank, 0);
  // srun --mpi=pmi2: PMI's numbering, Slurm's local id.
  s = shard_from_environment(env_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(s.str(), "1/2");
  EXPECT_EQ(s.local_rank, 1);
  // mpirun inside a Slurm allocation: the ranks inherit the daemon's srun step; MPI wins.
  s = shard_from_environment(env_of({{"OMPI_COMM_WORLD_RANK", "6"},
                                     {"OMPI_COMM_WORLD_SIZE", "8"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                                     {"SLURM_PROCID", "1"},
                                     {"SLURM_STEP_NUM_TASKS", "2"},
                                     {"SLURM_LOCALID", "0"}}));
  EXPECT_EQ(s.str(), "6/8");
  EXPECT_EQ(s.local_rank, 2);
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"OMPI_COMM_WORLD_RANK", "0"}}));
            }),
            "invalid_argument: environment: OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}}));
            }),
            "invalid_argument: environment: PMI_SIZE=0 is out of range [1, 1048576]");
}

TEST(Shard, ArraysOfMultiProcessStepsMultiply) {
  // --array=0-2, each task `srun -n 4`: 12 shards; task 1's process 3 is shard 7.
  const Shard s = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "1"},
                                                 {"SLURM_ARRAY_TASK_COUNT", "3"},
                                                 {"SLURM_ARRAY_TASK_MIN", "0"},
                                                 {"SLURM_ARRAY_TASK_MAX", "2"},
                                                 {"SLURM_PROCID", "3"},
                                                 {"SLURM_STEP_NUM_TASKS", "4"},
                                                 {"SLURM_LOCALID", "3"}}));
  EXPECT_EQ(s.str(), "7/12");
  EXPECT_EQ(s.source, "SLURM_ARRAY_TASK_ID x SLURM_PROCID");
  EXPECT_EQ(s.local_rank, 3);
  EXPECT_EQ(error_of([] {
              shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "0"},
                                             {"SLURM_ARRAY_TASK_COUNT", "2048"},
                                             {"SLURM_ARRAY_TASK_MIN", "0"},
                                             {"PMI_RANK", "0"},
                                             {"PMI_SIZE", "1024"}}));
            }),
            "invalid_argument: environment: 2048 array tasks x 1024 processes is more than 1048576 shards");
}

TEST(Shard, ExplicitShardWinsAndKeepsTheLocalRank) {
  const EnvLookup env =
      env_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  Shard s = resolve_shard(std::string("0/1"), env);
  EXPECT_FALSE(s.sharded());
  EXPECT_EQ(s.local_rank, 1);
  s = resolve_shard(std::string("2/3"), env_of({{"PMI_RANK", "x"}, {"SLURM_LOCALID", "4"}}));  // env not parsed for I/N
  EXPECT_EQ(s.str(), "2/3");
  EXPECT_EQ(s.local_rank, 4);
  s = resolve_shard(std::nullopt, env);
  EXPECT_EQ(s.str(), "1/2");
}

TEST(Shard, LocalRankPicksTheGpu) {
  Shard s;
  EXPECT_EQ(shard_cuda_ordinal(s, 8), std::nullopt);
  s.local_rank = 3;
  EXPECT_EQ(shard_cuda_ordinal(s, -1), 3);  // CUDA_VISIBLE_DEVICES unset: every GPU visible
  EXPECT_EQ(shard_cuda_ordinal(s, 8), 3);
  EXPECT_EQ(shard_cuda_ordinal(s, 1), 0);  // srun --gpus-per-task=1: each task sees its own GPU as cuda:0
  EXPECT_EQ(shard_cuda_ordinal(s, 2), 1);
}

TEST(Shard, OneZipPerShard) {
  EXPECT_EQ(shard_zip_path("out/fakes.zip", parse_shard("3/10")), "out/fakes-shard03of10.zip");
  EXPECT_EQ(shard_zip_path("out/fakes.zip", parse_shard("0/2")), "out/fakes-shard0of2.zip");
  EXPECT_EQ(shard_zip_path("a.b/c.ZIP", parse_shard("12/100")), "a.b/c-shard012of100.ZIP");
  EXPECT_EQ(shard_zip_path("out/fakes.zip", parse_shard("0/1")), "out/fakes.zip");
}

}  // namespace
}  // namespace sg2
