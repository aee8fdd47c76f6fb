// sg2 CUDA kernels: what the separable up-conv epilogue kernels share (kernels/upconv_epilogue.cu,
// the two-column kernel for fp32 and odd shapes; kernels/upconv_epilogue_f16.cu, the four-column
// fp16 kernel): staged-pixel loads, 4-channel stores, and the fp16 kernel's entry points.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "kernels/upconv_epilogue.h"

namespace sg2::cuda {

namespace dev_up {

/// 4 consecutive channels of a staged pixel as floats (8 bytes of fp16 or 16 of fp32).
__device__ __forceinline__ float4 load4(const unsigned char* p, __half) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
  const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
  return make_float4(lo.x, lo.y, hi.x, hi.y);
}
__device__ __forceinline__ float4 load4(const unsigned char* p, float) { return *reinterpret_cast<const float4*>(p); }

__device__ __forceinline__ void store4(float* p, const float (&v)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(__half* p, const float (&v)[4]) {
  uint2 raw;
  *reinterpret_cast<__half2*>(&raw.x) = __floats2half2_rn(v[0], v[1]);
  *reinterpret_cast<__half2*>(&raw.y) = __floats2half2_rn(v[2], v[3]);
  *reinterpret_cast<uint2*>(p) = raw;
}

/// A block's tile: blockIdx.x over (tiles_x, tiles_y, channel blocks of 32, samples), x fastest.
struct Tile {
  int tx, ty;  ///< the tile's column and row
  int cb0;     ///< its first channel
  int n;       ///< its sample
};
__device__ __forceinline__ Tile block_tile(int tiles_x, int tiles_y, int cblocks) {
  int b = blockIdx.x;
  Tile t;
  t.tx = b % tiles_x;
  b /= tiles_x;
  t.ty = b % tiles_y;
  b /= tiles_y;
  t.cb0 = (b % cblocks) * 32;
  t.n = b / cblocks;
  return t;
}

/// Channels c .. c + 3 of sample n: the demodulation coefficients, biases and output scales (1, 0
/// and 1 where absent or for an inactive thread); and the 4 taps u, flipped (the FIR convolves),
/// with the up-sampling gain 4 = 2 x 2.
__device__ __forceinline__ void channel_tables(const UpEpilogueArgs& a, int n, int c, bool active, float (&d)[4],
                                               float (&bias)[4], float (&os)[4], float (&u)[4]) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    d[e] = a.dcoefs && active ? a.dcoefs[size_t(n) * a.dcoefs_stride + c + e] : 1.0f;
    bias[e] = a.bias && active ? a.bias[c + e] : 0.0f;
    os[e] = a.out_scale && active ? a.out_scale[size_t(n) * a.out_scale_stride + c + e] : 1.0f;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) u[j] = 2.0f * __ldg(a.filter1d + (3 - j));
}

/// The separable 4-tap FIR's step for one window row `r_in`: the horizontal sums of K adjacent
/// columns (4 channels each) from the row's K + 3 staged pixels `s`, taps u[0..3] in order, each then
/// added into the up to four output rows it belongs to (rows r_in - 3 .. r_in of TY, vertical tap
/// r_in - r). Both separable kernels take their sums from here, so the same products in the same order.
template <int TY, int K>
__device__ __forceinline__ void fir_row(float (&acc)[TY][K][4], const float4 (&s)[K + 3], const float (&u)[4],
                                        int r_in) {
  float h[K][4];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const float* s0 = reinterpret_cast<const float*>(&s[k]);
#pragma unroll
    for (int e = 0; e < 4; ++e) h[k][e] = s0[e] * u[0];
#pragma unroll
    for (int j = 1; j < 4; ++j) {
      const float* sj = reinterpret_cast<const float*>(&s[k + j]);
#pragma unroll
      for (int e = 0; e < 4; ++e) h[k][e] += sj[e] * u[j];
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = r_in - i;
    if (r >= 0 && r < TY) {
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[r][k][e] += h[k][e] * u[i];
    }
  }
}

}  // namespace dev_up

/// The four-column fp16 kernel (kernels/upconv_epilogue_f16.cu): the same sums and epilogue as the
/// two-column one, so the same bits.
void upconv_epilogue_f16(const UpEpilogueArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
