// sg2: sharding — one run split over processes started by a cluster's own launchers (Slurm job
// arrays, srun, mpirun), each process taking a deterministic part of the work.
//
//   sg2::Shard s = sg2::resolve_shard(shard_option, sg2::process_environment());  // "I/N" or the launcher
//   sg2::IndexRange r = sg2::shard_range(seeds.size(), s);   // this process's seeds: [r.begin, r.end)
//
// The rule: shard I of N takes the contiguous block [I*q + min(I, m), (I+1)*q + min(I+1, m)) of
// the work list's positions, where q = total / N and m = total % N: blocks in order, sizes differing
// by at most one, their union exactly the whole list. A file is made by exactly one shard and is
// byte-identical to the one-process run's (the images do not depend on the batch).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// At most this many shards (given, or the launchers' task counts).
constexpr int64_t kMaxShards = int64_t(1) << 20;

/// This process's part of a sharded run.
struct Shard {
  int64_t index = 0;    ///< I, 0 <= index < count (numbered from 0, as MPI ranks and SLURM_PROCID)
  int64_t count = 1;    ///< N >= 1; 1 = the whole run
  int local_rank = -1;  ///< the launcher's rank of this process on its node; -1 when it gives none
  /// Where index and count came from, for messages: "given" (parse_shard), "SLURM_ARRAY_TASK_ID",
  /// "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", or an array and a step combined
  /// ("SLURM_ARRAY_TASK_ID x SLURM_PROCID"); "" when nothing shards the run.
  std::string source;
  /// SLURM_ARRAY_TASK_ID when the job array has this one task (`sbatch --array=3`, often a re-run
  /// of one task of a larger array): the run then makes the whole list, and the CLI says how to
  /// make one part instead; -1 otherwise.
  int64_t lone_array_task = -1;

  bool sharded() const { return count > 1; }
  /// "I/N"
  std::string str() const;
};

/// Parses "I/N" (the CLI's --shard: decimal, 0 <= I < N <= kMaxShards; "0/1" = the whole run, which
/// also turns the environment's detection off). Throws Error(invalid_argument) "shard 'x' is not
/// I/N ..." / "shard 4/4: I must be below N ...".
Shard parse_shard(const std::string& text);

/// An environment: the value of a variable, nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
/// This process's environment (getenv).
EnvLookup process_environment();

/// The shard the launcher's environment gives. Two levels, each optional, multiply:
///  - a Slurm job array (sbatch --array=A-B[:S]): position a = (SLURM_ARRAY_TASK_ID -
///    SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP (step 1 when unset) of SLURM_ARRAY_TASK_COUNT
///    tasks. The ids must form that range (SLURM_ARRAY_TASK_MAX = MIN + (COUNT - 1) * STEP): an
///    irregular list (--array=1,4,9) is refused, since a task cannot know its position;
///  - the processes of one launch, from the first launcher found: Open MPI
///    (OMPI_COMM_WORLD_RANK / _SIZE, local rank OMPI_COMM_WORLD_LOCAL_RANK), PMI (MPICH/Hydra,
///    Intel MPI, srun --mpi=pmi2: PMI_RANK / PMI_SIZE, local rank MPI_LOCALRANKID or
///    PMI_LOCAL_RANK), a Slurm step (srun: SLURM_PROCID of SLURM_STEP_NUM_TASKS, local rank
///    SLURM_LOCALID). SLURM_STEP_NUM_TASKS, which only srun sets, marks a step: a batch script run
///    without srun sees SLURM_PROCID=0 and the allocation's SLURM_NTASKS while it is one process,
///    so those alone shard nothing. An MPI launcher wins over Slurm (mpirun inside an allocation
///    starts its daemons with srun, whose variables the ranks inherit). Where the launcher gives
///    no local rank, SLURM_LOCALID is used when set.
/// With array position a of A and process r of R: index = a * R + r, count = A * R.
/// Throws Error(invalid_argument) "environment: ..." naming the variable for a value that is not a
/// decimal integer, a rank not below its size, a size of 0 or above kMaxShards, or an array whose
/// layout is unknown (the caller may add how to give the shard explicitly).
Shard shard_from_environment(const EnvLookup& env);

/// parse_shard(*shard_option) when given, else shard_from_environment. The local rank comes from
/// the environment in both cases (a launcher may run `sg2 ... --shard I/N` too).
Shard resolve_shard(const std::optional<std::string>& shard_option, const EnvLookup& env);

/// Positions [begin, end) of a work list.
struct IndexRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

/// The block of shard.index of shard.count over `total` items (the rule at the top of this
/// header). Empty when total < count for the last shards. Throws Error(invalid_argument) for
/// total < 0 or an invalid shard.
IndexRange shard_range(int64_t total, const Shard& shard);

/// The zip archive a shard writes for `--outdir NAME.zip`: one archive per shard,
/// "NAME-shardIofN.zip" with I zero-padded to N's width ("out/fakes-shard03of10.zip"); `zip_path`
/// itself when the run is not sharded. Its images keep their positions in the whole seed list
/// (dataset_image_name(range.begin + i)), so the shards' archives never share a name.
std::string shard_zip_path(const std::string& zip_path, const Shard& shard);

/// The CUDA ordinal a process of this shard takes: local_rank % visible_devices (visible_devices
/// > 0, the GPUs this process sees, sg2::usable_gpu_count(): e.g. Slurm's --gpus-per-task=1 leaves
/// each task one GPU, cuda:0), or local_rank when visible_devices <= 0 (unknown). nullopt when the
/// launcher gave no local rank.
std::optional<int> shard_cuda_ordinal(const Shard& shard, int visible_devices);

}  // namespace sg2
SG2_PUBLIC_END
