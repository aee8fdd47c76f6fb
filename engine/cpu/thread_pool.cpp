// sg2 CPU backend: the persistent thread pool (thread_pool.h).
#include "engine/cpu/thread_pool.h"

#include <string>
#include <system_error>

#include "sg2/error.h"
#include "util/text_util.h"

namespace sg2::cpu {

ThreadPool::ThreadPool(int threads, const std::function<void(int)>& init) {
  if (threads < 1) fail(ErrorKind::invalid_argument, "thread pool of ", threads, " threads");
  busy_ = threads;
  workers_.reserve(static_cast<size_t>(threads));
  try {
    for (int w = 0; w < threads; ++w) workers_.emplace_back([this, w, &init] { worker_loop(w, init); });
  } catch (const std::system_error& e) {  // could not start a thread: stop the ones that did start
    const int started = static_cast<int>(workers_.size());
    stop_started(threads - started);
    fail(ErrorKind::io, "could not start CPU thread ", started + 1, " of ", threads, " (", e.code().message(),
         ": the process's limit on threads or memory): use ",
         started > 1 ? "at most " + std::to_string(started) : "fewer", " threads");
  } catch (...) {
    stop_started(threads - static_cast<int>(workers_.size()));
    throw;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });  // every init has run (init is referenced until then)
  if (error_) {
    std::exception_ptr e = error_;
    stop_ = true;
    lock.unlock();
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    std::rethrow_exception(e);
  }
}

void ThreadPool::stop_started(int never_started) {
  std::unique_lock<std::mutex> lock(mutex_);
  busy_ -= never_started;
  done_.wait(lock, [&] { return busy_ == 0; });
  stop_ = true;
  lock.unlock();
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int w, const std::function<void(int)>& init) {
  try {
    if (init) init(w);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  if (--busy_ == 0) done_.notify_all();
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const auto* fn = fn_;
    const int64_t units = units_;
    for (;;) {
      if (next_ >= units) break;
      const int64_t u = next_++;
      lock.unlock();
      try {
        (*fn)(u, w);
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        next_ = units;
        continue;
      }
      lock.lock();
    }
    if (--busy_ == 0) done_.notify_all();
  }
}

void ThreadPool::run(int64_t units, const std::function<void(int64_t, int)>& fn) {
  if (units <= 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  fn_ = &fn;
  units_ = units;
  next_ = 0;
  error_ = nullptr;
  busy_ = size();
  ++generation_;
  lock.unlock();
  wake_.notify_all();
  lock.lock();
  done_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace sg2::cpu
