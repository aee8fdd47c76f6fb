// sg2 internal: the free/in-use bookkeeping of a pipe's slots (batch_pipe.h), shared by the host and
// CUDA pipes. acquire() blocks until a slot is free; release() frees one from any thread.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

#include "sg2/error.h"

namespace sg2 {

class SlotRing {
 public:
  explicit SlotRing(int n) : used_(static_cast<size_t>(n), false) {}
  int size() const { return static_cast<int>(used_.size()); }
  /// A free slot, marked in use (blocks while none is free). Throws Error(internal) once cancel()
  /// was called (a stopping stream must not wait for slots its consumer will never free).
  int acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (cancelled_) fail(ErrorKind::internal, "the stream was stopped");
      for (size_t i = 0; i < used_.size(); ++i)
        if (!used_[i]) {
          used_[i] = true;
          return static_cast<int>(i);
        }
      cv_.wait(lock);
    }
  }
  /// Whether acquire() would return at once (only the acquiring thread can make this false).
  bool any_free() {
    std::lock_guard<std::mutex> lock(mu_);
    for (bool u : used_)
      if (!u) return true;
    return false;
  }
  void cancel() noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
  }
  void release(int id) noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (id >= 0 && static_cast<size_t>(id) < used_.size()) used_[static_cast<size_t>(id)] = false;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> used_;
  bool cancelled_ = false;
};

}  // namespace sg2
