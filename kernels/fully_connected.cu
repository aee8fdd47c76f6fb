// sg2 CUDA kernels: fully_connected, normalize_2nd_moment, truncate_broadcast (fully_connected.h).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/cuda_check.h"
#include "kernels/fully_connected.h"
#include "kernels/pdl.cuh"

namespace sg2::cuda {

namespace {

constexpr int kFcWarps = 8;    // outputs per block (one warp each)
constexpr int kFcSamples = 8;  // samples per block

__global__ void fully_connected_kernel(FcArgs a) {
  dev::pdl_begin();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int j = blockIdx.x * kFcWarps + warp;
  const int n0 = blockIdx.y * kFcSamples;
  if (j >= a.out_features) return;  // whole warp leaves together
  const int I = a.in_features;
  const float* w = a.weight + static_cast<int64_t>(j) * I;
  const int64_t row_off = a.rows ? static_cast<int64_t>(a.rows[j]) * a.x_stride_row : 0;
  float acc[kFcSamples];
#pragma unroll
  for (int b = 0; b < kFcSamples; ++b) acc[b] = 0.0f;
  // kUnroll steps' weight loads first (memory-level parallelism: at batch 1 a layer is otherwise a
  // chain of dependent DRAM round trips), then the FMAs in the same order as a plain loop
  constexpr int kUnroll = 16;
  for (int i0 = lane; i0 < I; i0 += 32 * kUnroll) {
    float wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + 32 * u;
      wv[u] = i < I ? w[i] * a.weight_gain : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + 32 * u;
      if (i >= I) break;
#pragma unroll
      for (int b = 0; b < kFcSamples; ++b) {
        if (n0 + b < a.N) acc[b] = fmaf(a.x[(n0 + b) * a.x_stride_n + row_off + i], wv[u], acc[b]);
      }
    }
  }
#pragma unroll
  for (int b = 0; b < kFcSamples; ++b) acc[b] = dev::warp_sum(acc[b]);
  if (lane < kFcSamples && n0 + lane < a.N) {
    float v = 0.0f;
#pragma unroll
    for (int b = 0; b < kFcSamples; ++b)
      if (b == lane) v = acc[b];
    if (a.bias) v = v + (a.bias_gain != 1.0f ? a.bias[j] * a.bias_gain : a.bias[j]);
    if (a.act == FcAct::lrelu) v = v > 0.0f ? v : v * 0.2f;
    if (a.act == FcAct::relu) v = v > 0.0f ? v : 0.0f;
    if (a.act_gain != 1.0f) v = v * a.act_gain;
    if (a.out_scale) v = v * a.out_scale[j];
    a.y[static_cast<int64_t>(n0 + lane) * a.out_features + j] = v;
  }
}

__global__ void normalize_kernel(const float* x, int F, float* y, int y_stride, int y_offset, float eps) {
  dev::pdl_begin();
  const int n = blockIdx.x;
  const float* xr = x + static_cast<int64_t>(n) * F;
  __shared__ double partial[32];
  double s = 0;
  for (int j = threadIdx.x; j < F; j += blockDim.x) {
    const float v = xr[j];
    s += static_cast<double>(v * v);
  }
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    double t = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0;
    for (int off = 16; off > 0; off /= 2) t += __shfl_xor_sync(0xffffffffu, t, off);
    if (threadIdx.x == 0) partial[0] = t;
  }
  __syncthreads();
  const float mean = F > 0 ? static_cast<float>(partial[0] / static_cast<double>(F)) : 0.0f;
  const float scale = 1.0f / sqrtf(mean + eps);
  for (int j = threadIdx.x; j < F; j += blockDim.x)
    y[static_cast<int64_t>(n) * y_stride + y_offset + j] = xr[j] * scale;
}

__global__ void truncate_kernel(const float* w, const float* w_avg, int N, int R, int D, float psi, int cutoff,
                                float* ws) {
  dev::pdl_begin();
  const int64_t total = static_cast<int64_t>(N) * R * D;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(idx % D);
    const int k = static_cast<int>((idx / D) % R);
    const int64_t n = idx / (static_cast<int64_t>(D) * R);
    const float b = w[n * D + j];
    float v = b;
    if (psi != 1.0f && k < cutoff) {
      const float a = w_avg[j];
      const float diff = b - a;
      v = fabsf(psi) < 0.5f ? fmaf(psi, diff, a) : fmaf(-diff, 1.0f - psi, b);
    }
    ws[idx] = v;
  }
}

}  // namespace

void fully_connected(const FcArgs& a, cudaStream_t stream) {
  if (a.N <= 0 || a.out_features <= 0) return;
  const dim3 grid((a.out_features + kFcWarps - 1) / kFcWarps, (a.N + kFcSamples - 1) / kFcSamples);
  dev::launch("fully_connected_kernel", fully_connected_kernel, grid, kFcWarps * 32, 0, stream, a);
  SG2_LAUNCH_CHECK("fully_connected_kernel");
}

void normalize_2nd_moment(const float* x, int N, int features, float* y, int y_stride, int y_offset, float eps,
                          cudaStream_t stream) {
  if (N <= 0) return;
  dev::launch("normalize_kernel", normalize_kernel, N, 256, 0, stream, x, features, y, y_stride, y_offset, eps);
  SG2_LAUNCH_CHECK("normalize_kernel");
}

void truncate_broadcast(const float* w, const float* w_avg, int N, int num_ws, int w_dim, float psi, int cutoff,
                        float* ws, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(N) * num_ws * w_dim;
  if (total <= 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 4096));
  dev::launch("truncate_kernel", truncate_kernel, blocks, 256, 0, stream, w, w_avg, N, num_ws, w_dim, psi, cutoff, ws);
  SG2_LAUNCH_CHECK("truncate_kernel");
}

}  // namespace sg2::cuda
