// sg2 CUDA kernels: FIR + pointwise epilogue of the up-sampling conv (upconv_epilogue.h).
//
// A block computes an output tile of kTY x kTX pixels for 32 channels of one sample: it stages
// the (kTY + f - 1) x (kTX + f - 1) x 32 input window of t in shared memory (fp32), then each
// thread (one channel, one column pair) runs the f x f filter down its columns with the filter
// rows kept in registers (taps accumulated in the reference's order: filter row, then column).
#include <algorithm>

#include "engine/src/cuda/cuda_check.h"
#include "kernels/common.cuh"
#include "kernels/upconv_epilogue.h"

namespace sg2::cuda {

namespace {

constexpr int kTY = 8;    // output rows per block
constexpr int kTX = 16;   // output columns per block
constexpr int kCB = 32;   // channels per block
constexpr int kMaxF = 8;  // largest filter supported

template <typename Tin, typename Tout, int F>
__global__ void __launch_bounds__(256) upconv_epilogue_kernel(UpEpilogueArgs a) {
  extern __shared__ float S[];
  const int f = F > 0 ? F : a.fsize;
  const int SR = kTY + f - 1, SC = kTX + f - 1;
  const int cblocks = (a.C + kCB - 1) / kCB;
  const int n = blockIdx.z / cblocks, cb0 = (blockIdx.z % cblocks) * kCB;
  const int oy0 = blockIdx.y * kTY, ox0 = blockIdx.x * kTX;
  const int ty0 = oy0 - a.pad0, tx0 = ox0 - a.pad0;
  const Tin* t = static_cast<const Tin*>(a.t) + static_cast<int64_t>(n) * a.TH * a.TW * a.C;

  for (int idx = threadIdx.x; idx < SR * SC * kCB; idx += blockDim.x) {
    const int c = idx % kCB, col = (idx / kCB) % SC, r = idx / (kCB * SC);
    const int ty = ty0 + r, tx = tx0 + col, cc = cb0 + c;
    float v = 0.0f;
    if (ty >= 0 && ty < a.TH && tx >= 0 && tx < a.TW && cc < a.C)
      v = dev::to_float(t[(static_cast<int64_t>(ty) * a.TW + tx) * a.C + cc]);
    S[idx] = v;
  }
  __syncthreads();

  const int c = threadIdx.x % kCB, tyi = threadIdx.x / kCB;
  const int cc = cb0 + c;
  if (cc >= a.C) return;  // no barrier below
  const float d = a.dd ? a.dd[static_cast<int64_t>(n) * a.dd_stride + cc] : 1.0f;
  const float b = a.bias ? a.bias[cc] : 0.0f;
  const float os = a.out_scale ? a.out_scale[static_cast<int64_t>(n) * a.out_scale_stride + cc] : 1.0f;
  Tout* out = static_cast<Tout*>(a.out);
  Tout* raw = static_cast<Tout*>(a.raw);

  float g[F > 0 ? F : 1][F > 0 ? F : 1];
  if constexpr (F > 0) {
#pragma unroll
    for (int i = 0; i < F; ++i)
#pragma unroll
      for (int j = 0; j < F; ++j) g[i][j] = a.filter[(F - 1 - i) * F + (F - 1 - j)] * 4.0f;
  }

  for (int part = 0; part < kTX / (256 / kCB); ++part) {
    const int x = tyi + part * (256 / kCB);
    const int ox = ox0 + x;
    if (ox >= a.W) continue;
    float acc[kTY];
#pragma unroll
    for (int r = 0; r < kTY; ++r) acc[r] = 0.0f;
    if constexpr (F > 0) {
#pragma unroll
      for (int r_in = 0; r_in < kTY + F - 1; ++r_in) {
        float s[F];
#pragma unroll
        for (int j = 0; j < F; ++j) s[j] = S[(r_in * SC + x + j) * kCB + c];
#pragma unroll
        for (int i = 0; i < F; ++i) {
          const int r = r_in - i;
          if (r >= 0 && r < kTY) {
#pragma unroll
            for (int j = 0; j < F; ++j) acc[r] += s[j] * g[i][j];
          }
        }
      }
    } else {
#pragma unroll
      for (int r = 0; r < kTY; ++r)
        for (int i = 0; i < f; ++i)
          for (int j = 0; j < f; ++j)
            acc[r] += S[((r + i) * SC + x + j) * kCB + c] * (a.filter[(f - 1 - i) * f + (f - 1 - j)] * 4.0f);
    }
#pragma unroll
    for (int r = 0; r < kTY; ++r) {
      const int oy = oy0 + r;
      if (oy >= a.H) break;
      float v = acc[r] * d;
      if (a.noise) v = v + a.noise[n * a.noise_stride_n + static_cast<int64_t>(oy) * a.W + ox] * a.noise_strength;
      v = v + b;
      v = dev::bias_act(v, a.lrelu, a.gain, a.clamp);
      const int64_t o = ((static_cast<int64_t>(n) * a.H + oy) * a.W + ox) * a.C + cc;
      if (out) out[o] = dev::from_float<Tout>(v * os);
      if (raw) raw[o] = dev::from_float<Tout>(v);
    }
  }
}

template <typename Tin, typename Tout>
void launch(const UpEpilogueArgs& a, cudaStream_t stream) {
  const int cblocks = (a.C + kCB - 1) / kCB;
  const dim3 grid((a.W + kTX - 1) / kTX, (a.H + kTY - 1) / kTY, a.N * cblocks);
  const size_t smem = static_cast<size_t>(kTY + a.fsize - 1) * (kTX + a.fsize - 1) * kCB * sizeof(float);
  if (a.fsize == 4) {
    upconv_epilogue_kernel<Tin, Tout, 4><<<grid, 256, smem, stream>>>(a);
  } else {
    upconv_epilogue_kernel<Tin, Tout, 0><<<grid, 256, smem, stream>>>(a);
  }
  SG2_LAUNCH_CHECK("upconv_epilogue_kernel");
}

}  // namespace

void upconv_epilogue(const UpEpilogueArgs& a, cudaStream_t stream) {
  if (a.N <= 0 || a.H <= 0 || a.W <= 0 || a.C <= 0) return;
  if (a.fsize < 1 || a.fsize > kMaxF)
    fail(ErrorKind::unsupported, "the CUDA backend supports resample filters of 1 to ", kMaxF, " taps, not ", a.fsize);
  if (a.N * static_cast<int64_t>((a.C + kCB - 1) / kCB) > 65535 || (a.H + kTY - 1) / kTY > 65535)
    fail(ErrorKind::unsupported, "upconv_epilogue: batch ", a.N, " x ", a.C, " channels is too large for one launch");
  const bool in16 = a.t_dtype == DType::f16, out16 = a.out_dtype == DType::f16;
  if (in16 && out16) launch<__half, __half>(a, stream);
  else if (in16) launch<__half, float>(a, stream);
  else if (out16) launch<float, __half>(a, stream);
  else launch<float, float>(a, stream);
}

}  // namespace sg2::cuda
