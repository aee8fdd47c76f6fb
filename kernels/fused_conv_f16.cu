// sg2 CUDA kernels: fused fp16 conv1 + epilogue + ToRGB (fused_conv_f16.h).
//
// Persistent blocks of 256 threads (8 warps; 512 threads, 16 warps, at 64 channels). A block first
// stages the whole filter in shared memory ([tap][Cout][Cin], rows padded to Cin + 8 halves), then
// walks over output tiles of 16 x 16 pixels of one sample: the tile's input with its 1-pixel halo
// (18 x 18 pixels x C channels) is staged by cp.async into one of two buffers while the previous tile
// computes, so every input pixel is read from memory about 1.27 times; the tile's noise (16 x 16
// floats), the window of the skip image that its upsampling reads (10 x 10 pixels per image channel,
// zero outside the image) and its sample's tables travel with it, so the epilogue reads them from
// shared memory, and one barrier per tile suffices. Warp w computes rows 2w and 2w + 1 of the tile
// (two m16 tiles of 16 pixels) x all 32 output channels; at 64 channels warps w and w + 8 share rows
// 2w and 2w + 1 and take 32 output channels each (16 warps per block, twice the warps per SM that a
// block of 8 with all 64 channels gets: the block's filter and tiles fill the SM's shared memory). MMAs
// mma.sync m16n8k16 (fp16 operands by ldmatrix: each lane names the shared-memory row of its pixel
// shifted by the tap, fp32 accumulators), k = (tap, input channel) in fixed order. The epilogue runs
// on the accumulators; the ToRGB partial sums are reduced over the 4 lanes that share a pixel (and at
// 64 channels, the second warp's sums added to the first's through shared memory).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/common.cuh"
#include "kernels/cuda_check.h"
#include "kernels/fused_conv_f16.h"
#include "kernels/pdl.cuh"
#include "kernels/skip_image.cuh"
#include "kernels/tc_conv_device.cuh"

