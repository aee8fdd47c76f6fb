// sg2 CUDA kernels: FIR + pointwise epilogue of the up-sampling conv (upconv_epilogue.h).
//
// A block computes an output tile of kTY x kTX pixels for 32 channels of one sample: it stages
// the (kTY + f - 1) x (kTX + f - 1) x 32 input window of t in shared memory (fp32; 16-byte global
// loads when C % 8 == 0), then each thread (two channels, one column) runs the f x f filter down
// its column with the filter rows in registers (taps accumulated in the reference's order:
// filter row, then column), and stores both channels with one access.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "kernels/common.cuh"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/tc_conv_device.cuh"
#include "kernels/upconv_epilogue.h"
#include "kernels/upconv_epilogue_device.cuh"

namespace sg2::cuda {

namespace {

constexpr int kTY = 8;    // output rows per block
constexpr int kTX = 16;   // output columns per block (one per 16-thread group)
constexpr int kCB = 32;   // channels per block (two per thread)
constexpr int kMaxF = 8;  // largest filter supported
constexpr int kThreads = 256;

__device__ __forceinline__ void store2(float* p, float a, float b, bool pair) {
  if (pair) {
    *reinterpret_cast<float2*>(p) = make_float2(a, b);
  } else {
    p[0] = a;
  }
}
__device__ __forceinline__ void store2(__half* p, float a, float b, bool pair) {
  if (pair) {
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
  } else {
    p[0] = __float2half_rn(a);
  }
}

/// The per-channel tables of one channel pair (c, c + 1) of sample n.
struct PairTables {
  float d[2] = {1.0f, 1.0f}, b[2] = {0.0f, 0.0f}, os[2] = {1.0f, 1.0f};
  __device__ void load(const UpEpilogueArgs& a, int n, int c, bool pair) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (e == 1 && !pair) break;
      if (a.dcoefs) d[e] = a.dcoefs[size_t(n) * a.dcoefs_stride + c + e];
      if (a.bias) b[e] = a.bias[c + e];
      if (a.out_scale) os[e] = a.out_scale[size_t(n) * a.out_scale_stride + c + e];
    }
  }
};

/// The activation of one output element from its FIR sum f: demodulation d, noise nz, bias b, then
/// bias_act (the order of the CPU reference; both kernels below use it).
__device__ __forceinline__ float activation(const UpEpilogueArgs& a, float f, float d, float nz, float b) {
  float u = f * d;
  u = u + nz;
  u = u + b;
  return dev::bias_act(u, a.lrelu, a.gain, a.clamp);
}

