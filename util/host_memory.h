// sg2 util: how much host memory this process may still use — the machine's MemAvailable, and
// every memory limit of the control groups the process is in (cgroup v2 at each level of its
// path, as Slurm and systemd nest them; cgroup v1's memory controller), whichever is tightest.
#pragma once

#include <cstdint>
#include <string>

namespace sg2::detail {

/// Bytes of host memory available to this process: min(MemAvailable of /proc/meminfo, for each
/// cgroup limit on the process's path: limit - usage), or -1 when none of them can be read.
/// cgroup v2: memory.max - memory.current of the process's cgroup (from /proc/self/cgroup's
/// "0::/path") and of every parent up to the root of the v2 mount. cgroup v1: the memory
/// controller's memory.limit_in_bytes - memory.usage_in_bytes of the process's cgroup and its
/// parents ("N:memory:/path"; a limit of 2^63-ish or "max" means none).
int64_t host_memory_available();

/// The same, reading the files below `root` instead of "/" (tests give a fake tree:
/// root/proc/meminfo, root/proc/self/cgroup, root/sys/fs/cgroup/...).
int64_t host_memory_available(const std::string& root);

}  // namespace sg2::detail