namespace sg2::cuda {

namespace {

constexpr int kT = 16;         // output tile: kT x kT pixels
constexpr int kHalo = kT + 2;  // input tile side
constexpr int kMaxRgb = 4;
constexpr int kSkipSide = kT / 2 + 2;                 // the skip image's window: kSkipSide^2 pixels
constexpr int kSkipWin = kSkipSide * kSkipSide;       // floats per image channel
constexpr int kStage = kT * kT + kMaxRgb * kSkipWin;  // floats per buffer: noise, then the skip window

template <int C>
struct FusedCfg {
  // warp w computes rows 2 (w % 8) and 2 (w % 8) + 1 of the tile x the output channels of group w / 8:
  // one group of 32 at 32 channels (8 warps, 2 blocks per SM), two at 64 (16 warps: the block's filter
  // and tiles take most of the SM's shared memory, so one block per SM)
  static constexpr int kRows = 2;
  static constexpr int kGroups = C / 32;
  static constexpr int kThreads = 32 * (kT / kRows) * kGroups;
  static constexpr int kPitch = C + 8;                            // halves per pixel / filter row
  static constexpr int kW = 9 * C * kPitch;                       // filter (halves)
  static constexpr int kIn = kHalo * kHalo * kPitch;              // one input tile (halves)
  static constexpr int kTab = (3 + kMaxRgb) * C;                  // one tile's per-sample tables (floats)
  static constexpr int kRed = kGroups > 1 ? kMaxRgb* kT* kT : 0;  // the second group's ToRGB sums
  static constexpr size_t kSmem = size_t(kW + 2 * kIn) * 2 + (16 + 2 * (kTab + kStage) + kRed) * sizeof(float);
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const __half* p) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Named barrier `id` (1-15) of `threads` threads: the consumer waits, the producer only arrives; the
// producer's shared-memory writes before its arrival are visible to the consumer after its wait.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

template <int C, int KR>
__global__ void __launch_bounds__(FusedCfg<C>::kThreads, C == 32 ? 2 : 1)
    fused_conv_f16_kernel(const __half* __restrict__ x, const __half* __restrict__ w, EpilogueArgs e, int tiles_x,
                          int tiles_per_sample, int ntiles) {
  dev::pdl_begin();
  using F = FusedCfg<C>;
  constexpr int P = F::kPitch, R = F::kRows, kThreads = F::kThreads, CG = C / F::kGroups, NT = CG / 8;
  static_assert(kThreads >= kT * kT, "one noise value per thread and tile");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* sw = reinterpret_cast<__half*>(smem_raw);        // [9][C][P]
  __half* sin = sw + F::kW;                                // 2 x [kHalo][kHalo][P]
  float* sg = reinterpret_cast<float*>(sin + 2 * F::kIn);  // [16] the skip image's filter, flipped, x 4
  // per buffer, the tile's sample's tables: [C] demodulation, [C] bias, [C] next layer's input scale,
  // [KR][C] ToRGB weight x style
  float* stab = sg + 16;            // 2 x [F::kTab]
  float* sst = stab + 2 * F::kTab;  // 2 x [kStage]: noise, skip window
  float* sred = sst + 2 * kStage;   // [KR][kT * kT] (two channel groups)
  const int tid = threadIdx.x, lane = tid & 31;
  const int warp = (tid >> 5) % (kT / R), grp = (tid >> 5) / (kT / R);  // row pair, channel group
  const int HW = e.H * e.W;

  // the filter, once per block
  for (int q = tid; q < 9 * C * (C / 8); q += kThreads) {
    const int row = q / (C / 8), seg = q - row * (C / 8);  // row = tap * C + output channel
    const int t = row / C, o = row - t * C;
    dev::cp_async16(sw + row * P + 8 * seg, w + (size_t(o) * 9 + t) * C + 8 * seg, 16);
  }
  const bool up4 = e.img_prev != nullptr && e.fsize == 4;
  if (tid < 16) sg[tid] = up4 ? e.filter[15 - tid] * 4.0f : 0.0f;

  // Tile coordinates without divisions per tile: a block's tiles are blockIdx.x + k gridDim.x, so the
  // coordinates (n, tile row, tile column) advance by those of gridDim.x with at most one carry each.
  struct TilePos {
    int n, ty, tx;
  };
  const int tiles_y = tiles_per_sample / tiles_x;
  auto position = [&](int tile) {
    const int n = tile / tiles_per_sample, r = tile - n * tiles_per_sample;
    return TilePos{n, r / tiles_x, r - (r / tiles_x) * tiles_x};
  };
  const TilePos step = position(gridDim.x);
  auto advance = [&](TilePos t) {
    t.tx += step.tx;
    if (t.tx >= tiles_x) t.tx -= tiles_x, ++t.ty;
    t.ty += step.ty;
    if (t.ty >= tiles_y) t.ty -= tiles_y, ++t.n;
    t.n += step.n;
    return t;
  };
  // The thread's share of a tile's input copy, the same for every tile: 16-byte segment `seg` of
  // halo pixels p0, p0 + kPass, ... (kHalo x kHalo pixels x C / 8 segments over kThreads threads).
  constexpr int kSegs = C / 8, kPass = kThreads / kSegs, kCopies = (kHalo * kHalo + kPass - 1) / kPass;
  const int seg = tid % kSegs, p0 = tid / kSegs;
  const float* noise_all = e.noise;
  // the skip image's window is staged for the 4-tap filter (the generic filter reads it from memory)
  const bool stage_skip = KR > 0 && up4;
  const int Hi = e.H / 2, Wi = e.W / 2;
  // a tile's copies into buffer `buf`, then its sample's tables unless the buffer's previous tile
  // (sample prev_n) had the same sample (plain stores, visible after the barrier that starts the tile)
  auto issue = [&](TilePos t, int buf, int prev_n) {
    float* st = sst + buf * kStage;
    if (noise_all && tid < kT * kT) {  // pixel (tid / kT, tid % kT) of the tile
      const float* src =
          noise_all + size_t(t.n) * e.noise_stride_n + (t.ty * kT + (tid >> 4)) * e.W + t.tx * kT + (tid & (kT - 1));
      dev::cp_async4(st + tid, src, 4);
    }
    if (stage_skip) {  // [KR][kSkipSide][kSkipSide]: rows t.ty * kT / 2 - 1 ..., columns t.tx * kT / 2 - 1 ...
      const float* img = e.img_prev + size_t(t.n) * KR * (HW / 4);
#pragma unroll
      for (int k = 0; k < (KR * kSkipWin + kThreads - 1) / kThreads; ++k) {
        const int q = tid + k * kThreads;
        if (q >= KR * kSkipWin) break;
        const int ch = q / kSkipWin, r = (q - ch * kSkipWin) / kSkipSide, c = q - ch * kSkipWin - r * kSkipSide;
        const int sy = t.ty * (kT / 2) - 1 + r, sx = t.tx * (kT / 2) - 1 + c;
        const bool in = unsigned(sy) < unsigned(Hi) && unsigned(sx) < unsigned(Wi);
        dev::cp_async4(st + kT * kT + q, in ? img + ch * (HW / 4) + sy * Wi + sx : img, in ? 4 : 0);
      }
    }
    const int ty0 = t.ty * kT - 1, tx0 = t.tx * kT - 1;  // the halo's first pixel
    const __half* xs = x + size_t(t.n) * HW * C + 8 * seg;
    __half* dst = sin + buf * F::kIn + 8 * seg;
    int hy = p0 / kHalo, hx = p0 - hy * kHalo;
#pragma unroll
    for (int k = 0; k < kCopies; ++k) {
      if (k == kCopies - 1 && p0 + k * kPass >= kHalo * kHalo) break;
      const int iy = ty0 + hy, ix = tx0 + hx;
      const bool in = unsigned(iy) < unsigned(e.H) && unsigned(ix) < unsigned(e.W);
      dev::cp_async16(dst + (hy * kHalo + hx) * P, in ? xs + (iy * e.W + ix) * C : xs, in ? 16 : 0);
      hx += kPass % kHalo;  // the next pixel of this thread: p + kPass
      hy += kPass / kHalo;
      if (hx >= kHalo) hx -= kHalo, ++hy;
    }
    if (t.n != prev_n) {
      float* tab = stab + buf * F::kTab;
      for (int i = tid; i < C; i += kThreads) {
        tab[i] = e.dcoefs ? e.dcoefs[size_t(t.n) * e.dcoefs_stride + i] : 1.0f;
        tab[C + i] = e.bias ? e.bias[i] : 0.0f;
        tab[2 * C + i] = e.out_scale ? e.out_scale[size_t(t.n) * e.out_scale_stride + i] : 1.0f;
#pragma unroll
        for (int k = 0; k < KR; ++k)
          tab[(3 + k) * C + i] = e.rgb_weight[size_t(k) * C + i] * e.rgb_styles[size_t(t.n) * e.rgb_styles_stride + i];
      }
    }
  };

  const int g = lane >> 2, t4 = lane & 3;
  __half* out = static_cast<__half*>(e.out);
  __half* raw = static_cast<__half*>(e.raw);
  // One barrier per tile: after it, tile k's copies are visible and every warp is done with tile k - 1,
  // whose buffer then takes tile k + 1's copies (in flight while tile k computes).
  int buf = 0, prev_n = -1;  // prev_n: the sample of tile k - 1
  TilePos pos = position(blockIdx.x);
  if (int(blockIdx.x) < ntiles) issue(pos, 0, -1);
  dev::cp_async_commit();  // with the filter
  for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x, buf ^= 1) {
    dev::cp_async_wait<0>();
    __syncthreads();  // this tile's input, noise, skip window and tables (and the filter) in shared memory
    const TilePos next_pos = advance(pos);
    if (tile + int(gridDim.x) < ntiles) issue(next_pos, buf ^ 1, prev_n);
    dev::cp_async_commit();
    const float* tab = stab + buf * F::kTab;
    const float *sd = tab, *sb = tab + C, *so = tab + 2 * C, *sr = tab + 3 * C;

    const __half* in = sin + buf * F::kIn;
    const __half* a_lane = in + (R * warp * kHalo + (lane & 15)) * P + (lane >> 4) * 8;
    const __half* b_lane = sw + (grp * CG + ((lane >> 3) >> 1) * 8 + (lane & 7)) * P + ((lane >> 3) & 1) * 8;
    float acc[R][NT][4];
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
#pragma unroll  // every shared-memory offset a constant
    for (int t = 0; t < 9; ++t) {
      const int dy = t / 3, dx = t - dy * 3;  // halo coordinates: output (y, x) reads (y + dy, x + dx)
#pragma unroll
      for (int ks = 0; ks < C; ks += 16) {
        uint32_t a[R][4];
#pragma unroll
        for (int i = 0; i < R; ++i)  // lane: pixel lane & 15 of row R warp + i, channels ks + (lane >> 4) * 8
          ldmatrix_x4(a[i], a_lane + ((i + dy) * kHalo + dx) * P + ks);
#pragma unroll
        for (int jp = 0; jp < NT / 2; ++jp) {
          uint32_t b[4];
          ldmatrix_x4(b, b_lane + (t * C + 16 * jp) * P + ks);
#pragma unroll
          for (int i = 0; i < R; ++i) {
            mma_f16(acc[i][2 * jp], a[i], b[0], b[1]);
            mma_f16(acc[i][2 * jp + 1], a[i], b[2], b[3]);
          }
        }
      }
    }

    // epilogue: acc[i][j]: pixels g (elements 0, 1) and g + 8 (2, 3) of row R warp + i,
    // channels grp CG + 8 j + 2 t4 + {0, 1}; per element the same operations in the same order as
    // conv_epilogue (tables of 1 and 0 where dcoefs, bias or out_scale are absent); the ToRGB sum over
    // channels runs in another order (per lane, then over the 4 lanes of the pixel, then the second
    // group's sum added to the first's)
    const int n = pos.n, ty0 = pos.ty * kT, tx0 = pos.tx * kT;
    const float* st = sst + buf * kStage;
    // the noise and the skip image from shared memory (the upsampled pixel: upsampled4's taps in its
    // order; a zero outside the image adds nothing, as upsampled4's skipped tap)
    float nz[R][2], up[R][2];
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int yy = ty0 + R * warp + i, xx = tx0 + g + 8 * h;
        nz[i][h] = noise_all ? st[(R * warp + i) * kT + g + 8 * h] * e.noise_strength : 0.0f;
        up[i][h] = 0.0f;
        if (KR > 0 && t4 < KR && grp == 0 && e.img_prev) {
          if (stage_skip) {
            // tile row r (output row ty0 + r, ty0 even) has parity r & 1, column xx parity g & 1: taps
            // (r & 1) + 2p, (g & 1) + 2q of the window's rows (r + (r & 1)) / 2 + p and columns
            // (g + (g & 1)) / 2 + 4 h + q
            const int r = R * warp + i;
            const float* win =
                st + kT * kT + t4 * kSkipWin + ((r + (r & 1)) >> 1) * kSkipSide + ((g + (g & 1)) >> 1) + 4 * h;
            const float* gt = sg + (r & 1) * 4 + (g & 1);
            float u = 0.0f;
#pragma unroll
            for (int p = 0; p < 2; ++p)
#pragma unroll
              for (int q = 0; q < 2; ++q) u = u + win[p * kSkipSide + q] * gt[8 * p + 2 * q];
            up[i][h] = u;
          } else {
            const float* src = e.img_prev + (size_t(n) * KR + t4) * (HW / 4);
            up[i][h] = dev::upsampled(src, Hi, Wi, e.filter, e.fsize, yy, xx);
          }
        }
      }
    // per element the same operations in the same order as conv_epilogue (tables of 1 and 0 where dcoefs,
    // bias or out_scale are absent); the ToRGB sum over channels runs in another order (per lane, then over
    // the 4 lanes of the pixel). One copy of the loop per combination of outputs (no branch per element).
    auto epilogue = [&](auto has_out, auto has_raw) {
      constexpr bool kOut = decltype(has_out)::value, kRaw = decltype(has_raw)::value;
      float tk[R][2][KR > 0 ? KR : 1];
      size_t px[R][2];  // the pixel's first element (channel 2 t4)
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          px[i][h] = (size_t(n) * HW + size_t(ty0 + R * warp + i) * e.W + tx0 + g + 8 * h) * C + grp * CG + 2 * t4;
#pragma unroll
          for (int k = 0; k < KR; ++k) tk[i][h][k] = 0.0f;
        }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int c = grp * CG + 8 * j + 2 * t4;
        const float2 d2 = *reinterpret_cast<const float2*>(sd + c), b2 = *reinterpret_cast<const float2*>(sb + c);
        float2 o2 = make_float2(1.0f, 1.0f);
        if constexpr (kOut) o2 = *reinterpret_cast<const float2*>(so + c);
        float2 r2[KR > 0 ? KR : 1];
#pragma unroll
        for (int k = 0; k < KR; ++k) r2[k] = *reinterpret_cast<const float2*>(sr + k * C + c);
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float q0 = acc[i][j][2 * h] * d2.x, q1 = acc[i][j][2 * h + 1] * d2.y;
            q0 = q0 + nz[i][h];
            q1 = q1 + nz[i][h];
            q0 = q0 + b2.x;
            q1 = q1 + b2.y;
            const float v0 = dev::bias_act(q0, e.lrelu, e.gain, e.clamp),
                        v1 = dev::bias_act(q1, e.lrelu, e.gain, e.clamp);
            if constexpr (kOut)
              *reinterpret_cast<__half2*>(out + px[i][h] + 8 * j) = __floats2half2_rn(v0 * o2.x, v1 * o2.y);
            if constexpr (kRaw) *reinterpret_cast<__half2*>(raw + px[i][h] + 8 * j) = __floats2half2_rn(v0, v1);
#pragma unroll
            for (int k = 0; k < KR; ++k) tk[i][h][k] += v0 * r2[k].x + v1 * r2[k].y;
          }
      }
      if constexpr (KR > 0) {
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int k = 0; k < KR; ++k) tk[i][h][k] = dev::warp_sum(tk[i][h][k], 4);  // the 4 lanes of the pixel
        if constexpr (F::kGroups > 1) {  // group 1 hands its sums to group 0's warp of the same rows
          if (grp == 1) {
            if (t4 == 0)
#pragma unroll
              for (int i = 0; i < R; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                  for (int k = 0; k < KR; ++k) sred[k * kT * kT + (R * warp + i) * kT + g + 8 * h] = tk[i][h][k];
            named_barrier_arrive(1 + warp, 64);
            return;
          }
          named_barrier_sync(1 + warp, 64);
#pragma unroll
          for (int i = 0; i < R; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int k = 0; k < KR; ++k)
                tk[i][h][k] = tk[i][h][k] + sred[k * kT * kT + (R * warp + i) * kT + g + 8 * h];
        }
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int yy = ty0 + R * warp + i, xx = tx0 + g + 8 * h;
            if (t4 < KR) {
              float t = tk[i][h][0];
#pragma unroll
              for (int q = 1; q < KR; ++q)
                if (q == t4) t = tk[i][h][q];
              float r = t + e.rgb_bias[t4];
              if (e.rgb_clamp >= 0.0f) r = fminf(fmaxf(r, -e.rgb_clamp), e.rgb_clamp);
              e.img[(size_t(n) * KR + t4) * HW + yy * e.W + xx] = up[i][h] + r;
            }
          }
      }
    };
    using yes = std::true_type;
    using no = std::false_type;
    if (out) {
      if (raw)
        epilogue(yes{}, yes{});
      else
        epilogue(yes{}, no{});
    } else {
      if (raw)
        epilogue(no{}, yes{});
      else
        epilogue(no{}, no{});
    }
    prev_n = pos.n;
    pos = next_pos;
  }
  dev::cp_async_wait<0>();
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <int C, int KR>
void launch_k(const void* x, const void* w, const EpilogueArgs& e, cudaStream_t stream) {
  constexpr size_t smem = FusedCfg<C>::kSmem;
  auto* k = fused_conv_f16_kernel<C, KR>;
  SG2_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int per_sm = 0;
  constexpr int kThreads = FusedCfg<C>::kThreads;
  SG2_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kThreads, smem));
  const int tiles_x = e.W / kT, tiles_per_sample = tiles_x * (e.H / kT);
  const int64_t ntiles = int64_t(e.N) * tiles_per_sample;
  // persistent blocks: as many as the device's SMs hold (e.num_sms from the engine), else one per tile
  const int64_t resident = e.num_sms > 0 ? int64_t(std::max(per_sm, 1)) * e.num_sms : ntiles;
  const int blocks = static_cast<int>(std::min<int64_t>(ntiles, resident));
  dev::launch("fused_conv_f16_kernel", k, blocks, kThreads, smem, stream, static_cast<const __half*>(x),
              static_cast<const __half*>(w), e, tiles_x, tiles_per_sample, static_cast<int>(ntiles));
}

