// sg2 CLI: the worker pool (task_pool.h).
#include "task_pool.h"

#include <sched.h>

#include <chrono>

namespace sg2::cli {

TaskPool::TaskPool(int threads, size_t max_queued) : max_queued_(max_queued < 1 ? 1 : max_queued) {
  const int n = threads < 1 ? 1 : threads;
  workers_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { run(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  has_task_.notify_all();
  has_room_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void TaskPool::submit(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  has_room_.wait(lock, [&] { return queue_.size() < max_queued_ || error_ || stopping_; });
  if (error_) std::rethrow_exception(error_);
  queue_.push_back(std::move(task));
  lock.unlock();
  has_task_.notify_one();
}

void TaskPool::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return (queue_.empty() && running_ == 0) || error_; });
  if (error_) {
    queue_.clear();
    idle_.wait(lock, [&] { return running_ == 0; });
    std::rethrow_exception(error_);
  }
}

double TaskPool::busy_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_s_;
}

void TaskPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      has_task_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (stopping_ && queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    has_room_.notify_one();
    const auto t0 = std::chrono::steady_clock::now();
    std::exception_ptr err;
    try {
      task();
    } catch (...) {
      err = std::current_exception();
    }
    task = nullptr;  // release what the task held before reporting idle
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_s_ += dt;
      --running_;
      if (err && !error_) {
        error_ = err;
        queue_.clear();
      }
    }
    idle_.notify_all();
    has_room_.notify_all();
  }
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h > 0 ? static_cast<int>(h) : 1;
}

}  // namespace sg2::cli
