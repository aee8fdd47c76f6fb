// sg2 CUDA kernels: the stride-2 transposed convolution as one tensor-core GEMM per tile of cells,
// on Hopper (tc_tconv.h; the mma.sync implementation and the entry point: tc_tconv.cu); compiled
// for sm_90a only (CMakeLists.txt), the launcher for any target.
//
// A block is 384 threads: two consumer warpgroups (warps 0-7; warp w owns the tile's cells
// 16 w .. 16 w + 15, the rows of its MMAs) and a producer warpgroup (one lane issues the copies),
// which gives its registers to the consumers (setmaxnreg: 40 for the producer, 232 for the MMAs'
// 128 accumulators and two fragment sets).
// Per chunk of 128 bytes of input channels (64 fp16 or 32 fp32), stage s of the ring holds
//   B: the chunk's filter, 9 taps x bnc rows of 128 bytes (three TMA boxes of 3 taps), 128-byte
//      swizzled: the tensor cores read tap t's rows by descriptor;
//   A: the (TH + 1) x (TW + 1) input pixels around the tile (one 4-D TMA box at (i0 - 1, j0 - 1),
//      zero-filled outside the image), row r = y (TW + 1) + x of 128 bytes, 128-byte swizzled.
// Per 16-deep (fp16) or 8-deep (tf32) step, each warp loads the fragments of its 16 cells' four
// neighbours x[i - di, j - dj] with one ldmatrix.x4 each (any cell shape: every lane addresses its
// own halo row), then the warpgroup issues nine m64n{bnc} MMAs, one per tap, into the four phase
// accumulators (the same shape throughout, so the hardware orders MMAs on one accumulator):
//   P0 += n00 w0, P1 += n00 w1, P2 += n00 w3, P3 += n00 w4, P0 += n01 w2, P2 += n01 w5,
//   P0 += n10 w6, P1 += n10 w7, P0 += n11 w8.
// Two register sets for the fragments: step s's MMAs run while step s + 1 loads; after committing a
// step the warpgroup waits for the previous one, and releases a chunk's stage (mbarrier `empty`)
// once its last step has completed. The producer fills stages ahead across work items (tile x
// channel tile, walked by persistent blocks), so a one-chunk tile (Cin = 64) never drains the ring.
// Epilogue: fp16 through a per-warp staging buffer (stmatrix, then 16-byte coalesced stores);
// fp32 (tf32 and 3xTF32 modes) as 8-byte stores.
// 3xTF32 (32-channel phase tiles): a stage holds the filter's heads and its tails (two B tiles of
// 36 KiB, two stages of 96 KiB); each fragment of x is split into its TF32 head and the exact rest,
// and a step issues 27 MMAs into `part` from zero in three commit groups (x's tails x w's heads,
// x's heads x w's tails, heads x heads, each over the nine taps in the order above); after the
// step completes, part is added into the fp32 sums acc (cleared per item).
#include <cuda.h>          // CUtensorMap and its enums
#include <cudaTypedefs.h>  // the encoder's type
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/sm90_ops.cuh"
#include "kernels/tc_tconv.h"
#include "kernels/tc_tconv_impl.cuh"

