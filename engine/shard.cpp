// sg2: sharding (shard.h) — "I/N", the launchers' environment variables, the block rule. Messages
// name the variables and values, never CLI options (the CLI adds its own hint).
#include "sg2/shard.h"

#include <algorithm>
#include <cstdlib>

#include "sg2/error.h"
#include "util/text_util.h"

namespace sg2 {
namespace {

/// A value for the terminal (util/text_util.h): escaped, at most 40 characters.
std::string printable(const std::string& s) { return detail::printable(s, 40); }

/// A non-negative decimal integer of at most 18 digits (no sign, no spaces); nullopt otherwise.
std::optional<int64_t> parse_decimal(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

/// The integer value of variable `name`, nullopt when unset; Error(invalid_argument) naming it
/// when it is set but not a decimal integer.
std::optional<int64_t> env_int(const EnvLookup& env, const std::string& name) {
  const std::optional<std::string> v = env(name);
  if (!v) return std::nullopt;
  const std::optional<int64_t> n = parse_decimal(*v);
  if (!n)
    fail(ErrorKind::invalid_argument, "environment: ", name, "='", printable(*v), "' is not a non-negative integer");
  return n;
}

/// One level of sharding: position `rank` of `size`, and where it came from.
struct Level {
  int64_t rank = 0, size = 1;
  int local_rank = -1;
  std::string source;
  int64_t lone_task = -1;  // the array's only task id (an array of one task)
};

[[noreturn]] void bad_env(const std::string& what) { fail(ErrorKind::invalid_argument, "environment: ", what); }

/// A launcher's rank/size pair; nullopt when `rank_var` is unset.
std::optional<Level> rank_level(const EnvLookup& env, const std::string& rank_var, const std::string& size_var,
                                std::initializer_list<const char*> local_vars) {
  const std::optional<int64_t> rank = env_int(env, rank_var);
  if (!rank) return std::nullopt;
  const std::optional<int64_t> size = env_int(env, size_var);
  if (!size) bad_env(rank_var + " is set but " + size_var + " is not");
  if (*size < 1 || *size > kMaxShards)
    bad_env(size_var + "=" + std::to_string(*size) + " is out of range [1, " + std::to_string(kMaxShards) + "]");
  if (*rank >= *size)
    bad_env(rank_var + "=" + std::to_string(*rank) + " is not below " + size_var + "=" + std::to_string(*size));
  Level l;
  l.rank = *rank;
  l.size = *size;
  l.source = rank_var;
  for (const char* v : local_vars) {
    const std::optional<int64_t> lr = env_int(env, v);
    if (lr) {
      if (*lr > (1 << 20)) bad_env(std::string(v) + "=" + std::to_string(*lr) + " is out of range");
      l.local_rank = static_cast<int>(*lr);
      break;
    }
  }
  return l;
}

/// The Slurm job array level; nullopt outside an array.
std::optional<Level> array_level(const EnvLookup& env) {
  const std::optional<int64_t> id = env_int(env, "SLURM_ARRAY_TASK_ID");
  if (!id) return std::nullopt;
  const std::optional<int64_t> count = env_int(env, "SLURM_ARRAY_TASK_COUNT");
  const std::optional<int64_t> min = env_int(env, "SLURM_ARRAY_TASK_MIN");
  if (!count || !min) bad_env("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT or SLURM_ARRAY_TASK_MIN is not");
  const int64_t step = env_int(env, "SLURM_ARRAY_TASK_STEP").value_or(1);
  if (*count < 1 || *count > kMaxShards)
    bad_env("SLURM_ARRAY_TASK_COUNT=" + std::to_string(*count) + " is out of range [1, " + std::to_string(kMaxShards) +
            "]");
  const int64_t big = int64_t(1) << 40;  // Slurm's ids are far smaller; this keeps the arithmetic exact
  if (step < 1 || step > big) bad_env("SLURM_ARRAY_TASK_STEP=" + std::to_string(step) + " is out of range");
  if (*min > big) bad_env("SLURM_ARRAY_TASK_MIN=" + std::to_string(*min) + " is out of range");
  const int64_t last = *min + (*count - 1) * step;  // count and step are bounded: no overflow
  const std::optional<int64_t> max = env_int(env, "SLURM_ARRAY_TASK_MAX");
  const std::string layout = "SLURM_ARRAY_TASK_MIN=" + std::to_string(*min) +
                             ", SLURM_ARRAY_TASK_STEP=" + std::to_string(step) +
                             ", SLURM_ARRAY_TASK_COUNT=" + std::to_string(*count);
  if (max && *max != last)
    bad_env("the job array's task ids are not a range (" + layout + ", SLURM_ARRAY_TASK_MAX=" + std::to_string(*max) +
            "): submit it as --array=A-B or A-B:S");
  if (*id < *min || *id > last || (*id - *min) % step != 0)
    bad_env("SLURM_ARRAY_TASK_ID=" + std::to_string(*id) + " is not a task of the array (" + layout + ")");
  Level l;
  l.rank = (*id - *min) / step;
  l.size = *count;
  l.source = "SLURM_ARRAY_TASK_ID";
  if (*count == 1) l.lone_task = *id;  // sbatch --array=3: a re-run of one task makes the whole list
  return l;
}

/// The processes of one launch: MPI launchers first, then a Slurm step.
std::optional<Level> process_level(const EnvLookup& env) {
  std::optional<Level> l =
      rank_level(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", {"OMPI_COMM_WORLD_LOCAL_RANK"});
  if (!l) l = rank_level(env, "PMI_RANK", "PMI_SIZE", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"});
  if (!l && env("SLURM_STEP_NUM_TASKS")) l = rank_level(env, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", {"SLURM_LOCALID"});
  if (l && l->local_rank < 0) {
    const std::optional<int64_t> lr = env_int(env, "SLURM_LOCALID");
    if (lr) {
      if (*lr > (1 << 20)) bad_env("SLURM_LOCALID=" + std::to_string(*lr) + " is out of range");
      l->local_rank = static_cast<int>(*lr);
    }
  }
  return l;
}

/// The local rank alone, for a shard given explicitly: the first launcher local-rank variable that
/// holds a number (the user chose the shard, so a malformed launcher variable is not an error here).
int local_rank_only(const EnvLookup& env) {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"}) {
    const std::optional<std::string> text = env(v);
    if (!text) continue;
    const std::optional<int64_t> lr = parse_decimal(*text);
    if (lr && *lr <= (1 << 20)) return static_cast<int>(*lr);
  }
  return -1;
}

}  // namespace

std::string Shard::str() const { return std::to_string(index) + "/" + std::to_string(count); }

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const std::optional<int64_t> i = slash == std::string::npos ? std::nullopt : parse_decimal(text.substr(0, slash));
  const std::optional<int64_t> n = slash == std::string::npos ? std::nullopt : parse_decimal(text.substr(slash + 1));
  if (!i || !n)
    fail(ErrorKind::invalid_argument, "shard '", printable(text), "' is not I/N (shard I of N, 0 <= I < N, e.g. 0/4)");
  if (*n < 1 || *n > kMaxShards)
    fail(ErrorKind::invalid_argument, "shard ", *i, "/", *n, ": N must be in [1, ", kMaxShards, "]");
  if (*i >= *n)
    fail(ErrorKind::invalid_argument, "shard ", *i, "/", *n, ": I must be below N (shards are numbered 0 to N-1)");
  Shard s;
  s.index = *i;
  s.count = *n;
  s.source = "given";
  return s;
}

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Shard shard_from_environment(const EnvLookup& env) {
  const std::optional<Level> array = array_level(env);
  const std::optional<Level> procs = process_level(env);
  Shard s;
  if (procs) s.local_rank = procs->local_rank;
  if (array) s.lone_array_task = array->lone_task;
  const Level a = array.value_or(Level{});
  const Level p = procs.value_or(Level{});
  if (a.size > kMaxShards / p.size)
    bad_env(std::to_string(a.size) + " array tasks x " + std::to_string(p.size) + " processes is more than " +
            std::to_string(kMaxShards) + " shards");
  s.index = a.rank * p.size + p.rank;
  s.count = a.size * p.size;
  if (array && procs)
    s.source = a.source + " x " + p.source;
  else if (array)
    s.source = a.source;
  else if (procs)
    s.source = p.source;
  return s;
}

Shard resolve_shard(const std::optional<std::string>& shard_option, const EnvLookup& env) {
  if (!shard_option) return shard_from_environment(env);
  Shard s = parse_shard(*shard_option);
  s.local_rank = local_rank_only(env);
  return s;
}

IndexRange shard_range(int64_t total, const Shard& shard) {
  if (total < 0) fail(ErrorKind::invalid_argument, "shard_range: negative total ", total);
  if (shard.count < 1 || shard.count > kMaxShards || shard.index < 0 || shard.index >= shard.count)
    fail(ErrorKind::invalid_argument, "shard_range: invalid shard ", shard.index, "/", shard.count);
  const int64_t q = total / shard.count, m = total % shard.count;
  IndexRange r;
  r.begin = shard.index * q + std::min(shard.index, m);
  r.end = r.begin + q + (shard.index < m ? 1 : 0);
  return r;
}

std::string shard_zip_path(const std::string& zip_path, const Shard& shard) {
  if (!shard.sharded()) return zip_path;
  const std::string n = std::to_string(shard.count);
  std::string i = std::to_string(shard.index);
  if (i.size() < n.size()) i = std::string(n.size() - i.size(), '0') + i;
  const size_t dot = zip_path.rfind('.');
  const size_t slash = zip_path.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  const std::string stem = has_ext ? zip_path.substr(0, dot) : zip_path;
  const std::string ext = has_ext ? zip_path.substr(dot) : std::string();
  return stem + "-shard" + i + "of" + n + ext;
}

std::optional<int> shard_cuda_ordinal(const Shard& shard, int visible_devices) {
  if (shard.local_rank < 0) return std::nullopt;
  return visible_devices > 0 ? shard.local_rank % visible_devices : shard.local_rank;
}

}  // namespace sg2
