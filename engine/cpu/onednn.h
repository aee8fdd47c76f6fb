// sg2 CPU backend: the parts of oneDNN (Debian's libdnnl) that sg2 uses, behind a small interface
// so that no other file includes its headers: direct convolutions (stride 1, no padding) on
// float32 NHWC bands of one sample, and sgemm for the fully connected layers.
//
// Every call runs single-threaded on the calling thread: the backend's own pool supplies the
// parallelism, one unit per call, so the arithmetic of a call never depends on the thread count.
// For that, each pool worker calls onednn_init_worker() first, and primitives are created on a
// worker (oneDNN sizes a primitive's internal parallelism when it is created).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sg2::cpu {

/// Per-thread setup of a pool worker: one OpenMP thread for oneDNN on this thread, and the
/// thread's oneDNN stream. Throws Error(internal) when oneDNN fails.
void onednn_init_worker();

/// "oneDNN 2.6.3 (cpu runtime: OpenMP, ISA: ...)" for messages and benchmarks.
std::string onednn_description();

/// Row-major C[M, N] = A[M, K] * B[K, N] (trans_b: B stored as [N, K]); alpha 1, beta 0.
/// oneDNN's dnnl_sgemm, single-threaded on the calling pool worker. Throws Error(internal).
void sgemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
           float* C, int64_t ldc);

/// One convolution over a band of rows of one sample, stride 1, without padding (the input carries
/// its zero border), float32 NHWC, weights in the primitive's own layout (prepare_weights()):
///   in [in_rows, in_cols, cin] -> out [in_rows - kh + 1, in_cols - kw + 1, cout],
///   out[y, x, o] = sum_{c, ky, kx} in[y + ky, x + kx, c] * w[o, c, ky, kx]   (as torch conv2d).
/// The object is immutable after creation: run() may be called from several workers at once,
/// each with its own scratchpad.
class ConvBand {
 public:
  /// Creates the oneDNN primitive. Call on a pool worker. Throws Error(internal) when oneDNN
  /// refuses the shape.
  ConvBand(int in_rows, int in_cols, int cin, int cout, int kh, int kw);
  ~ConvBand();
  ConvBand(ConvBand&&) noexcept;
  ConvBand& operator=(ConvBand&&) noexcept;

  int out_rows() const { return out_rows_; }
  int out_cols() const { return out_cols_; }
  size_t scratchpad_bytes() const;
  /// oneDNN's name of the implementation it chose ("brgconv:avx512_core", ...).
  std::string implementation() const;
  /// weight [cout, cin, kh, kw] float32 (PyTorch order) -> the primitive's layout. Call on a pool
  /// worker.
  std::vector<float> prepare_weights(const float* weight) const;
  /// in/out as above (dense rows); scratchpad of scratchpad_bytes(). Call on a pool worker.
  void run(const float* in, const float* weights, float* out, void* scratchpad) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int out_rows_ = 0, out_cols_ = 0;
};

}  // namespace sg2::cpu
