// sg2 CUDA backend: one convolution of the synthesis network (NHWC activations, KRSC filters), the
// table that chooses its implementation (choose_conv, called once per model by the recipes), and
// Conv, which runs that choice at one batch size.
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
#include "kernels/dtype.h"

namespace sg2::cuda {

enum class ConvMath { fp32_strict, tf32, fp16 };

/// The implementations of a convolution.
enum class ConvImpl {
  tensor_core,    ///< kernels/tc_conv.h: sg2's implicit GEMM on tensor cores (wgmma on Hopper, else
                  ///< mma.sync) — 3xTF32 for fp32_strict, TF32 for tf32, fp16 for fp16; the transposed
                  ///< conv as four phase GEMMs
  tc_transposed,  ///< kernels/tc_tconv.h: the transposed conv as one GEMM per tile of cells (wgmma on
                  ///< Hopper, else mma.sync; tf32 and fp16)
  simt,           ///< kernels/conv2d_simt.h: strict fp32 implicit GEMM on the FMA pipes
  cudnn,          ///< cuDNN: the deterministic algorithms of its heuristic, in its order
  direct,         ///< kernels/conv2d.h: every shape and dtype, slowest (the fallback when nothing else runs)
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

/// How one convolution runs: decided once per model, precision and device by the block's recipe
/// (recipe.h make_recipes, through choose_conv), never from the batch size when batch-invariant.
struct ConvChoice {
  ConvImpl impl = ConvImpl::direct;
  /// cudnn: what runs when none of cuDNN's algorithms runs (the batch-invariant choice).
  ConvImpl fallback = ConvImpl::direct;
  bool wgmma = false;             ///< tensor_core, tc_transposed: the Hopper (wgmma) implementation, else mma.sync
  int splits = 1;                 ///< tensor_core: split-K factor, chosen for one image
  bool splits_per_batch = false;  ///< tensor_core, batch invariance off: split-K tuned to each batch
  /// Whether the filter must be packed for the tensor-core kernel (tc_conv's layout) or the
  /// transposed-conv kernel's (tc_tconv_pack_weights).
  bool needs(ConvImpl i) const { return impl == i || (impl == ConvImpl::cudnn && fallback == i); }
};

/// THE selection table, in one place: how a convolution of `one_image` (N = 1) runs in `math` on
/// this device. Batch-invariant (the default): transposed convs on tc_transposed (Cin % 64 fp16 /
/// % 32 tf32 and fp32_strict, Cout % 32; wgmma where the device has it, in every precision, else in
/// fp16 and tf32 mma.sync on sm_80+ with 60 or 96 KiB of shared memory per block where a tile has
/// 64 cells or more: inputs of 7 x 7 and up); else tensor_core where the
/// device runs it (sm_80+ with the kernel's shared memory per block; wgmma on Hopper where Cout %
/// 64), 3x3, Cin a multiple of 32 (64 for fp16) and Cout of 32, split-K from a time estimate for
/// one image (the resnet skip's 1x1, pad 0, too: mma.sync, one tap); fp32_strict: then simt (3x3,
/// Cin % 8, Cout % 32); then direct (every shape: odd channel counts, the 1x1 elsewhere). batch_invariant false: cuDNN
/// first in tf32 and fp16 (the choice above as its fallback), in fp32 the choice above with split-K tuned to the batch,
/// and cuDNN instead of the direct kernel.
ConvChoice choose_conv(const ConvShape& one_image, ConvMath math, const DeviceCaps& caps, bool batch_invariant);

class Conv {
 public:
  /// The convolution of `shape` (at its batch size N) as `choice` says. For cuDNN, lists the
  /// deterministic algorithms of its heuristic for this batch (`handle` may be null when `choice`
  /// is not cuDNN; Error(internal) if it is). No device work.
  Conv(cudnnHandle_t handle, const ConvShape& shape, ConvMath math, const ConvChoice& choice, const DeviceCaps& caps,
       size_t workspace_limit);
  ~Conv();
  Conv(const Conv&) = delete;
  Conv& operator=(const Conv&) = delete;

  /// Largest workspace any candidate needs (allocate this much before select()).
  size_t max_candidate_workspace() const { return max_workspace_; }
  /// Takes the first candidate that runs on the given buffers (results are overwritten later):
  /// cuDNN's algorithms in its order, then the choice's own kernel (or its fallback); the direct
  /// kernel when none does. Synchronizes `stream`. sg2's kernels need the packed filter first.
  void select(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes, cudaStream_t stream);
  /// Workspace of the selected implementation.
  size_t workspace() const;
  /// y = conv(x, w). x, y: NHWC; w: KRSC (forward [Cout,k,k,Cin], transposed [Cin,k,k,Cout]).
  void run(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes, cudaStream_t stream) const;
  /// The filter in the tensor-core kernel's layout, packed [Cout, k, k, Cin]: fp32_strict its TF32
  /// hi and lo parts (tf32x3_pack_weights), tf32 the hi part alone, fp16 the fp16 weights (w_lo
  /// null). Call before select().
  void set_packed_weights(const void* w_hi, const float* w_lo) {
    w_hi_ = w_hi;
    w_lo_ = w_lo;
  }
  /// The filter in the transposed-conv kernel's layout (tc_tconv_pack_weights; fp32_strict: its
  /// TF32 heads in w and tails in w_lo, tf32x3_split_weights). Call before select().
  void set_tconv_weights(const void* w, const float* w_lo = nullptr) {
    w_tconv_ = w;
    w_tconv_lo_ = w_lo;
  }
  /// The implementation select() chose.
  ConvImpl impl() const;
  /// "cudnn fwd algo 1 (tensor op, workspace 0 MiB)", "tensor-core implicit gemm, 3xtf32 ... (wgmma,
  /// split-k 2)", "direct kernel"
  std::string describe() const;

  /// The kernel runner's view (dev/kernel_bench.cpp): the candidates select() would try, in order.
  int candidate_count() const { return static_cast<int>(candidates_.size()); }
  std::string describe_candidate(int i) const;
  /// Runs candidate i; false when it refuses (workspace, arguments).
  bool run_candidate(int i, const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream) const {
    return try_run(i, x, w, y, workspace, workspace_bytes, stream);
  }

 private:
  struct Part;  // cuDNN descriptors for one batch chunk
  void add_cudnn_candidates(size_t workspace_limit);
  void add_own_candidate(ConvImpl impl, size_t workspace_limit);
  bool try_run(int candidate, const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) const;

  cudnnHandle_t handle_;
  ConvShape shape_;
  ConvMath math_;
  ConvChoice choice_;
  DeviceCaps caps_;
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
  int tc_splits_ = 1;  // split-K of the tensor-core kernel
  int tc_chunk_ = 1;   // images per tensor-core launch (all, unless the split-K partials would not fit)
  const void* w_hi_ = nullptr;
  const float* w_lo_ = nullptr;
  const void* w_tconv_ = nullptr;
  const float* w_tconv_lo_ = nullptr;
  int selected_ = -1;  // index into candidates_, -1: direct kernel
  bool selected_set_ = false;
};

}  // namespace sg2::cuda
