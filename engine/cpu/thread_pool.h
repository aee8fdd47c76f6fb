// sg2 CPU backend: a persistent pool of worker threads. The threads start once, with the backend,
// and every parallel phase of a forward pass reuses them (no thread is created per call).
//
// Work is split into units that the caller defines from the model alone (for example one sample
// times one band of output rows times one block of output channels), never from the number of
// threads: each unit computes the same bytes whichever worker runs it, so results do not depend on
// the thread count. Units are handed out in increasing order to whichever worker is free.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sg2::cpu {

class ThreadPool {
 public:
  /// Starts `threads` (>= 1) workers; `init(worker)` runs first on each worker thread (the
  /// per-thread setup of the math library). The constructor returns once every init has run;
  /// the first exception an init throws is rethrown here. A thread that cannot be started (the
  /// process's thread or memory limit) stops the ones that did and throws Error(resource)
  /// "could not start CPU thread K of N (reason): ..." with a hint to use fewer threads.
  ThreadPool(int threads, const std::function<void(int worker)>& init);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  /// Calls fn(unit, worker) for every unit in [0, units) on the workers (worker in [0, size())
  /// names the thread, for its scratch memory) and returns when all are done; the calling thread
  /// only waits. After an exception the remaining units are skipped and the first exception is
  /// rethrown. Not reentrant: one run at a time.
  void run(int64_t units, const std::function<void(int64_t unit, int worker)>& fn);

 private:
  void stop_started(int never_started);  // joins the workers that started (constructor failure)
  void worker_loop(int w, const std::function<void(int)>& init);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  int busy_ = 0;  // workers still in the current generation (or still initialising)
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t units_ = 0;
  int64_t next_ = 0;
  std::exception_ptr error_;
};

}  // namespace sg2::cpu
