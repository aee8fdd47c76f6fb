// sg2 CUDA kernels: demodulation coefficients in closed form and the input style scales of every
// modulated conv layer (official modulated_conv2d, spec §3.1 and the fp16 pre-normalization of
// §3.3; CPU reference kernels/ref/modulated_conv2d.h demod_coefficients).
//
// The convolutions run with activations modulated by the styles and a shared weight
// ("modulate activations, not weights"): conv(x * s, W) * d == conv(x, W * s * d). So per layer:
//   d[n, o]   = 1 / sqrt(sum_i s[n, i]^2 * Q[o, i] + 1e-8),  Q[o, i] = sum_k W[o, i, k]^2,
// from the fp32 styles and fp32 Q. In an fp16 layer the activations are scaled by s / max|s|
// and the weight rows by 1 / (sqrt(Cin k^2) max|W[o]|) (both keep fp16 in range); the inverse
// factors are folded into the output coefficient, so the epilogue multiplies by
//   dcoefs[n, o]  = d[n, o] * max_i|s[n, i]| * w_inv[o]       (w_inv = sqrt(Cin k^2) max|W[o]|).
// In an fp32 layer s_in = s and dcoefs = d.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sg2::cuda {

/// One modulated conv layer's columns in the style and coefficient tables.
struct DemodLayer {
  int s_offset = 0;      ///< first column of its styles in s / s_in [N, S]
  int in_channels = 0;   ///< Cin
  int dcoef_offset = 0;  ///< first column of its coefficients in dcoefs [N, D]
  int out_channels = 0;  ///< Cout
  int64_t q_offset = 0;  ///< its Q [Cout, Cin] in q
  int fp16 = 0;          ///< 1: fp16 pre-normalization (s_in = s / max|s|)
  int reserved = 0;      ///< the padding, named so that it is zero (a model's device bytes are reproducible)
};

struct DemodArgs {
  int N = 0;
  int num_layers = 0;
  const DemodLayer* layers = nullptr;    // [num_layers] device
  int total_out = 0;                     // D = sum of Cout
  const int* layer_of_output = nullptr;  // [D] device: layer index of each column of dcoefs
  const float* s = nullptr;              // [N, S] device fp32 styles (affine output)
  int s_stride = 0;                      // S
  const float* q = nullptr;              // device fp32, every layer's Q
  const float* w_inv = nullptr;          // [D] device fp32 (1 for fp32 layers)
  float* s_in = nullptr;                 // [N, S] device: input scales (conv layers' columns)
  float* smax = nullptr;                 // [N, num_layers] device: max|s| (1 for fp32 layers)
  float* dcoefs = nullptr;               // [N, D] device: output coefficients
};

/// Two launches: the input scales (and max|s|), then the coefficients.
void demodulate(const DemodArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
