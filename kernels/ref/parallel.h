// sg2 CPU reference: a minimal parallel-for over an index range (std::thread).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace sg2::ref {

/// Number of worker threads: env SG2_CPU_THREADS, else every core (detail::cpu_thread_count, read
/// once). Throws Error(invalid_argument) for a bad SG2_CPU_THREADS.
int cpu_threads();

/// Calls fn(i) for every i in [0, n), spread over cpu_threads() threads. Iterations must be
/// independent; results do not depend on the thread count. Rethrows the first exception. When a
/// thread cannot be started (the process's thread or memory limit), the threads that did start
/// (and the calling one) do the work: the same results, later.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  const int threads = static_cast<int>(std::min<int64_t>(cpu_threads(), n));
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (;;) {
      int64_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n);
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // fewer threads: the same results (iterations are independent)
    }
  }
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace sg2::ref