/// The pointwise epilogue of one output pixel's channel pair (FIR sums f0, f1): demodulation,
/// noise, bias, activation and clamp, then the stores (out scaled, raw not).
template <typename Tout>
__device__ __forceinline__ void finish_pixel(const UpEpilogueArgs& a, const PairTables& tb, const float* noise, int n,
                                             int oy, int ox, int c, bool pair, float f0, float f1) {
  const float nz = noise ? noise[size_t(oy) * a.W + ox] * a.noise_strength : 0.0f;
  const float f[2] = {f0, f1};
  float v[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v[e] = activation(a, f[e], tb.d[e], nz, tb.b[e]);
  // a pair store needs an even channel offset: C even (c is even)
  const bool pair_store = pair && (a.C % 2 == 0);
  const size_t o = ((size_t(n) * a.H + oy) * a.W + ox) * a.C + c;
  if (a.out) {
    Tout* out = static_cast<Tout*>(a.out);
    store2(out + o, v[0] * tb.os[0], v[1] * tb.os[1], pair_store);
    if (pair && !pair_store) out[o + 1] = dev::from_float<Tout>(v[1] * tb.os[1]);
  }
  if (a.raw) {
    Tout* raw = static_cast<Tout*>(a.raw);
    store2(raw + o, v[0], v[1], pair_store);
    if (pair && !pair_store) raw[o + 1] = dev::from_float<Tout>(v[1]);
  }
}

/// Stages the SR x SC x kCB window of t (rows ty0.., columns tx0.., channels cb0..) in shared memory as
/// fp32, zeros outside; 8 channels per 16/32-byte access (C % 8 == 0, so a chunk is all in or all out).
template <typename Tin>
__device__ __forceinline__ void stage_window_vec(const UpEpilogueArgs& a, const Tin* t, float* S, int SR, int SC,
                                                 int ty0, int tx0, int cb0) {
  const int tid = threadIdx.x;
  const int chunk = tid & 3;
  const int cc = cb0 + chunk * 8;
  // the window in rounds of kRounds loads issued back to back (memory-level parallelism), then
  // their conversions and shared stores
  constexpr int kStep = kThreads / 4, kRounds = 4;
  for (int p0 = tid >> 2; p0 < SR * SC; p0 += kStep * kRounds) {
    uint4 raw[kRounds];  // 8 channels of Tin (fp32: first half of the 32 bytes)
    float4 raw_hi[kRounds];
    bool in[kRounds];
#pragma unroll
    for (int u = 0; u < kRounds; ++u) {
      const int p = p0 + u * kStep;
      const int r = p / SC, col = p - r * SC;
      const int ty = ty0 + r, tx = tx0 + col;
      in[u] = p < SR * SC && ty >= 0 && ty < a.TH && tx >= 0 && tx < a.TW && cc < a.C;
      raw[u] = make_uint4(0u, 0u, 0u, 0u);
      raw_hi[u] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (in[u]) {
        const Tin* src = t + (size_t(ty) * a.TW + tx) * a.C + cc;
        raw[u] = *reinterpret_cast<const uint4*>(src);
        if constexpr (sizeof(Tin) == 4) raw_hi[u] = *reinterpret_cast<const float4*>(src + 4);
      }
    }
#pragma unroll
    for (int u = 0; u < kRounds; ++u) {
      const int p = p0 + u * kStep;
      if (p >= SR * SC) break;
      float v[8];
      if constexpr (sizeof(Tin) == 4) {
        const float4 lo = *reinterpret_cast<const float4*>(&raw[u]);
        v[0] = lo.x;
        v[1] = lo.y;
        v[2] = lo.z;
        v[3] = lo.w;
        v[4] = raw_hi[u].x;
        v[5] = raw_hi[u].y;
        v[6] = raw_hi[u].z;
        v[7] = raw_hi[u].w;
      } else {
        const __half2* h = reinterpret_cast<const __half2*>(&raw[u]);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float2 f = __half22float2(h[q]);
          v[2 * q] = f.x;
          v[2 * q + 1] = f.y;
        }
      }
      float4* dst = reinterpret_cast<float4*>(S + p * kCB + chunk * 8);
      dst[0] = make_float4(v[0], v[1], v[2], v[3]);
      dst[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
  }
}

template <typename Tin, typename Tout, int F, bool VEC>
__global__ void __launch_bounds__(kThreads) upconv_epilogue_kernel(UpEpilogueArgs a) {
  dev::pdl_begin();
  extern __shared__ float4 S4[];
  float* S = reinterpret_cast<float*>(S4);
  const int f = F > 0 ? F : a.fsize;
  const int SR = kTY + f - 1, SC = kTX + f - 1;
  const int cblocks = (a.C + kCB - 1) / kCB;
  const int n = blockIdx.z / cblocks, cb0 = (blockIdx.z % cblocks) * kCB;
  const int oy0 = blockIdx.y * kTY, ox0 = blockIdx.x * kTX;
  const int ty0 = oy0 - a.pad0, tx0 = ox0 - a.pad0;
  const Tin* t = static_cast<const Tin*>(a.t) + size_t(n) * a.TH * a.TW * a.C;
  const int tid = threadIdx.x;

  if constexpr (VEC) {
    stage_window_vec<Tin>(a, t, S, SR, SC, ty0, tx0, cb0);
  } else {
    for (int idx = tid; idx < SR * SC * kCB; idx += kThreads) {
      const int c = idx % kCB, p = idx / kCB;
      const int r = p / SC, col = p - r * SC;
      const int ty = ty0 + r, tx = tx0 + col, cc = cb0 + c;
      float v = 0.0f;
      if (ty >= 0 && ty < a.TH && tx >= 0 && tx < a.TW && cc < a.C)
        v = dev::to_float(t[(size_t(ty) * a.TW + tx) * a.C + cc]);
      S[idx] = v;
    }
  }
  __syncthreads();

  const int cp = tid & 15;  // channel pair
  const int x = tid >> 4;   // column in the tile
  const int c = cb0 + 2 * cp;
  const int ox = ox0 + x;
  if (c >= a.C || ox >= a.W) return;  // no barrier below
  const bool pair = c + 1 < a.C;
  PairTables tb;
  tb.load(a, n, c, pair);
  float acc[kTY][2];
#pragma unroll
  for (int r = 0; r < kTY; ++r) acc[r][0] = acc[r][1] = 0.0f;
  if constexpr (F > 0) {
    float g[F][F];
#pragma unroll
    for (int i = 0; i < F; ++i)
#pragma unroll
      for (int j = 0; j < F; ++j) g[i][j] = __ldg(a.filter + (F - 1 - i) * F + (F - 1 - j)) * 4.0f;
#pragma unroll
    for (int r_in = 0; r_in < kTY + F - 1; ++r_in) {
      float2 s[F];
#pragma unroll
      for (int j = 0; j < F; ++j) s[j] = *reinterpret_cast<const float2*>(S + (r_in * SC + x + j) * kCB + 2 * cp);
#pragma unroll
      for (int i = 0; i < F; ++i) {
        const int r = r_in - i;
        if (r >= 0 && r < kTY) {
#pragma unroll
          for (int j = 0; j < F; ++j) {
            acc[r][0] += s[j].x * g[i][j];
            acc[r][1] += s[j].y * g[i][j];
          }
        }
      }
    }
  } else {
#pragma unroll
    for (int r = 0; r < kTY; ++r)
      for (int i = 0; i < f; ++i)
        for (int j = 0; j < f; ++j) {
          const float gv = a.filter[(f - 1 - i) * f + (f - 1 - j)] * 4.0f;
          const float2 s = *reinterpret_cast<const float2*>(S + ((r + i) * SC + x + j) * kCB + 2 * cp);
          acc[r][0] += s.x * gv;
          acc[r][1] += s.y * gv;
        }
  }

  const float* noise = a.noise ? a.noise + size_t(n) * a.noise_stride_n : nullptr;
#pragma unroll
  for (int r = 0; r < kTY; ++r) {
    const int oy = oy0 + r;
    if (oy >= a.H) break;
    finish_pixel<Tout>(a, tb, noise, n, oy, ox, c, pair, acc[r][0], acc[r][1]);
  }
}

// The separable 4-tap FIR (the filter is outer(filter1d, filter1d)), C % 8 == 0, W even, for fp32 t
// and for fp16 t that the four-column kernel does not take (upconv_epilogue_f16.cu: W % 4 == 2,
// no lrelu or out buffer, UpEpilogueArgs::sep_columns = 2): a block
// computes kSepTY x 32 output pixels x 32 channels of one sample from the (kSepTY + 3) x 35 pixel
// window of t, copied by cp.async in t's own type (zeros outside t; no registers on the way, so
// the block's five or four neighbours on the SM compute while its copy is in flight). A thread
// owns 4 channels of 2 adjacent columns and walks down the window's rows: per row the horizontal
// 4-tap sums of both columns (5 shared loads, 32 FMAs), each entering the (up to) four output
// rows it belongs to (vertical taps); the oldest of those rows is then complete and finished at
// once (epilogue and 8- or 16-byte stores), so only four rows of sums are live. Every output is
// the sum of the same products in the same order as before (horizontal taps, then vertical ones).
constexpr int kSepX = 32, kSepThreads = 128, kSepCols = kSepX + 4;  // window columns, padded to 36

template <typename Tin, int TY>
struct SepCfg {
  static constexpr int kRows = TY + 3;                // window rows (TY output rows per block)
  static constexpr int kPix = 32 * int(sizeof(Tin));  // bytes per staged pixel (32 channels)
  static constexpr size_t kSmem = size_t(kRows) * kSepCols * kPix;
  // shared byte offset of window pixel (r, col). fp16: pixel slots swapped in pairs every other
  // pair (col ^ ((col >> 1) & 1)), so that the half-warp's two columns two apart (a 64-byte
  // pixel: 16 banks) land on the other 16 banks; fp32: one pixel is one 8-thread phase already.
  __device__ static int offset(int r, int col) {
    if constexpr (sizeof(Tin) == 2) col ^= (col >> 1) & 1;
    return (r * kSepCols + col) * kPix;
  }
};

template <typename Tin, typename Tout, int TY>
__global__ void __launch_bounds__(kSepThreads)
    upconv_epilogue_sep_kernel(UpEpilogueArgs a, int tiles_x, int tiles_y, int cblocks) {
  dev::pdl_begin();
  using Cfg = SepCfg<Tin, TY>;
  constexpr int F = 4, SR = Cfg::kRows, SC = kSepX + F - 1;
  constexpr int kChunks = Cfg::kPix / 16;          // 16-byte copies per staged pixel
  constexpr int kPerPass = kSepThreads / kChunks;  // window columns per pass of the block
  extern __shared__ float4 S4[];
  unsigned char* S = reinterpret_cast<unsigned char*>(S4);
  const dev_up::Tile tile = dev_up::block_tile(tiles_x, tiles_y, cblocks);
  const int cb0 = tile.cb0, n = tile.n;
  const int oy0 = tile.ty * TY, ox0 = tile.tx * kSepX, wy0 = oy0 - a.pad0, wx0 = ox0 - a.pad0;
  const Tin* t = static_cast<const Tin*>(a.t) + size_t(n) * a.TH * a.TW * a.C;
  {
    const int chunk = threadIdx.x % kChunks, col0 = threadIdx.x / kChunks;
    const int cc = cb0 + chunk * (16 / int(sizeof(Tin)));
    for (int r = 0; r < SR; ++r) {
      const int gy = wy0 + r;
      const bool row_in = cc < a.C && gy >= 0 && gy < a.TH;
      for (int col = col0; col < SC; col += kPerPass) {
        const int gx = wx0 + col;
        const bool in = row_in && gx >= 0 && gx < a.TW;
        const Tin* src = in ? t + (size_t(gy) * a.TW + gx) * a.C + cc : t;
        dev::cp_async16(S + Cfg::offset(r, col) + chunk * 16, src, in ? 16 : 0);
      }
    }
    dev::cp_async_commit();
  }
  // the thread's tables and the noise of its first rows load while the window is in flight
  const int q = threadIdx.x & 7, p = threadIdx.x >> 3;  // channel quad, column pair
  const int c = cb0 + 4 * q, ox = ox0 + 2 * p;
  const bool active = c < a.C && ox < a.W;  // C % 8 == 0 and W even: c + 3, ox + 1 inside
  float d[4], bias[4], os[4], u[F];
  dev_up::channel_tables(a, n, c, active, d, bias, os, u);
  const float* noise = a.noise && active ? a.noise + (size_t(n) * a.noise_stride_n + size_t(oy0) * a.W + ox) : nullptr;
  // noise of output row r, scaled, loaded F - 1 window rows before the row is finished
  float nzr[TY][2];
  auto load_noise = [&](int r) {
#pragma unroll
    for (int k = 0; k < 2; ++k)
      nzr[r][k] = noise && oy0 + r < a.H ? noise[size_t(r) * a.W + k] * a.noise_strength : 0.0f;
  };
#pragma unroll
  for (int r = 0; r < F - 1 && r < TY; ++r) load_noise(r);
  dev::cp_async_wait<0>();
  __syncthreads();
  if (!active) return;                                                 // no barrier below
  const size_t out0 = ((size_t(n) * a.H + oy0) * a.W + ox) * a.C + c;  // output (oy0, ox, c)
  const unsigned char* sp = S + 4 * q * int(sizeof(Tin));

  float acc[TY][2][4];  // [row][column][channel]; only four rows live at a time
#pragma unroll
  for (int r = 0; r < TY; ++r)
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[r][k][e] = 0.0f;
#pragma unroll
  for (int r_in = 0; r_in < SR; ++r_in) {
    float4 s[F + 1];
#pragma unroll
    for (int j = 0; j <= F; ++j) s[j] = dev_up::load4(sp + Cfg::offset(r_in, 2 * p + j), Tin());
    dev_up::fir_row<TY, 2>(acc, s, u, r_in);
    if (r_in < TY - (F - 1)) load_noise(r_in + F - 1);
    const int r = r_in - (F - 1);  // complete now: its epilogue
    if (r < 0 || r >= TY || oy0 + r >= a.H) continue;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const float nz = nzr[r][k];
      float v[4], o[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        v[e] = activation(a, acc[r][k][e], d[e], nz, bias[e]);
        o[e] = v[e] * os[e];
      }
      const size_t at = out0 + (size_t(r) * a.W + k) * a.C;
      if (a.out) dev_up::store4(static_cast<Tout*>(a.out) + at, o);
      if (a.raw) dev_up::store4(static_cast<Tout*>(a.raw) + at, v);
    }
  }
}

template <typename Tin, typename Tout, int TY>
void launch_sep(const UpEpilogueArgs& a, int tiles_x, int tiles_y, int cblocks, int64_t blocks, cudaStream_t stream) {
  constexpr size_t smem = SepCfg<Tin, TY>::kSmem;
  auto* k = upconv_epilogue_sep_kernel<Tin, Tout, TY>;
  SG2_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  dev::launch("upconv_epilogue_sep_kernel", k, static_cast<unsigned>(blocks), kSepThreads, smem, stream, a, tiles_x,
              tiles_y, cblocks);
}

template <typename Tin, typename Tout, int F>
void launch_f(const UpEpilogueArgs& a, bool vec, dim3 grid, size_t smem, cudaStream_t stream) {
  if (vec)
    dev::launch("upconv_epilogue_kernel", upconv_epilogue_kernel<Tin, Tout, F, true>, grid, kThreads, smem, stream, a);
  else
    dev::launch("upconv_epilogue_kernel", upconv_epilogue_kernel<Tin, Tout, F, false>, grid, kThreads, smem, stream, a);
}

template <typename Tin, typename Tout>
void launch(const UpEpilogueArgs& a, cudaStream_t stream) {
  const int cblocks = (a.C + kCB - 1) / kCB;
  const bool vec = a.C % 8 == 0 && (reinterpret_cast<uintptr_t>(a.t) & 15u) == 0;
  if (vec && a.fsize == 4 && a.filter1d && a.W % 2 == 0 && (reinterpret_cast<uintptr_t>(a.out) & 15u) == 0 &&
      (reinterpret_cast<uintptr_t>(a.raw) & 15u) == 0) {
    // rows per block: 16 (fp16) or 8 (fp32) where the grid still fills the GPU several times over, fewer
    // for small layers at small batches (latency: more blocks); the sums are the same at every height
    const int sms = a.num_sms;
    const int tiles_x = (a.W + kSepX - 1) / kSepX;
    const int64_t columns = int64_t(tiles_x) * cblocks * a.N;  // blocks per row of tiles
    auto blocks_at = [&](int ty) { return columns * ((a.H + ty - 1) / ty); };
    int ty = sizeof(Tin) == 2 ? 16 : 8;
    while (ty > 4 && blocks_at(ty) < int64_t(16) * sms) ty /= 2;
    const int64_t blocks = blocks_at(ty);
    if (blocks > INT32_MAX)
      fail(ErrorKind::unsupported, "upconv_epilogue: batch ", a.N, " of ", a.H, " x ", a.W,
           " is too large for one launch");
    const int tiles_y = (a.H + ty - 1) / ty;
    if constexpr (sizeof(Tin) == 2) {
      if (ty == 16) launch_sep<Tin, Tout, 16>(a, tiles_x, tiles_y, cblocks, blocks, stream);
    }
    if (ty == 8)
      launch_sep<Tin, Tout, 8>(a, tiles_x, tiles_y, cblocks, blocks, stream);
    else if (ty == 4)
      launch_sep<Tin, Tout, 4>(a, tiles_x, tiles_y, cblocks, blocks, stream);
    SG2_LAUNCH_CHECK("upconv_epilogue_sep_kernel");
    return;
  }
  const dim3 grid((a.W + kTX - 1) / kTX, (a.H + kTY - 1) / kTY, a.N * cblocks);
  const size_t smem = static_cast<size_t>(kTY + a.fsize - 1) * (kTX + a.fsize - 1) * kCB * sizeof(float);
  if (a.fsize == 4)
    launch_f<Tin, Tout, 4>(a, vec, grid, smem, stream);
  else
    launch_f<Tin, Tout, 0>(a, vec, grid, smem, stream);
  SG2_LAUNCH_CHECK("upconv_epilogue_kernel");
}

}  // namespace

void upconv_epilogue(const UpEpilogueArgs& a, cudaStream_t stream) {
  if (a.N <= 0 || a.H <= 0 || a.W <= 0 || a.C <= 0) return;
  if (a.fsize < 1 || a.fsize > kMaxF)
    fail(ErrorKind::unsupported, "the CUDA backend supports resample filters of 1 to ", kMaxF, " taps, not ", a.fsize);
  if (upconv_epilogue_f16_supports(a)) {  // fp16 t: four columns per thread (upconv_epilogue_f16.cu)
    upconv_epilogue_f16(a, stream);
    return;
  }
  if (a.N * static_cast<int64_t>((a.C + kCB - 1) / kCB) > 65535 || (a.H + kTY - 1) / kTY > 65535)
    fail(ErrorKind::unsupported, "upconv_epilogue: batch ", a.N, " x ", a.C, " channels is too large for one launch");
  const bool in16 = a.t_dtype == DType::f16, out16 = a.out_dtype == DType::f16;
  if (in16 && out16)
    launch<__half, __half>(a, stream);
  else if (in16)
    launch<__half, float>(a, stream);
  else if (out16)
    launch<float, __half>(a, stream);
  else
    launch<float, float>(a, stream);
}

}  // namespace sg2::cuda
