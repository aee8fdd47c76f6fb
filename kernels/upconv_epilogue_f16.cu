// sg2 CUDA kernels: the separable FIR + pointwise epilogue of the up-sampling conv for fp16 t, four
// output columns per thread (kernels/upconv_epilogue_device.cuh).
//
// A block of 64 threads computes TY x 32 output pixels x 32 channels of one sample from the
// (TY + 3) x 35-pixel window of t, copied by cp.async in two row groups (the first rows' sums start
// while the rest is in flight). A thread owns 4 channels of 4 adjacent columns and walks down the
// window: per row 7 shared loads and 28 conversions give the horizontal 4-tap sums of its 4
// columns (the two-column kernel needs 5 loads and 20 conversions for 2 columns), each entering
// the up to four output rows it belongs to; the oldest row is then finished (demodulation, noise,
// bias, lrelu, gain, clamp, the next layer's input scale) and stored. Every output is the sum of
// the same products in the same order as in the two-column kernel, and the epilogue is the same
// arithmetic (lrelu as max(v, 0.2 v), the same value for every input; the gain multiplied always,
// exact at 1), so the two give the same bits (GpuKernels.UpconvEpilogueColumnsAgreeBitForBit).
#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/tc_conv_device.cuh"
#include "kernels/upconv_epilogue_device.cuh"

namespace sg2::cuda {

namespace {

constexpr int kX = 32, kThreads = 64, kSlots = kX + 4, kPix = 64;  // 32 fp16 channels per staged pixel

template <int TY>
struct Cfg4 {
  static constexpr int kRows = TY + 3;
  static constexpr int kSplit = (kRows + 1) / 2;  // the first cp.async group's rows
  static constexpr size_t kSmem = size_t(kRows) * kSlots * kPix;
  // shared byte offset of window pixel (r, col): slots swapped in pairs every other group of four
  // (col ^ ((col >> 2) & 1)), so that a warp's four columns four apart (64-byte pixels, 16 banks
  // each) fall two on each half of the banks
  __device__ static int offset(int r, int col) { return (r * kSlots + (col ^ ((col >> 2) & 1))) * kPix; }
};

template <bool kClamp>
__device__ __forceinline__ float activate(float f, float d, float nz, float b, float gain, float clamp) {
  float u = f * d;
  u = u + nz;
  u = u + b;
  float v = fmaxf(u, u * 0.2f);  // lrelu: u > 0 ? u : 0.2 u
  v = v * gain;
  if constexpr (kClamp) v = fminf(fmaxf(v, -clamp), clamp);
  return v;
}

template <typename Tout, int TY, bool kClamp, bool kRaw>
__global__ void __launch_bounds__(kThreads)
    upconv_epilogue_f16_kernel(UpEpilogueArgs a, int tiles_x, int tiles_y, int cblocks) {
  dev::pdl_begin();
  using C = Cfg4<TY>;
  constexpr int F = 4, SR = C::kRows, SC = kX + F - 1;
  constexpr int kChunks = kPix / 16, kPerPass = kThreads / kChunks;
  extern __shared__ float4 S4[];
  unsigned char* S = reinterpret_cast<unsigned char*>(S4);
  const dev_up::Tile tile = dev_up::block_tile(tiles_x, tiles_y, cblocks);
  const int cb0 = tile.cb0, n = tile.n;
  const int oy0 = tile.ty * TY, ox0 = tile.tx * kX, wy0 = oy0 - a.pad0, wx0 = ox0 - a.pad0;
  const __half* t = static_cast<const __half*>(a.t) + size_t(n) * a.TH * a.TW * a.C;
  {
    const int chunk = threadIdx.x % kChunks, col0 = threadIdx.x / kChunks;
    const int cc = cb0 + chunk * 8;
    auto copy_rows = [&](int r0, int r1) {
      for (int r = r0; r < r1; ++r) {
        const int gy = wy0 + r;
        const bool row_in = cc < a.C && gy >= 0 && gy < a.TH;
        for (int col = col0; col < SC; col += kPerPass) {
          const int gx = wx0 + col;
          const bool in = row_in && gx >= 0 && gx < a.TW;
          const __half* src = in ? t + (size_t(gy) * a.TW + gx) * a.C + cc : t;
          dev::cp_async16(S + C::offset(r, col) + chunk * 16, src, in ? 16 : 0);
        }
      }
      dev::cp_async_commit();
    };
    copy_rows(0, C::kSplit);
    copy_rows(C::kSplit, SR);
  }
  const int q = threadIdx.x & 7, p = threadIdx.x >> 3;  // channel quad, column quad
  const int c = cb0 + 4 * q, ox = ox0 + 4 * p;
  const bool active = c < a.C && ox < a.W;  // C % 8 == 0 and W % 4 == 0: c + 3, ox + 3 inside
  float d[4], bias[4], os[4], u[F];
  dev_up::channel_tables(a, n, c, active, d, bias, os, u);
  const float gain = a.gain, clamp = a.clamp;
  const float* noise = a.noise && active ? a.noise + (size_t(n) * a.noise_stride_n + size_t(oy0) * a.W + ox) : nullptr;
  float nzr[TY][4];  // noise of output row r, scaled, loaded F - 1 window rows before the row is finished
  auto load_noise = [&](int r) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      nzr[r][k] = noise && oy0 + r < a.H ? noise[size_t(r) * a.W + k] * a.noise_strength : 0.0f;
  };
#pragma unroll
  for (int r = 0; r < F - 1 && r < TY; ++r) load_noise(r);
  dev::cp_async_wait<1>();
  __syncthreads();
  const size_t out0 = active ? ((size_t(n) * a.H + oy0) * a.W + ox) * a.C + c : 0;  // output (oy0, ox, c)
  const size_t row_step = size_t(a.W) * a.C, col_step = size_t(a.C);
  // the stores' addresses: one pointer per column, advanced a row at a time (rows finish in order).
  // An inactive thread (channels or columns past the tile's edge) computes on the zero-filled window
  // and stores nothing, so that no branch spans the second row group's barrier.
  Tout* out_k[4];
  Tout* raw_k[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    out_k[k] = static_cast<Tout*>(a.out) + out0 + k * col_step;
    raw_k[k] = kRaw ? static_cast<Tout*>(a.raw) + out0 + k * col_step : nullptr;
  }
  // the shared offsets of the thread's 7 window columns in row 0 (a row adds a constant)
  int col_off[F + 3];
#pragma unroll
  for (int j = 0; j < F + 3; ++j) col_off[j] = C::offset(0, 4 * p + j) + 8 * q;

