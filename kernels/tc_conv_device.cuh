// sg2 CUDA kernels: device helpers shared by the two 3xTF32 convolution kernels
// (kernels/tc_conv.cu: mma.sync; kernels/tc_conv_sm90.cu: wgmma). Device code only.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/conv_taps.cuh"
#include "kernels/tc_conv.h"

namespace sg2::cuda::dev {

/// v -> (hi, lo) as TF32 register operands: hi = v truncated to 10 significand bits (one integer
/// op, not the slow conversion pipe; never overflows), lo = v - hi exactly (|lo| < 2^-10 |v|), whose
/// low 13 bits the tensor core ignores (an error below 2^-10 of lo, 2^-20 of v; modelled: the
/// convolution error stays 3x below float32 accumulation's, docs/performance-notes.md). An inf
/// activation gives nan (inf - inf), where an FMA convolution would usually give inf or nan too.
__device__ __forceinline__ void tf32_split(float v, uint32_t& hi, uint32_t& lo) {
  hi = __float_as_uint(v) & 0xffffe000u;
  lo = __float_as_uint(v - __uint_as_float(hi));
}

/// Stores two adjacent outputs at element offset o: into the split's fp32 partial output when
/// there is one, else into y, as fp32 (ESZ 4) or fp16 (ESZ 2, rounded to nearest).
template <int ESZ>
__device__ __forceinline__ void store_pair(const TcConvArgs& a, float* partial, size_t o, float v0, float v1) {
  if (partial != nullptr) {
    *reinterpret_cast<float2*>(partial + o) = make_float2(v0, v1);
  } else if constexpr (ESZ == 2) {
    *reinterpret_cast<__half2*>(static_cast<__half*>(a.y) + o) = __floats2half2_rn(v0, v1);
  } else {
    *reinterpret_cast<float2*>(static_cast<float*>(a.y) + o) = make_float2(v0, v1);
  }
}

/// 16-byte global -> shared copy; src_bytes 0 fills zeros (src must still be a valid address).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}
/// 4-byte global -> shared copy (through L1); src_bytes 0 fills zeros (src must still be a valid address).
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem, int src_bytes) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// One thread block's share of a tensor-core convolution GEMM (both kernels): blockIdx.x = BM-pixel
/// tile of one phase's output pixels (128; 256 for the wgmma kernel's 256-pixel tiles, whose
/// activations come by TMA: apix and ayx, the cp.async rows, are for 128), blockIdx.y = BN-channel tile, blockIdx.z =
/// phase + phases * split-K index. k runs over 128-byte chunks of input channels of one tap (tap-major): 32 fp32 or 64
/// fp16 channels (ESZ: bytes per element). Also the block's A (activation) copies: 256 threads, 4 per thread per chunk,
/// pixels (tid >> 3) + 32 j, 16-byte segment tid & 7, zero-filled outside the image.
template <bool TR, int ESZ = 4, int BM = 128>
struct TcTile {
  static constexpr int kBM = BM, kBK = 128 / ESZ;  // kBK: channels per chunk
  int py, px, Wo, HWo, M, m0, n0, nx, cpt, cbeg, nchunks;
  int taps;        // the packed filter's taps per output channel: 9, or 1 for the 1x1 convolution
  int per_split;   // split-K: chunks per split (the last may have fewer)
  float* partial;  // split-K: this split's fp32 partial output; null: the kernel writes y
  int apix[4];     // the sample's first input pixel n*H*W; the tap adds (y + dy) * W + (x + dx)
  int ayx[4];      // y << 16 | x of the output pixel (y = -20000 past the last pixel: never inside)

  __device__ TcTile(const TcConvArgs& a, int BN) {
    const int phases = TR ? 4 : 1;
    const int phase = int(blockIdx.z) % phases, split_k = int(blockIdx.z) / phases;
    py = phase >> 1;
    px = phase & 1;
    const int Ho = TR ? a.H + 1 - py : a.H;
    Wo = TR ? a.W + 1 - px : a.W;
    HWo = Ho * Wo;
    M = a.N * HWo;
    m0 = blockIdx.x * kBM;
    n0 = blockIdx.y * BN;
    const int ny = TR ? (py ? 1 : 2) : a.k;
    nx = TR ? (px ? 1 : 2) : a.k;
    taps = TR ? 9 : a.k * a.k;
    cpt = a.Cin / kBK;  // chunks per tap
    const int all_chunks = ny * nx * cpt;
    // split-K: this block sums chunks [cbeg, cbeg + nchunks) into its own partial output; folded
    // (a.fold_splits): all of them, split after split, adding each split's sum into y's value in
    // the same order as the partials' sum kernel
    per_split = (all_chunks + a.splits - 1) / a.splits;
    if (a.fold_splits) {
      cbeg = 0;
      nchunks = all_chunks;
      partial = nullptr;
    } else {
      cbeg = min(all_chunks, split_k * per_split);
      nchunks = min(all_chunks, cbeg + per_split) - cbeg;
      partial = a.splits > 1
                    ? a.partial + size_t(split_k) * a.N * (TR ? (2 * a.H + 1) * (2 * a.W + 1) : a.H * a.W) * a.Cout
                    : nullptr;
    }
    const int tid = threadIdx.x;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + (tid >> 3) + 32 * j;
      if (m < M) {
        const int n = m / HWo, r = m - n * HWo;
        const int y = r / Wo;
        ayx[j] = (y << 16) | (r - y * Wo);
        apix[j] = n * a.H * a.W;
      } else {
        ayx[j] = -20000 * 65536;
        apix[j] = 0;
      }
    }
  }
  /// Chunk c's filter tap (index into the packed filter's taps: 9, or 1) and first input channel.
  __device__ ConvTap tap(int c, int& ci0) const {
    const int t = c / cpt;
    ci0 = (c - t * cpt) * kBK;
    if (!TR && taps == 1) return ConvTap{0, 0, 0};  // 1x1: the pixel itself
    return conv_tap(TR, t, py, px, nx);
  }
  /// cp.async the activations of chunk c into As ([128 pixels][pitch 32-bit words]).
  __device__ void issue_a(const TcConvArgs& a, const ConvTap& tp, int ci0, float* As, int pitch) const {
    const int tid = threadIdx.x, seg = tid & 7;
    const char* x = static_cast<const char*>(a.x);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int iy = (ayx[j] >> 16) + tp.dy, ix = (ayx[j] & 0xffff) + tp.dx;
      const bool in = iy >= 0 && iy < a.H && ix >= 0 && ix < a.W;
      const char* src = in ? x + ((size_t(apix[j]) + size_t(iy) * a.W + ix) * a.Cin + ci0) * ESZ + 16 * seg : x;
      cp_async16(As + ((tid >> 3) + 32 * j) * pitch + 4 * seg, src, in ? 16 : 0);
    }
  }
  /// Offset of GEMM row m's first channel in yout.
  __device__ size_t out_offset(const TcConvArgs& a, int m) const {
    if (!TR) return size_t(m) * a.Cout;
    const int n = m / HWo, r = m - n * HWo, oy = r / Wo, ox = r - oy * Wo;
    return ((size_t(n) * (2 * a.H + 1) + 2 * oy + py) * (2 * a.W + 1) + 2 * ox + px) * a.Cout;
  }
};

}  // namespace sg2::cuda::dev
