// sg2 CUDA backend: move-only owners of device memory, streams, events, graphs and the cuDNN
// handle, and a guard that selects a device for a scope. Errors throw sg2::Error (kernels/cuda_check.h,
// cuda/cudnn_check.h).
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/cuda/cudnn_check.h"

namespace sg2::cuda {

/// Counts the bytes of device memory the backend holds (current and high-water mark).
/// `limit` (bytes, 0 = none) makes allocations beyond it fail as out of memory: a testing hook
/// (CudaOptions::memory_limit_bytes, engine/cuda/options.h) for the batch-splitting path.
struct MemoryStats {
  size_t current = 0;
  size_t peak = 0;
  size_t limit = 0;
  void add(size_t n) {
    current += n;
    if (current > peak) peak = current;
  }
  void sub(size_t n) { current -= n; }
  void reset_peak() { peak = current; }
};

/// cudaMalloc'd bytes, freed on destruction. Out of memory throws Error(out_of_memory).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, MemoryStats* stats) : stats_(stats) {
    if (bytes == 0) return;
    if (stats_ && stats_->limit && stats_->current + bytes > stats_->limit)
      fail(ErrorKind::out_of_memory, "device memory limit of ", stats_->limit, " bytes reached (", stats_->current,
           " held, ", bytes, " more asked)");
    SG2_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    bytes_ = bytes;
    if (stats_) stats_->add(bytes_);
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      stats_ = o.stats_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }

  void release() noexcept {
    if (ptr_) {
      cudaFree(ptr_);  // never throws from a destructor; errors surface at the next checked call
      if (stats_) stats_->sub(bytes_);
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  MemoryStats* stats_ = nullptr;
};

/// Pinned host memory (cudaMallocHost), for fast uploads and downloads.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes) {
    if (bytes) SG2_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
    bytes_ = bytes;
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// A non-blocking stream.
class Stream {
 public:
  Stream() { SG2_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { SG2_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { SG2_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) const { SG2_CUDA_CHECK(cudaEventRecord(e_, s)); }
  /// Milliseconds from `start` to this event (both completed).
  float since(const Event& start) const {
    float ms = 0;
    SG2_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

/// An instantiated CUDA graph.
class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraph_t graph) {
    const cudaError_t e = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) throw_cuda_error(e, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  ~GraphExec() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& o) noexcept {
    std::swap(exec_, o.exec_);
    return *this;
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  explicit operator bool() const { return exec_ != nullptr; }
  void launch(cudaStream_t s) const { SG2_CUDA_CHECK(cudaGraphLaunch(exec_, s)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

/// A cuDNN handle bound to one stream.
class CudnnHandle {
 public:
  explicit CudnnHandle(cudaStream_t s) {
    SG2_CUDNN_CHECK(cudnnCreate(&h_));
    SG2_CUDNN_CHECK(cudnnSetStream(h_, s));
  }
  ~CudnnHandle() {
    if (h_) cudnnDestroy(h_);
  }
  CudnnHandle(CudnnHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CudnnHandle& operator=(CudnnHandle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

/// Makes `device` current for the scope and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    SG2_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) SG2_CUDA_CHECK(cudaSetDevice(device));
    changed_ = prev_ != device;
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
  bool changed_ = false;
};

/// Uploads a host vector into a new device buffer.
template <typename T>
DeviceBuffer upload(const std::vector<T>& v, MemoryStats* stats, cudaStream_t s) {
  DeviceBuffer b(v.size() * sizeof(T), stats);
  if (!v.empty()) SG2_CUDA_CHECK(cudaMemcpyAsync(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s));
  return b;
}

}  // namespace sg2::cuda