namespace sg2::cuda {

namespace {

using Ops = TcTconvArgs::Operands;
constexpr int kThreads = 384;  // two consumer warpgroups and the producer warpgroup

template <int BNC, bool X3 = false>
struct Cfg {
  // two stages of 96 KiB (bnc 64; 3xTF32 at bnc 32: the filter's heads and tails) or three of 60 KiB (bnc 32)
  static constexpr int kStages = BNC == 64 || X3 ? 2 : 3;
  static constexpr int kBBytes = 9 * BNC * 128;  // the chunk's filter: 9 taps x bnc rows (a multiple of 1024)
  static constexpr int kNB = X3 ? 2 : 1;         // filter tiles per stage: the heads (and the tails)
  static constexpr int kABytes = kTconvMaxHalo * 128;
  static constexpr int kStage = kNB * kBBytes + kABytes;
  static constexpr int kWarpOut = 16 * BNC * 2;  // a warp's fp16 staging: 16 cells x bnc channels
  static constexpr size_t kOut = size_t(kStages) * kStage;
  static constexpr size_t kBars = kOut + size_t(8) * kWarpOut;
  static constexpr size_t kSmem = kBars + 16 * kStages + 1024;  // + room to align the base
  static_assert(kStage % 1024 == 0 && kBBytes % 1024 == 0, "tiles must stay 1024-byte aligned (128-byte swizzle)");
};

using Geom = TconvGeom;

#ifdef SG2_HAVE_WGMMA
using namespace sm90;

template <int BNC, bool F16>
__device__ __forceinline__ void mma(float (&d)[BNC / 2], const uint32_t (&a)[4], uint64_t desc, int scale_d) {
  if constexpr (F16) {
    if constexpr (BNC == 64)
      wgmma_f16_n64(d, a, desc, scale_d);
    else
      wgmma_f16_n32(d, a, desc, scale_d);
  } else {
    if constexpr (BNC == 64)
      wgmma_tf32_n64(d, a, desc, scale_d);
    else
      wgmma_tf32_n32(d, a, desc, scale_d);
  }
}

/// The nine taps' filter descriptors of step s at bt (tap t's rows at bt + t kTap), materialized
/// before the MMAs that read them (no instruction may define a wgmma's inputs inside its group).
template <uint32_t kTap>
__device__ __forceinline__ void tap_descs(uint64_t (&d)[9], uint32_t bt) {
#pragma unroll
  for (int t = 0; t < 9; ++t) {
    d[t] = smem_desc(bt + uint32_t(t) * kTap);
    asm volatile("" : "+l"(d[t]));
  }
}

/// The nine taps' MMAs of one 8-deep step into the four output phases' sums, in the kernel's fixed
/// order (the first MMA of each phase scaled by `first`: 0 starts it from zero), one wgmma group's
/// worth; `x` the A fragments of the four input taps, `d` the nine taps' filter descriptors.
template <int BNC, bool F16>
__device__ __forceinline__ void phase_mmas(float (&acc)[4][BNC / 2], const uint32_t (&x)[4][4], const uint64_t (&d)[9],
                                           int first, int one) {
  mma<BNC, F16>(acc[0], x[0], d[0], first);
  mma<BNC, F16>(acc[1], x[0], d[1], first);
  mma<BNC, F16>(acc[2], x[0], d[3], first);
  mma<BNC, F16>(acc[3], x[0], d[4], first);
  mma<BNC, F16>(acc[0], x[1], d[2], one);
  mma<BNC, F16>(acc[2], x[1], d[5], one);
  mma<BNC, F16>(acc[0], x[2], d[6], one);
  mma<BNC, F16>(acc[1], x[2], d[7], one);
  mma<BNC, F16>(acc[0], x[3], d[8], one);
}

/// Keeps a set of A fragments alive (unmodified) up to here: the MMAs read them asynchronously.
__device__ __forceinline__ void reg_keep(const uint32_t (&r)[4][4]) {
#pragma unroll
  for (int n = 0; n < 4; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" ::"r"(r[n][i]) : "memory");
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
#endif  // SG2_HAVE_WGMMA

#ifdef SG2_HAVE_WGMMA
/// The consumer warpgroups' loop (tc_tconv_kernel).
template <int BNC, Ops OPS>
__device__ __forceinline__ void consume(const TcTconvArgs& a, const Geom& gm, uint32_t sbase, uint32_t full,
                                        uint32_t empty, int warp, int lane) {
  constexpr bool X3 = OPS == Ops::tf32x3;
  using C = Cfg<BNC, X3>;
  constexpr int S = C::kStages;
  constexpr bool F16 = OPS == Ops::f16;
  constexpr int R = BNC / 2;
  constexpr uint32_t kTap = BNC * 128;
  // this lane's ldmatrix row (cell) and its four neighbours' halo rows
  const int g = lane >> 2, t4 = lane & 3;
  const int wrow = warp * 16;  // the warp's first cell of the tile
  const int cells = gm.th * gm.tw;
  int lm = wrow + (lane & 7) + 8 * ((lane >> 3) & 1);
  if (lm >= cells) lm = 0;  // rows past the tile: any halo row (their outputs are dropped)
  const int lr = lm / gm.tw, lc = lm - lr * gm.tw;
  uint32_t nb_off[4], nb_key[4];  // neighbours (di, dj) = (0, 0), (0, 1), (1, 0), (1, 1)
#pragma unroll
  for (int nb = 0; nb < 4; ++nb) {
    const int hp = (lr + 1 - (nb >> 1)) * (gm.tw + 1) + (lc + 1 - (nb & 1));
    nb_off[nb] = uint32_t(hp) * 128;
    nb_key[nb] = uint32_t(hp & 7);
  }
  const uint32_t half = uint32_t(lane >> 4);  // matrices 2, 3: the second 16 bytes of the step

  float acc[4][R];
#pragma unroll
  for (int p = 0; p < 4; ++p)
#pragma unroll
    for (int e = 0; e < R; ++e) acc[p][e] = 0.0f;
  // 3xTF32: one step's products (from zero), added into acc after the step: a 32-deep chain per
  // output at most (the four taps of P0 x 8 channels), as tc_conv's 3xTF32 chunks
  constexpr int RP = R;  // (unused, and so eliminated, but for 3xTF32)
  float part[4][RP];
#pragma unroll
  for (int p = 0; p < 4; ++p)
#pragma unroll
    for (int e = 0; e < RP; ++e) part[p][e] = 0.0f;
  uint32_t fa[4][4], fb[4][4];  // the two fragment sets (even and odd steps): x (3xTF32: its heads)
  uint32_t la[4][4], lb[4][4];  // 3xTF32: the tails of x (unused otherwise)
#pragma unroll
  for (int nb = 0; nb < 4; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) fa[nb][i] = fb[nb][i] = la[nb][i] = lb[nb][i] = 0;
  auto release = [&](int stage) {
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + 8 * stage);
  };
  // The four neighbours' fragments of step s (16 or 8 deep) of the chunk in stage `st` (3xTF32: x
  // = hi + lo, the head truncated to TF32 and the tail the exact rest, as tc_conv's tf32_split).
  auto load = [&](uint32_t(&f)[4][4], uint32_t(&fl)[4][4], uint32_t st, int s) {
    const uint32_t at = st + C::kNB * C::kBBytes;
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) {
      ldmatrix_x4(f[nb], at + nb_off[nb] + ((((2 * uint32_t(s)) + half) ^ nb_key[nb]) << 4));
      if constexpr (X3) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t hi = f[nb][i] & 0xffffe000u;
          fl[nb][i] = __float_as_uint(__uint_as_float(f[nb][i]) - __uint_as_float(hi));
          f[nb][i] = hi;
        }
      } else if constexpr (!F16) {
#pragma unroll
        for (int i = 0; i < 4; ++i) f[nb][i] &= 0xffffe000u;  // TF32: truncated, as tc_conv's tf32 mode
      }
    }
  };
  // 3xTF32: the 27 MMAs of step s into part (from zero), in three groups of the nine taps in the
  // order below: x's tails times w's heads, x's heads times w's tails, then heads times heads.
  auto mmas_x3 = [&](uint32_t st, int s, const uint32_t(&cur)[4][4], const uint32_t(&curl)[4][4]) {
    const uint32_t bt = st + 32 * uint32_t(s);  // tap t's heads at bt + t kTap, its tails kBBytes on
    uint64_t d[9];
    tap_descs<kTap>(d, bt);
    int z = 0, one = 1;
    asm volatile("" : "+r"(z), "+r"(one));
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int e = 0; e < RP; ++e) reg_fence(part[p][e]);
    wg_fence();
    phase_mmas<BNC, false>(part, curl, d, z, one);
    wg_commit();
    tap_descs<kTap>(d, bt + uint32_t(C::kBBytes));
    phase_mmas<BNC, false>(part, cur, d, one, one);
    wg_commit();
    tap_descs<kTap>(d, bt);
    phase_mmas<BNC, false>(part, cur, d, one, one);
    wg_commit();
  };
  // The nine MMAs of step s of the chunk in `st` on the fragments `cur`, committed as one group.
  auto mmas = [&](uint32_t st, int s, int zero_first, const uint32_t(&cur)[4][4]) {
    // the nine taps' descriptors and the scales, defined before the group (no other instruction
    // may define a wgmma's inputs inside its pipeline stage: ptxas would serialize the MMAs)
    const uint32_t bt = st + 32 * uint32_t(s);  // tap t's rows at bt + t kTap
    uint64_t d[9];
    tap_descs<kTap>(d, bt);
    int z = zero_first, one = 1;
    asm volatile("" : "+r"(z), "+r"(one));
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int e = 0; e < R; ++e) reg_fence(acc[p][e]);
    wg_fence();
    phase_mmas<BNC, F16>(acc, cur, d, z, one);
    wg_commit();
  };
  // Issues step s: mmas, or the 3xTF32 step into part.
  auto issue = [&](uint32_t st, int s, int zero_first, const uint32_t(&cur)[4][4], const uint32_t(&curl)[4][4]) {
    if constexpr (X3) {
      mmas_x3(st, s, cur, curl);
    } else {
      mmas(st, s, zero_first, cur);
    }
  };
  // Waits for the groups in flight; their fragments stay untouched until then (3xTF32: then adds
  // the step's products into acc, rounding to nearest).
  auto retire = [&](const uint32_t(&cur)[4][4], const uint32_t(&curl)[4][4]) {
    wg_wait<0>();
    if constexpr (X3) {
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int e = 0; e < RP; ++e) reg_fence(part[p][e]);
      reg_keep(cur);
      reg_keep(curl);
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int e = 0; e < R; ++e) acc[p][e] += part[p][e];
    } else {
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int e = 0; e < R; ++e) reg_fence(acc[p][e]);
      reg_keep(cur);
    }
  };

  // Per step: the MMAs on one fragment set while the other loads the next step (the next chunk's
  // first after waiting for its copies), then wait. The two consumer warpgroups fill each other's
  // gaps on the tensor cores.
  int stage = 0;
  uint32_t phase = 0;
  for (int item = blockIdx.x; item < gm.items; item += gridDim.x) {
    const TconvItem it = tconv_item(gm, item);
    if constexpr (X3) {  // the step sums go into acc by adds: from zero for every item (the MMAs never clear it)
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int e = 0; e < R; ++e) acc[p][e] = 0.0f;
    }
    mbar_wait(full + 8 * stage, phase);  // the item's first chunk is in
    load(fa, la, sbase + uint32_t(stage) * C::kStage, 0);
    for (int c = 0; c < gm.nchunks; ++c) {
      const uint32_t st = sbase + uint32_t(stage) * C::kStage;
      const int next = stage + 1 == S ? 0 : stage + 1;
      const uint32_t next_phase = stage + 1 == S ? phase ^ 1 : phase;
      issue(st, 0, c > 0 ? 1 : 0, fa, la);
      load(fb, lb, st, 1);
      retire(fa, la);
      issue(st, 1, 1, fb, lb);
      load(fa, la, st, 2);
      retire(fb, lb);
      issue(st, 2, 1, fa, la);
      load(fb, lb, st, 3);
      retire(fa, la);
      issue(st, 3, 1, fb, lb);  // four 32-byte steps: 16-deep (fp16) or 8-deep (tf32, 3xTF32)
      if (c + 1 < gm.nchunks) {
        mbar_wait(full + 8 * next, next_phase);
        load(fa, la, sbase + uint32_t(next) * C::kStage, 0);
      }
      retire(fb, lb);
      release(stage);  // every MMA that read this stage has completed
      stage = next;
      phase = next_phase;
    }

    // epilogue: the four phases of the warp's 16 cells
    const int H = a.H, W = a.W, OW = 2 * W + 1;
    const size_t chan0 = size_t(it.ct) * BNC;
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int py = p >> 1, px = p & 1;
      if constexpr (F16) {
        constexpr int kRowBytes = BNC * 2, kPieces = kRowBytes / 16;
        const uint32_t out = sbase + uint32_t(C::kOut) + uint32_t(warp) * C::kWarpOut;
        auto swz = [](int row) { return kPieces == 8 ? (row & 7) : ((row >> 1) & 3); };
        const int srow = (lane & 7) + 8 * ((lane >> 3) & 1);
#pragma unroll
        for (int jj = 0; jj < BNC / 16; ++jj) {
          const uint32_t r[4] = {
              pack_half2(acc[p][8 * jj], acc[p][8 * jj + 1]), pack_half2(acc[p][8 * jj + 2], acc[p][8 * jj + 3]),
              pack_half2(acc[p][8 * jj + 4], acc[p][8 * jj + 5]), pack_half2(acc[p][8 * jj + 6], acc[p][8 * jj + 7])};
          const int piece = 2 * jj + (lane >> 4);
          stmatrix_x4(out + uint32_t(srow * kRowBytes + ((piece ^ swz(srow)) << 4)), r);
        }
        __syncwarp();
#pragma unroll
        for (int v = lane; v < 16 * kPieces; v += 32) {
          const int row = v / kPieces, piece = v - row * kPieces;
          uint4 val;
          asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                       : "=r"(val.x), "=r"(val.y), "=r"(val.z), "=r"(val.w)
                       : "r"(out + uint32_t(row * kRowBytes + ((piece ^ swz(row)) << 4))));
          const int m = wrow + row, rr = m / gm.tw, cc = m - rr * gm.tw;
          const int i = it.i0 + rr, j = it.j0 + cc;
          if (m < cells && i <= H && j <= W && (py == 0 || i < H) && (px == 0 || j < W)) {
            const size_t pix = (size_t(it.n) * (2 * H + 1) + size_t(2 * i + py)) * OW + size_t(2 * j + px);
            *reinterpret_cast<uint4*>(static_cast<__half*>(a.y) + pix * a.Cout + chan0 + piece * 8) = val;
          }
        }
        __syncwarp();
      } else {
        // acc[p][4 jb + 2 h + v]: cell wrow + g + 8 h, channel 8 jb + 2 t4 + v
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int m = wrow + g + 8 * h, rr = m / gm.tw, cc = m - rr * gm.tw;
          const int i = it.i0 + rr, j = it.j0 + cc;
          if (m >= cells || i > H || j > W || (py == 1 && i == H) || (px == 1 && j == W)) continue;
          const size_t pix = (size_t(it.n) * (2 * H + 1) + size_t(2 * i + py)) * OW + size_t(2 * j + px);
          float* o = static_cast<float*>(a.y) + pix * a.Cout + chan0 + 2 * t4;
#pragma unroll
          for (int jb = 0; jb < BNC / 8; ++jb)
            *reinterpret_cast<float2*>(o + 8 * jb) = make_float2(acc[p][4 * jb + 2 * h], acc[p][4 * jb + 2 * h + 1]);
        }
      }
    }
  }
}
#endif  // SG2_HAVE_WGMMA

