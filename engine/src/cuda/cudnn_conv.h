// sg2 CUDA backend: one convolution of the synthesis network through cuDNN (NHWC activations,
// KRSC filters), with the algorithm chosen once per shape by trying cuDNN's heuristic candidates
// on the real buffers; falls back to the direct kernel (kernels/conv2d.h) when cuDNN takes none.
//
//   forward:    3x3 pad 1 (conv1) or 1x1 pad 0 (resnet skip), stride 1, correlation
//   transposed: the up-sampling conv0's stride-2 transposed conv, computed as cuDNN's backward
//               data of a stride-2 forward conv whose filter is [Cin, k, k, Cout]
//
// Precision: fp32_strict = fp32-accurate: cuDNN with CUDNN_FMA_MATH only (no TF32), the SIMT
// implicit GEMM (kernels/conv2d_simt.h), and first of all the 3xTF32 implicit GEMM with
// round-to-nearest accumulation (kernels/conv2d_tf32x3.h: tensor cores, fp32 accuracy, measured);
// tf32 = fp32 data on tensor cores (one TF32 rounding per operand); fp16 = half data, fp32
// accumulation. Only deterministic algorithms are used (no FFT), and fp32 data is never converted
// to fp16. SG2_FP32_CONV=simt: FMA pipes only (SIMT first), =cudnn: cuDNN's FMA algorithms only.
// Tensors over 2^31 elements are split along the batch.
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace sg2::cuda {

enum class ConvMath { fp32_strict, tf32, fp16 };

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

/// Whether the 3xTF32 kernel (kernels/conv2d_tf32x3.h) can serve a strict-fp32 3x3 convolution of
/// these channels on the current device: sm_80+, enough shared memory per block, Cin and Cout
/// multiples of 32, and SG2_FP32_CONV not set to simt or cudnn.
bool tf32x3_usable(int cin, int cout);

class CudnnConv {
 public:
  /// Describes the convolution and asks cuDNN for candidates (no device work).
  CudnnConv(cudnnHandle_t handle, const ConvShape& shape, ConvMath math, size_t workspace_limit);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  /// Largest workspace any candidate needs (allocate this much before select()).
  size_t max_candidate_workspace() const { return max_ws_; }
  /// Runs the candidates in cuDNN's order on the given buffers until one succeeds (results are
  /// overwritten later); if none does, the direct kernel is used. Synchronizes `stream`.
  void select(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes, cudaStream_t stream);
  /// Workspace of the selected algorithm.
  size_t workspace() const;
  /// y = conv(x, w). x, y: NHWC; w: KRSC (forward [Cout,k,k,Cin], transposed [Cin,k,k,Cout]).
  void run(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes, cudaStream_t stream) const;
  /// The filter split for the 3xTF32 kernel (hi, lo: packed [Cout, 3, 3, Cin] by tf32x3_pack_weights).
  /// Without them (or for other math) that kernel is not a candidate. Call before select().
  void set_split_weights(const float* w_hi, const float* w_lo) {
    w_hi_ = w_hi;
    w_lo_ = w_lo;
  }
  /// "cudnn fwd algo 1 (tensor op)" / "direct"
  std::string describe() const;

 private:
  struct Part;  // descriptors for one batch chunk
  bool try_run(int candidate, const void* x, const void* w, void* y, void* ws, size_t ws_bytes,
               cudaStream_t stream) const;

  cudnnHandle_t handle_;
  ConvShape shape_;
  ConvMath math_;
  int chunk_ = 0;  // samples per cuDNN call
  std::vector<std::unique_ptr<Part>> parts_;  // [0]: chunk_ samples, [1]: the remainder (if any)
  struct Candidate {
    int algo;
    cudnnMathType_t math;
    size_t ws;
  };
  std::vector<Candidate> candidates_;
  size_t max_ws_ = 0;
  int tc_splits_ = 1;  // split-K of the 3xTF32 kernel
  const float* w_hi_ = nullptr;
  const float* w_lo_ = nullptr;
  int selected_ = -1;  // index into candidates_, -1: direct kernel
  bool selected_set_ = false;
};

}  // namespace sg2::cuda
