// sg2 CUDA kernels: the fused epilogue of a stride-1 modulated conv (conv1, b4.conv1), with the
// block's ToRGB and the skip image path riding on it (official SynthesisLayer.forward after the
// convolution, ToRGBLayer.forward, SynthesisBlock's `img = upsample2d(img) + y`; spec §2.3-§2.6).
//
// Per pixel and channel c of the conv output y (modulated input, shared weight):
//   v = y * dcoefs[n, c] + noise_strength * noise[n?, p] + bias[c]
//   v = clamp(lrelu(v) * gain, +-clamp)                         (bias_act; see common.cuh)
//   v = v + residual[n, p, c]                                   (resnet: the skip branch)
//   out[n, p, c] = v * out_scale[n, c]      (the next conv's input styles; its dtype)
//   raw[n, p, c] = v                        (optional: dumps, the resnet skip input)
// and, when img_channels > 0 (ToRGB, modulated 1x1 conv without demodulation, linear, clamp):
//   img[n, k, p] = upsample2d(img_prev)[n, k, p]
//                + clamp(sum_c v[c] * (rgb_weight[k, c] * rgb_styles[n, c]) + rgb_bias[k], +-rgb_clamp)
// upsample2d = upfirdn2d(up 2, pad ((f+1)/2, (f-2)/2), gain 4) with the resample filter (§4).
// Layouts: activations NHWC, images NCHW fp32, everything else fp32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.h"

namespace sg2::cuda {

struct EpilogueArgs {
  int N = 0, H = 0, W = 0, C = 0;
  DType y_dtype = DType::f32;
  const void* y = nullptr;        // [N, H, W, C] conv output, device
  const float* dcoefs = nullptr;  // [N, dcoefs_stride] output coefficients (channel 0 first), or null (1)
  int dcoefs_stride = 0;
  const float* noise = nullptr;  // [N or 1, H, W] fp32, or null (no noise)
  int64_t noise_stride_n = 0;    // 0: one map broadcast over the batch
  float noise_strength = 0.0f;
  const float* bias = nullptr;  // [C], or null
  bool lrelu = true;
  float gain = 1.0f;                // act gain (skipped when 1)
  float clamp = -1.0f;              // < 0: no clamp
  const float* residual = nullptr;  // [N, H, W, C] fp32, or null
  DType out_dtype = DType::f32;
  void* out = nullptr;               // [N, H, W, C], or null
  const float* out_scale = nullptr;  // [N, out_scale_stride], or null (1)
  int out_scale_stride = 0;
  void* raw = nullptr;  // [N, H, W, C] in out_dtype, or null
  // fused ToRGB
  int img_channels = 0;               // 0: none
  const float* rgb_weight = nullptr;  // [img_channels, C] (raw; the styles carry 1/sqrt(C))
  const float* rgb_styles = nullptr;  // [N, rgb_styles_stride]
  int rgb_styles_stride = 0;
  const float* rgb_bias = nullptr;  // [img_channels]
  float rgb_clamp = -1.0f;
  const float* img_prev = nullptr;  // [N, img_channels, H/2, W/2], or null
  float* img = nullptr;             // [N, img_channels, H, W]
  const float* filter = nullptr;    // [fsize, fsize] resample filter (sums to 1), device
  int fsize = 0;
  // launch: the shared-table kernel where the shape allows it (false: always the general kernel,
  // for A/B measurements); the result is the same either way
  bool shared_tables = true;
  // the device's SMs (DeviceCaps::sm_count): the fused conv1's persistent grid; 0: one block per tile
  int num_sms = 0;
};

void conv_epilogue(const EpilogueArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