template <int BNC, Ops OPS>
__global__ void __launch_bounds__(kThreads, 1)
    tc_tconv_kernel(TcTconvArgs a, Geom gm, const __grid_constant__ CUtensorMap map_x,
                    const __grid_constant__ CUtensorMap map_w, const __grid_constant__ CUtensorMap map_wlo) {
  dev::pdl_begin();
#ifdef SG2_HAVE_WGMMA
  constexpr bool X3 = OPS == Ops::tf32x3;
  using C = Cfg<BNC, X3>;
  constexpr int S = C::kStages;
  constexpr bool F16 = OPS == Ops::f16;
  constexpr int kC = F16 ? 64 : 32;  // input channels per chunk (128 bytes)
  constexpr uint32_t kTap = BNC * 128;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t sbase = raw_addr + ((1024u - (raw_addr & 1023u)) & 1023u);
  const uint32_t full = sbase + uint32_t(C::kBars), empty = full + 8 * S;  // stage s: + 8 s
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, 8);  // one arrival per consumer warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp >= 8) {  // the producer warpgroup: one lane issues every copy, stages in ring order
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (warp == 8 && lane == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int item = blockIdx.x; item < gm.items; item += gridDim.x) {
        const TconvItem it = tconv_item(gm, item);
        for (int c = 0; c < gm.nchunks; ++c) {
          mbar_wait(empty + 8 * stage, phase ^ 1);  // the consumers are done with this stage
          const uint32_t bar = full + 8 * stage, st = sbase + uint32_t(stage) * C::kStage;
          mbar_expect_tx(bar, uint32_t(C::kNB * C::kBBytes + gm.halo_bytes));
          tma_load_4d(st + C::kNB * C::kBBytes, &map_x, c * kC, it.j0 - 1, it.i0 - 1, it.n, bar);
#pragma unroll
          for (int b = 0; b < 3; ++b) tma_load_2d(st + b * 3 * kTap, &map_w, c * kC, (it.ct * 9 + 3 * b) * BNC, bar);
          if constexpr (X3) {  // the filter's tails
#pragma unroll
            for (int b = 0; b < 3; ++b)
              tma_load_2d(st + C::kBBytes + b * 3 * kTap, &map_wlo, c * kC, (it.ct * 9 + 3 * b) * BNC, bar);
          }
          if (++stage == S) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    consume<BNC, OPS>(a, gm, sbase, full, empty, warp, lane);
  }
#else
  // built without sm_90a code: DeviceCaps::wgmma is false and the engine never launches it
  (void)a;
  (void)gm;
  (void)map_wlo;
  if (threadIdx.x == 0 && blockIdx.x == 0) __trap();
#endif
}