  float acc[TY][4][4];  // [row][column][channel]; only four rows live at a time
#pragma unroll
  for (int r = 0; r < TY; ++r)
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[r][k][e] = 0.0f;
#pragma unroll
  for (int r_in = 0; r_in < SR; ++r_in) {
    if (r_in == C::kSplit) {  // the second row group (every thread reaches this barrier)
      dev::cp_async_wait<0>();
      __syncthreads();
    }
    float4 s[F + 3];
#pragma unroll
    for (int j = 0; j < F + 3; ++j) s[j] = dev_up::load4(S + r_in * kSlots * kPix + col_off[j], __half());
    dev_up::fir_row<TY, 4>(acc, s, u, r_in);
    if (r_in < TY - (F - 1)) load_noise(r_in + F - 1);
    const int r = r_in - (F - 1);  // complete now: its epilogue
    if (r < 0 || r >= TY || oy0 + r >= a.H || !active) continue;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float nz = nzr[r][k];
      float v[4], o[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        v[e] = activate<kClamp>(acc[r][k][e], d[e], nz, bias[e], gain, clamp);
        o[e] = v[e] * os[e];
      }
      dev_up::store4(out_k[k], o);
      out_k[k] += row_step;
      if constexpr (kRaw) {
        dev_up::store4(raw_k[k], v);
        raw_k[k] += row_step;
      }
    }
  }
}

template <typename Tout, int TY>
void launch4(const UpEpilogueArgs& a, int tiles_x, int tiles_y, int cblocks, int64_t blocks, cudaStream_t stream) {
  constexpr size_t smem = Cfg4<TY>::kSmem;
  auto run = [&](auto kernel) {
    SG2_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    dev::launch("upconv_epilogue_f16_kernel", kernel, static_cast<unsigned>(blocks), kThreads, smem, stream, a, tiles_x,
                tiles_y, cblocks);
  };
  if (a.clamp >= 0.0f && a.raw)
    run(upconv_epilogue_f16_kernel<Tout, TY, true, true>);
  else if (a.clamp >= 0.0f)
    run(upconv_epilogue_f16_kernel<Tout, TY, true, false>);
  else if (a.raw)
    run(upconv_epilogue_f16_kernel<Tout, TY, false, true>);
  else
    run(upconv_epilogue_f16_kernel<Tout, TY, false, false>);
}

template <typename Tout>
void launch_rows(const UpEpilogueArgs& a, cudaStream_t stream) {
  // rows per block: 16 where the grid still fills the GPU 32 times over (blocks of two warps), fewer
  // for small layers at small batches (latency: more blocks); the sums are the same at every height
  const int cblocks = a.C / 32 + (a.C % 32 != 0);
  const int tiles_x = (a.W + kX - 1) / kX;
  const int64_t columns = int64_t(tiles_x) * cblocks * a.N;
  auto blocks_at = [&](int ty) { return columns * ((a.H + ty - 1) / ty); };
  int ty = 16;
  while (ty > 4 && blocks_at(ty) < int64_t(32) * a.num_sms) ty /= 2;
  const int64_t blocks = blocks_at(ty);
  if (blocks > INT32_MAX)
    fail(ErrorKind::unsupported, "upconv_epilogue: batch ", a.N, " of ", a.H, " x ", a.W,
         " is too large for one launch");
  const int tiles_y = (a.H + ty - 1) / ty;
  if (ty == 16)
    launch4<Tout, 16>(a, tiles_x, tiles_y, cblocks, blocks, stream);
  else if (ty == 8)
    launch4<Tout, 8>(a, tiles_x, tiles_y, cblocks, blocks, stream);
  else
    launch4<Tout, 4>(a, tiles_x, tiles_y, cblocks, blocks, stream);
  SG2_LAUNCH_CHECK("upconv_epilogue_f16_kernel");
}

}  // namespace

bool upconv_epilogue_f16_supports(const UpEpilogueArgs& a) {
  auto aligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; };
  return a.sep_columns != 2 && a.t_dtype == DType::f16 && a.C % 8 == 0 && a.W % 4 == 0 && a.fsize == 4 && a.filter1d &&
         a.lrelu && a.out && aligned(a.t) && aligned(a.out) && aligned(a.raw);
}

void upconv_epilogue_f16(const UpEpilogueArgs& a, cudaStream_t stream) {
  if (a.out_dtype == DType::f16)
    launch_rows<__half>(a, stream);
  else
    launch_rows<float>(a, stream);
}

}  // namespace sg2::cuda
