// sg2 CUDA backend: one convolution of the synthesis network (NHWC activations, KRSC filters) and
// the table that chooses its implementation.
//
//   forward:    3x3 pad 1 (conv1) or 1x1 pad 0 (resnet skip), stride 1, correlation
//   transposed: the up-sampling conv0's stride-2 transposed conv (cuDNN: backward data of a
//               stride-2 forward conv whose filter is [Cin, k, k, Cout])
//
// Arithmetic (ConvMath): fp32_strict = float32-accurate (never plain TF32): the 3xTF32 tensor-core
// kernel, the SIMT implicit GEMM, cuDNN with CUDNN_FMA_MATH only; tf32 = fp32 data on TF32 tensor
// cores; fp16 = half data, fp32 accumulation. Only deterministic algorithms (no FFT), and fp32 data
// is never converted to fp16. Tensors over 2^31 elements are split along the batch for cuDNN.
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/device_caps.h"
#include "cuda/tuning.h"
#include "kernels/dtype.h"

namespace sg2::cuda {

enum class ConvMath { fp32_strict, tf32, fp16 };

/// The implementations of a convolution.
enum class ConvImpl {
  tf32x3,  ///< kernels/conv2d_tf32x3.h: fp32-accurate on tensor cores (wgmma on Hopper, else mma.sync)
  simt,    ///< kernels/conv2d_simt.h: strict fp32 implicit GEMM on the FMA pipes
  cudnn,   ///< cuDNN: the deterministic algorithms of its heuristic, in its order
  direct,  ///< kernels/conv2d.h: every shape and dtype, slowest (the fallback when nothing else runs)
};
const char* to_string(ConvImpl impl);

struct ConvShape {
  int N = 0, H = 0, W = 0;  // input
  int Cin = 0, Cout = 0;
  int k = 3;
  int pad = 1;              // forward only
  bool transposed = false;  // stride-2 transposed conv (pad 0)
  DType dtype = DType::f32;
  int out_h() const { return transposed ? 2 * H + k - 2 : H + 2 * pad - k + 1; }
  int out_w() const { return transposed ? 2 * W + k - 2 : W + 2 * pad - k + 1; }
};

/// The selection table, in one place: the implementations to try for a convolution of `s` in
/// `math` on this device, best first; Conv::select takes the first that runs (the direct kernel
/// when none does).
///   fp32_strict: tf32x3 (where the device runs it — sm_80+ with ~108 KiB shared memory per block
///                — Cin, Cout multiples of 32, 3x3, and SG2_FP32_CONV unset), then simt before
///                cudnn for outputs of 128 px and more, or 64 px and more at batches under 8
///                (measured faster there on an H200; docs/performance-notes.md run 3), else cudnn
///                then simt; SG2_FP32_CONV=simt: simt first, no tf32x3; =cudnn: cudnn only.
///   tf32, fp16:  cudnn.
///   SG2_CONV=direct: direct only.
std::vector<ConvImpl> conv_candidates(const ConvShape& s, ConvMath math, const DeviceCaps& caps, const CudaTuning& tuning);

class Conv {
 public:
  /// Describes the convolution and lists its candidates (conv_candidates; cuDNN's heuristic for
  /// the cudnn entry). No device work.
  Conv(cudnnHandle_t handle, const ConvShape& shape, ConvMath math, const DeviceCaps& caps, const CudaTuning& tuning,
       size_t workspace_limit);
  ~Conv();
  Conv(const Conv&) = delete;
  Conv& operator=(const Conv&) = delete;

  /// Largest workspace any candidate needs (allocate this much before select()).
  size_t max_candidate_workspace() const { return max_workspace_; }
  /// Runs the candidates in order on the given buffers until one succeeds (results are
  /// overwritten later); if none does, the direct kernel is used. Synchronizes `stream`.
  void select(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes, cudaStream_t stream);
  /// Workspace of the selected implementation.
  size_t workspace() const;
  /// y = conv(x, w). x, y: NHWC; w: KRSC (forward [Cout,k,k,Cin], transposed [Cin,k,k,Cout]).
  void run(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes, cudaStream_t stream) const;
  /// The filter split for the 3xTF32 kernel (hi, lo: packed [Cout, 3, 3, Cin] by tf32x3_pack_weights).
  /// Without them that kernel is not tried. Call before select().
  void set_split_weights(const float* w_hi, const float* w_lo) {
    w_hi_ = w_hi;
    w_lo_ = w_lo;
  }
  /// The implementation select() chose.
  ConvImpl impl() const;
  /// "cudnn fwd algo 1 (tensor op, workspace 0 MiB)", "3xtf32 ... (wgmma, split-k 2)", "direct kernel"
  std::string describe() const;

 private:
  struct Part;  // cuDNN descriptors for one batch chunk
  void add_cudnn_candidates(size_t workspace_limit);
  bool try_run(int candidate, const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) const;

  cudnnHandle_t handle_;
  ConvShape shape_;
  ConvMath math_;
  DeviceCaps caps_;
  CudaTuning tuning_;
  int chunk_ = 0;  // samples per cuDNN call
  std::vector<std::unique_ptr<Part>> parts_;  // [0]: chunk_ samples, [1]: the remainder (if any)
  struct Candidate {
    ConvImpl impl;
    int cudnn_algo;             // cudnn only
    cudnnMathType_t cudnn_math; // cudnn only
    size_t workspace;
  };
  std::vector<Candidate> candidates_;
  size_t max_workspace_ = 0;
  int tf32x3_splits_ = 1;  // split-K of the 3xTF32 kernel
  const float* w_hi_ = nullptr;
  const float* w_lo_ = nullptr;
  int selected_ = -1;  // index into candidates_, -1: direct kernel
  bool selected_set_ = false;
};

}  // namespace sg2::cuda