int esz(const TcTconvArgs& a) { return a.operands == Ops::f16 ? 2 : 4; }
int chunk_channels(const TcTconvArgs& a) { return a.operands == Ops::f16 ? 64 : 32; }

CUtensorMap encode(const TcTconvArgs& a, int rank, const void* base, const cuuint64_t* dims, const cuuint64_t* strides,
                   const cuuint32_t* box, const char* what) {
  CUtensorMap m;
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  const CUtensorMapDataType dt = esz(a) == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = a.encode_tensor_map(&m, dt, cuuint32_t(rank), const_cast<void*>(base), dims, strides, box, estr,
                                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    fail(ErrorKind::device, "tc_tconv: cuTensorMapEncodeTiled (", what, ") failed (CUresult ", int(r), ")");
  return m;
}

template <int BNC, Ops OPS>
void launch(const TcTconvArgs& a, const Geom& g, cudaStream_t stream) {
  const int bnc = BNC;
  const cuuint64_t px = cuuint64_t(a.Cin) * esz(a);
  const cuuint64_t xdims[4] = {cuuint64_t(a.Cin), cuuint64_t(a.W), cuuint64_t(a.H), cuuint64_t(a.N)};
  const cuuint64_t xstrides[3] = {px, px * a.W, px * a.W * a.H};
  const cuuint32_t xbox[4] = {cuuint32_t(chunk_channels(a)), cuuint32_t(g.tw + 1), cuuint32_t(g.th + 1), 1};
  const CUtensorMap mx = encode(a, 4, a.x, xdims, xstrides, xbox, "activations");
  const cuuint64_t wdims[2] = {cuuint64_t(a.Cin), cuuint64_t(9) * a.Cout};
  const cuuint64_t wstrides[1] = {px};
  const cuuint32_t wbox[2] = {cuuint32_t(chunk_channels(a)), cuuint32_t(3 * bnc)};
  const CUtensorMap mw = encode(a, 2, a.w, wdims, wstrides, wbox, "filter");
  constexpr bool X3 = OPS == Ops::tf32x3;
  const CUtensorMap mwl = X3 ? encode(a, 2, a.w_lo, wdims, wstrides, wbox, "filter tails") : mw;
  auto* k = tc_tconv_kernel<BNC, OPS>;
  constexpr size_t smem = Cfg<BNC, X3>::kSmem;
  SG2_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int grid = std::max(1, std::min(g.items, a.num_sms));
  dev::launch("tc_tconv_kernel", k, grid, kThreads, smem, stream, a, g, mx, mw, mwl);
}

}  // namespace

void tc_tconv_wgmma(const TcTconvArgs& a, const TconvGeom& g, cudaStream_t stream) {
  const int bnc = tc_tconv_phase_channels(a.Cout, a.operands == Ops::tf32x3);
  if (a.operands == Ops::tf32x3) {
    launch<32, Ops::tf32x3>(a, g, stream);  // 32-channel phase tiles: two filter tiles per stage
  } else if (a.operands == Ops::f16) {
    if (bnc == 64)
      launch<64, Ops::f16>(a, g, stream);
    else
      launch<32, Ops::f16>(a, g, stream);
  } else {
    if (bnc == 64)
      launch<64, Ops::tf32>(a, g, stream);
    else
      launch<32, Ops::tf32>(a, g, stream);
  }
  SG2_LAUNCH_CHECK("tc_tconv_kernel");
}

}  // namespace sg2::cuda
