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

#include "engine/cuda/device_caps.h"
#include "engine/cuda/tuning.h"
#include "kernels/dtype.h"

namespace sg2::cuda {

enum class ConvMath { fp32_strict, tf32, fp16 };

/// The implementations of a convolution.
enum class ConvImpl {
  tensor_core,  ///< kernels/conv2d_tf32x3.h: sg2's implicit GEMM on tensor cores (wgmma on Hopper, else
                ///< mma.sync) — 3xTF32 for fp32_strict, TF32 for tf32, fp16 for fp16
  simt,         ///< kernels/conv2d_simt.h: strict fp32 implicit GEMM on the FMA pipes
  cudnn,        ///< cuDNN: the deterministic algorithms of its heuristic, in its order
  direct,       ///< kernels/conv2d.h: every shape and dtype, slowest (the fallback when nothing else runs)
};

/// Whether an implementation gives every image the same bits whatever the batch size and its
/// position in the batch: sg2's own kernels do (each output's sum runs in an order fixed by the
/// layer's shape alone; the split-K factor is chosen for one image); cuDNN does not (measured on
/// an H200: a fixed algorithm's results change with the batch size, docs/performance-notes.md).
bool batch_invariant(ConvImpl impl);
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
/// when none does). It never depends on the batch size (s.N is ignored), so an image's bits do
/// not either (sg2's own kernels; docs/precision.md, "Batch invariance").
///   every math: tensor_core where the device runs it (sm_80+ with the kernel's shared memory per
///                block; wgmma on Hopper), 3x3, Cin a multiple of 32 (64 for fp16) and Cout of 32;
///   fp32_strict: then simt (3x3, Cin % 8, Cout % 32);
///   then direct (every shape: the resnet skip's 1x1, odd channel counts), all batch-invariant.
///   SG2_CONV=cudnn (tuning.h allow_cudnn): cuDNN before the direct kernel, for shapes sg2's fast
///   kernels do not take (faster there, not batch-invariant); SG2_FP32_CONV=simt: simt first and no
///   tensor_core; SG2_FP32_CONV=cudnn: cuDNN's FMA algorithms only (A/B); SG2_CONV=direct: direct only.
std::vector<ConvImpl> conv_candidates(const ConvShape& s, ConvMath math, const DeviceCaps& caps,
                                      const CudaTuning& tuning);

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
  /// The filter in the tensor-core kernel's layout, packed [Cout, 3, 3, Cin]: fp32_strict its TF32
  /// hi and lo parts (tf32x3_pack_weights), tf32 the hi part alone, fp16 the fp16 weights (w_lo
  /// null). Without it that kernel is not tried. Call before select().
  void set_packed_weights(const void* w_hi, const float* w_lo) {
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
  int chunk_ = 0;                             // samples per cuDNN call
  std::vector<std::unique_ptr<Part>> parts_;  // [0]: chunk_ samples, [1]: the remainder (if any)
  struct Candidate {
    ConvImpl impl;
    int cudnn_algo;              // cudnn only
    cudnnMathType_t cudnn_math;  // cudnn only
    size_t workspace;
  };
  std::vector<Candidate> candidates_;
  size_t max_workspace_ = 0;
  int tc_splits_ = 1;  // split-K of the tensor-core kernel (chosen for one image)
  int tc_chunk_ = 1;   // images per tensor-core launch (all, unless the split-K partials would not fit)
  const void* w_hi_ = nullptr;
  const float* w_lo_ = nullptr;
  int selected_ = -1;  // index into candidates_, -1: direct kernel
  bool selected_set_ = false;
};

}  // namespace sg2::cuda
