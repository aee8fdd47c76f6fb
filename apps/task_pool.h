// sg2 CLI: a fixed pool of worker threads fed from a bounded queue (the PNG/npy encoders of
// `sg2 generate`). The first task that throws stops the pool: later tasks are dropped, and the error
// is rethrown on the caller's thread by submit() or finish().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sg2::cli {

class TaskPool {
 public:
  /// `threads` workers (>= 1); submit() blocks while `max_queued` tasks wait.
  TaskPool(int threads, size_t max_queued);
  /// Drops the tasks not started yet and joins the workers (call finish() to wait for them).
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  /// Queues a task. Throws the first error of an earlier task instead.
  void submit(std::function<void()> task);
  /// Waits until every queued task has run, then rethrows the first error, if any.
  void finish();
  /// Seconds the workers spent in tasks, summed over workers.
  double busy_seconds() const;
  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  void run();
  mutable std::mutex mu_;
  std::condition_variable has_task_, has_room_, idle_;
  std::deque<std::function<void()>> queue_;
  size_t max_queued_;
  int running_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  double busy_s_ = 0;
  std::vector<std::thread> workers_;
};

/// The number of cores this process may run on (sched_getaffinity; at least 1).
int available_cores();

}  // namespace sg2::cli
