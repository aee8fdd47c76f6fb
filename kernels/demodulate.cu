// sg2 CUDA kernels: demodulation coefficients and input style scales (demodulate.h).
#include "kernels/common.cuh"
#include "kernels/cuda_check.h"
#include "kernels/demodulate.h"
#include "kernels/pdl.cuh"

namespace sg2::cuda {

namespace {

constexpr int kWarps = 8;
constexpr int kSamples = 8;

// One block per (layer, sample): max|s| and the scaled styles.
__global__ void style_scale_kernel(DemodArgs a) {
  dev::pdl_begin();
  const int l = blockIdx.x, n = blockIdx.y;
  const DemodLayer L = a.layers[l];
  const float* s = a.s + static_cast<int64_t>(n) * a.s_stride + L.s_offset;
  float* out = a.s_in + static_cast<int64_t>(n) * a.s_stride + L.s_offset;
  __shared__ float partial[32];
  float m = 0.0f;
  if (L.fp16) {
    for (int i = threadIdx.x; i < L.in_channels; i += blockDim.x) m = fmaxf(m, fabsf(s[i]));
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
      float t = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
      for (int off = 16; off > 0; off /= 2) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, off));
      if (threadIdx.x == 0) partial[0] = t > 0.0f ? t : 1.0f;  // all-zero styles: leave them as they are
    }
    __syncthreads();
    m = partial[0];
  } else {
    m = 1.0f;
  }
  for (int i = threadIdx.x; i < L.in_channels; i += blockDim.x) out[i] = L.fp16 ? s[i] / m : s[i];
  if (threadIdx.x == 0) a.smax[static_cast<int64_t>(n) * a.num_layers + l] = m;
}

// One warp per output column o, kSamples samples per block.
__global__ void dcoefs_kernel(DemodArgs a) {
  dev::pdl_begin();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int o = blockIdx.x * kWarps + warp;
  const int n0 = blockIdx.y * kSamples;
  if (o >= a.total_out) return;
  const int l = a.layer_of_output[o];
  const DemodLayer L = a.layers[l];
  const float* q = a.q + L.q_offset + static_cast<int64_t>(o - L.dcoef_offset) * L.in_channels;
  float acc[kSamples];
#pragma unroll
  for (int b = 0; b < kSamples; ++b) acc[b] = 0.0f;
  for (int i = lane; i < L.in_channels; i += 32) {
    const float qv = q[i];
#pragma unroll
    for (int b = 0; b < kSamples; ++b) {
      if (n0 + b < a.N) {
        const float sv = a.s[static_cast<int64_t>(n0 + b) * a.s_stride + L.s_offset + i];
        acc[b] = fmaf(sv * sv, qv, acc[b]);
      }
    }
  }
#pragma unroll
  for (int b = 0; b < kSamples; ++b) acc[b] = dev::warp_sum(acc[b]);
  if (lane < kSamples && n0 + lane < a.N) {
    float sum = 0.0f;
#pragma unroll
    for (int b = 0; b < kSamples; ++b)
      if (b == lane) sum = acc[b];
    const int n = n0 + lane;
    float d = 1.0f / sqrtf(sum + 1e-8f);
    if (L.fp16) d = d * a.smax[static_cast<int64_t>(n) * a.num_layers + l] * a.w_inv[o];
    a.dcoefs[static_cast<int64_t>(n) * a.total_out + o] = d;
  }
}

}  // namespace

void demodulate(const DemodArgs& a, cudaStream_t stream) {
  if (a.N <= 0 || a.num_layers <= 0) return;
  dev::launch("style_scale_kernel", style_scale_kernel, dim3(a.num_layers, a.N), 256, 0, stream, a);
  SG2_LAUNCH_CHECK("style_scale_kernel");
  const dim3 grid((a.total_out + kWarps - 1) / kWarps, (a.N + kSamples - 1) / kSamples);
  dev::launch("dcoefs_kernel", dcoefs_kernel, grid, kWarps * 32, 0, stream, a);
  SG2_LAUNCH_CHECK("dcoefs_kernel");
}

}  // namespace sg2::cuda
