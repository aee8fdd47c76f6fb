// sg2 CUDA kernels: the fused epilogue of the up-sampling conv (conv0): the FIR filter that follows
// the stride-2 transposed convolution, then the layer's pointwise epilogue
// (official conv2d_resample up=2 path: conv_transpose2d, then upfirdn2d(pad (p0, p1), gain 4);
// then SynthesisLayer's noise and bias_act; spec §3.4; CPU reference
// kernels/ref/modulated_conv2d.cpp and upfirdn2d.cpp).
//
// t is the transposed-conv output [N, TH, TW, C] (TH = H + 1 for a 3x3 kernel). For output pixel
// (y, x) and channel c:
//   u = sum_{i,j} t[y + i - pad0, x + j - pad0, c] * g[i, j]   (zero outside t),
//       g[i, j] = filter[f-1-i, f-1-j] * 4  (the FIR convolves; gain up^2 = 4)
//   v = clamp(lrelu(u * dcoefs[n, c] + noise_strength * noise[n?, y, x] + bias[c]) * gain, +-clamp)
//   out[n, y, x, c] = v * out_scale[n, c];  raw = v (optional)
// The FIR commutes with the per-channel demodulation, so applying dcoefs after it is exact.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.h"

namespace sg2::cuda {

struct UpEpilogueArgs {
  int N = 0, H = 0, W = 0, C = 0;  // output
  int TH = 0, TW = 0;              // transposed-conv output size
  int pad0 = 0;                    // leading FIR pad ((f+1)/2 - 1 for a 3x3 kernel)
  DType t_dtype = DType::f32;
  const void* t = nullptr;          // [N, TH, TW, C] device
  const float* filter = nullptr;    // [fsize, fsize] resample filter (sums to 1), device
  int fsize = 0;                    // 2..8
  const float* filter1d = nullptr;  // [fsize] 1-D taps, filter = outer(filter1d, filter1d) (separable), or null
  const float* dcoefs = nullptr;    // [N, dcoefs_stride], or null (1)
  int dcoefs_stride = 0;
  const float* noise = nullptr;  // [N or 1, H, W] fp32, or null
  int64_t noise_stride_n = 0;
  float noise_strength = 0.0f;
  const float* bias = nullptr;  // [C], or null
  bool lrelu = true;
  float gain = 1.0f;
  float clamp = -1.0f;
  DType out_dtype = DType::f32;
  void* out = nullptr;               // [N, H, W, C]
  const float* out_scale = nullptr;  // [N, out_scale_stride], or null
  int out_scale_stride = 0;
  void* raw = nullptr;  // [N, H, W, C] in out_dtype, or null
  /// The device's SMs (DeviceCaps::sm_count): fewer rows per block where the grid would not fill
  /// them 16 times (32 for the fp16 kernel's two-warp blocks; the same sums at every height); 0: the
  /// tallest blocks.
  int num_sms = 0;
  /// Columns per thread of the separable fp16 kernel: 0 the kernel's choice (4 where W % 4 == 0),
  /// 2 forces the two-column kernel (tests compare the two bit for bit).
  int sep_columns = 0;
};

void upconv_epilogue(const UpEpilogueArgs& a, cudaStream_t stream);

/// Whether upconv_epilogue takes its four-column fp16 kernel for `a` (fp16 t, C % 8 == 0, W % 4 == 0,
/// the separable 4-tap FIR, lrelu, an out buffer, 16-byte aligned buffers, sep_columns not 2; else the
/// two-column kernel, or the 2-D one without filter1d). For tests.
bool upconv_epilogue_f16_supports(const UpEpilogueArgs& a);

}  // namespace sg2::cuda