template <int C>
void launch_c(const void* x, const void* w, const EpilogueArgs& e, cudaStream_t stream) {
  switch (e.img_channels) {
    case 0:
      launch_k<C, 0>(x, w, e, stream);
      break;
    case 1:
      launch_k<C, 1>(x, w, e, stream);
      break;
    case 2:
      launch_k<C, 2>(x, w, e, stream);
      break;
    case 3:
      launch_k<C, 3>(x, w, e, stream);
      break;
    default:
      launch_k<C, 4>(x, w, e, stream);
      break;
  }
}

}  // namespace

size_t fused_conv_f16_smem_bytes(int channels) {
  return channels == 32 ? FusedCfg<32>::kSmem : channels == 64 ? FusedCfg<64>::kSmem : 0;
}

bool fused_conv_f16_shape_ok(int C, int H, int W, int img_channels, size_t smem_per_block) {
  // 64 channels take 185 KiB of shared memory per block: sm_90 (227 KiB), not sm_80 (163) or sm_86/89 (99)
  const size_t smem = fused_conv_f16_smem_bytes(C);
  return smem > 0 && smem <= smem_per_block && H >= kT && W >= kT && H % kT == 0 && W % kT == 0 &&
         int64_t(H) * W * C < (int64_t(1) << 31) && img_channels >= 0 && img_channels <= kMaxRgb;
}

