// sg2 util: how many CPU threads to use — one rule for the oneDNN backend's pool and the
// reference ops' parallel_for (SG2_CPU_THREADS is read and checked here only).
#pragma once

namespace sg2::detail {

/// The most threads any CPU part of sg2 starts.
constexpr int kMaxCpuThreads = 1024;

/// Cores this process may run on (sched_getaffinity; hardware_concurrency as a fallback), >= 1.
int available_cores();

/// `requested` when > 0; else SG2_CPU_THREADS when set and not empty; else available_cores().
/// Error(invalid_argument): requested < 0 or > kMaxCpuThreads ("CPU threads ..."), or
/// SG2_CPU_THREADS not an integer in [1, kMaxCpuThreads] (the message names the variable and
/// quotes its value, escaped).
int cpu_thread_count(int requested = 0);

}  // namespace sg2::detail
