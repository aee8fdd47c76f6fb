// sg2 CPU backend: the persistent thread pool (thread_pool.h).
#include "engine/cpu/thread_pool.h"

#include <sched.h>

#include <cstdlib>
#include <string>

#include "sg2/error.h"
#include "util/text_util.h"

namespace sg2::cpu {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(h);
}

int resolve_threads(int requested) {
  constexpr int kMax = 1024;
  if (requested < 0) fail(ErrorKind::invalid_argument, "CPU threads must be >= 1 (0 = every core), got ", requested);
  if (requested > kMax) fail(ErrorKind::invalid_argument, "CPU threads ", requested, " is more than ", kMax);
  if (requested > 0) return requested;
  if (const char* env = std::getenv("SG2_CPU_THREADS")) {
    const std::string s(env);
    if (!s.empty()) {  // unset or empty: every core
      if (s.size() <= 4 && s.find_first_not_of("0123456789") == std::string::npos) {
        const int n = std::stoi(s);
        if (n >= 1 && n <= kMax) return n;
      }
      fail(ErrorKind::invalid_argument, "SG2_CPU_THREADS='", detail::printable(s), "' is not a thread count in [1, ",
           kMax, "] (unset it for every core)");
    }
  }
  return available_cores();
}

ThreadPool::ThreadPool(int threads, const std::function<void(int)>& init) {
  if (threads < 1) fail(ErrorKind::invalid_argument, "thread pool of ", threads, " threads");
  busy_ = threads;
  workers_.reserve(static_cast<size_t>(threads));
  try {
    for (int w = 0; w < threads; ++w) workers_.emplace_back([this, w, &init] { worker_loop(w, init); });
  } catch (...) {  // could not start a thread: stop the ones that did start
    std::unique_lock<std::mutex> lock(mutex_);
    busy_ -= threads - static_cast<int>(workers_.size());
    done_.wait(lock, [&] { return busy_ == 0; });
    stop_ = true;
    lock.unlock();
    wake_.notify_all();
    for (auto& t : workers_) t.join();
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