bool fused_conv_f16_supports(const EpilogueArgs& e, size_t smem_per_block) {
  const int64_t HW = int64_t(e.H) * e.W;
  return fused_conv_f16_shape_ok(e.C, e.H, e.W, e.img_channels, smem_per_block) && e.N > 0 &&
         int64_t(e.N) * (HW / (kT * kT)) < (int64_t(1) << 30) && e.residual == nullptr && e.out_dtype == DType::f16 &&
         (e.img_channels == 0 || (e.rgb_weight && e.rgb_styles && e.rgb_bias && e.img)) &&
         (!e.img_prev || (e.filter && e.fsize >= 1)) && aligned16(e.out) && aligned16(e.raw);
}

void fused_conv_f16(const void* x, const void* w, const EpilogueArgs& e, size_t smem_per_block, cudaStream_t stream) {
  if (!fused_conv_f16_supports(e, smem_per_block) || !x || !w || !aligned16(x) || !aligned16(w))
    fail(ErrorKind::internal, "fused_conv_f16: unsupported arguments");
  if (e.C == 32)
    launch_c<32>(x, w, e, stream);
  else
    launch_c<64>(x, w, e, stream);
  SG2_LAUNCH_CHECK("fused_conv_f16_kernel");
}

}  // namespace sg2::cuda
