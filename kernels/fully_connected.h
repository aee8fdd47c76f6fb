// sg2 CUDA kernels: the mapping network's ops and the affine (style) layers —
// fully_connected, normalize_2nd_moment, and truncation with broadcast to ws
// (official training/networks_stylegan2.py FullyConnectedLayer, normalize_2nd_moment,
// MappingNetwork.forward; CPU reference kernels/ref/fully_connected.h, cpu_backend.cpp).
//
// Results are batch invariant: each output element is computed by one warp in a fixed order,
// whatever the batch size or the sample's position in the batch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sg2::cuda {

enum class FcAct { linear, lrelu, relu };

/// y[n, j] = act(dot(x_row(n, j), weight[j, :] * weight_gain) + bias[j] * bias_gain) * act_gain
///           * out_scale[j]
/// x_row(n, j) = x + n * x_stride_n + (rows ? rows[j] : 0) * x_stride_row, `in_features`
/// contiguous floats. One launch computes every affine layer of the synthesis network at once
/// (rows[j] = the ws row feeding output j). The act gain is skipped when 1, lrelu slope 0.2.
struct FcArgs {
  int N = 0;
  int in_features = 0;
  int out_features = 0;
  const float* x = nullptr;  // device, fp32
  int64_t x_stride_n = 0;
  const int* rows = nullptr;  // [out_features] device, or null
  int64_t x_stride_row = 0;
  const float* weight = nullptr;  // [out_features, in_features] device fp32 (raw, as stored)
  float weight_gain = 1.0f;
  const float* bias = nullptr;  // [out_features] device fp32, or null
  float bias_gain = 1.0f;
  FcAct act = FcAct::linear;
  float act_gain = 1.0f;
  const float* out_scale = nullptr;  // [out_features] device fp32, or null
  float* y = nullptr;                // [N, out_features] device fp32
};
void fully_connected(const FcArgs& a, cudaStream_t stream);

/// y[n, y_offset + j] = x[n, j] * rsqrt(mean_j(x[n, j]^2) + eps) for j < features, fp32 device.
/// (Writes into a row of width y_stride, so the z and embedding halves can be concatenated.)
void normalize_2nd_moment(const float* x, int N, int features, float* y, int y_stride, int y_offset, float eps,
                          cudaStream_t stream);

/// ws[n, k, :] = w[n, :] for k < num_ws; rows k < cutoff are then lerped toward w_avg as torch's
/// lerp on CPU: a + psi*(b - a) when |psi| < 0.5, else b - (b - a)*(1 - psi), each one FMA.
/// psi == 1 copies. w [N, w_dim], w_avg [w_dim], ws [N, num_ws, w_dim], all fp32 device.
void truncate_broadcast(const float* w, const float* w_avg, int N, int num_ws, int w_dim, float psi, int cutoff,
                        float* ws, cudaStream_t stream);

}  // namespace sg2::cuda
