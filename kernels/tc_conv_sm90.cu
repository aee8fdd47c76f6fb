// sg2 CUDA kernels: the 3xTF32 convolution on Hopper's warpgroup MMA (wgmma), compiled for sm_90a
// only (CMakeLists.txt); entry points in kernels/tc_conv_sm90.h, dispatch in tc_conv.cu.
//
// Same GEMM, splits, chunking and summation order as the mma.sync kernel (tc_conv.h): block
// tile 128 pixels x BN channels (BN = 64 or 128), 256 threads = 2 warpgroups of 64 pixels each.
// Per 32-deep chunk a warpgroup loads and splits its activations (registers, the m64k8 A fragment:
// a0 (row g, k t4), a1 (g + 8, t4), a2 (g, t4 + 4), a3 (g + 8, t4 + 4) of the warp's 16 rows) and
// issues twelve chained wgmma m64nBNk8 from a zero accumulator: per 8-deep step lo(A) hi(B),
// hi(A) lo(B), hi(A) hi(B); the tensor cores read hi(B) and lo(B) straight from shared memory.
// Then the chunk's sum is added to the fp32 accumulator (round to nearest).
//
// Copies (kStages deep): the filter tiles, BN rows of 32 floats (128 bytes) with the 16-byte pieces
// of row n at piece ^ (n % 8) (the 128-byte swizzle the descriptors name), come by TMA (two 2-D
// copies per chunk, issued by thread 0, completing on the stage's mbarrier). The activation tile
// comes by one 4-D TMA copy too where every tile (128 or 256 pixels) is a box of [N, H, W, Cin]
// (tc_wgmma_activation_box: forward convs with W | 128 or 128 | W; the padding is zero-filled by the
// copy engine; rows of 32 floats, 128-byte swizzled), else by cp.async per thread into [128][36] floats. Activations
// reach the tensor cores through registers only, so no proxy fence is needed: a block barrier per chunk (the cp.async
// data; stage reuse) and the mbarrier wait (the TMA data) order everything. In the chained modes over at most 128
// channels per block, a tile may be 256 pixels (use_256_pixels): each warpgroup two 64-row halves with their own
// accumulator chains on the same filter tile, the same sums (TensorCoreWgmma256PixelTilesAgreeBitForBit). Measured on
// an H200 (docs/performance-notes.md, session 4): b64.conv1 of ffhq1024-f at batch 32 in 4.8-5.2 ms, 75-80 % of the
// tensor cores' measured TF32 rate (three MMAs per multiply-add). The other operand modes (TcConvArgs::Operands) share
// everything but the MMAs: tf32 issues hi(A) hi(B) alone; f16 moves fp16 data (a 128-byte row is then 64 channels),
// uses each 32-bit word of the A fragment as two fp16 values (the m64k16 fp16 fragment sits at the same word positions
// as the m64k8 TF32 one) and issues one m64nNk16 fp16 wgmma per 32-byte step.
#include <cuda.h>          // CUtensorMap and its enums
#include <cudaTypedefs.h>  // the encoder's type (the function itself comes through the runtime)

#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/sm90_ops.cuh"
#include "kernels/tc_conv_device.cuh"
#include "kernels/tc_conv_sm90.h"

namespace sg2::cuda {

namespace {

constexpr int kBM = 128, kBK = 32, kThreads = 256;  // kBK: 32-bit words per 128-byte row
constexpr int kAP = kBK + 4;                        // activation tile row pitch (words)
using Ops = TcConvArgs::Operands;

/// Whether every bm-pixel tile of this forward convolution is one box of the [N, H, W, Cin] tensor
/// (tc_wgmma_activation_box, for 128 or 256 pixels); sets the box.
bool activation_box(const TcConvArgs& a, int bm, uint32_t (&box)[4]);

template <int BN, Ops OPS, int MH = 1>
struct WgCfg {
  // Stages: chunk c - 1 is being read by the tensor cores, c is being split, c + 1 .. c + kStages
  // - 3 are in flight, and c + kStages - 2 is being issued (the stage chunk c - 2 left).
  static constexpr int kStages = 4;
  static constexpr int kNB = OPS == Ops::tf32x3 ? 2 : 1;  // filter tiles per stage: hi (, lo)
  static constexpr int kBBytes = BN * 128;                // one filter tile
  // the activation tile: [128][36] words (cp.async), or 256 rows of 128 bytes (MH = 2: 256-pixel
  // tiles, activations by TMA)
  static constexpr int kABytes = MH == 1 ? kBM * kAP * 4 : MH * kBM * 128;
  static constexpr int kStage = kNB * kBBytes + kABytes;       // a multiple of 1024: every tile 1024-aligned
  static constexpr size_t kBars = size_t(kStages) * kStage;    // the stages' mbarriers
  static constexpr size_t kSmem = kBars + 8 * kStages + 1024;  // + room to align the base
  static_assert(kStage % 1024 == 0, "filter tiles must stay 1024-byte aligned (128-byte swizzle)");
};

#ifdef SG2_HAVE_WGMMA
using namespace sm90;

/// Keeps a set of A fragments alive (unmodified) up to here: the MMAs read them asynchronously.
__device__ __forceinline__ void reg_keep(const uint32_t (&r)[4][4]) {
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" ::"r"(r[s][i]) : "memory");
}

/// One m64nBN MMA step of the operand type: TF32 (k8) or fp16 (k16).
template <int BN, bool F16>
__device__ __forceinline__ void wgmma(float (&d)[BN / 2], const uint32_t (&a)[4], uint64_t b, int scale_d) {
  if constexpr (F16) {
    if constexpr (BN == 64)
      wgmma_f16_n64(d, a, b, scale_d);
    else if constexpr (BN == 128)
      wgmma_f16_n128(d, a, b, scale_d);
    else
      wgmma_f16_n256(d, a, b, scale_d);
  } else {
    if constexpr (BN == 64)
      wgmma_tf32_n64(d, a, b, scale_d);
    else if constexpr (BN == 128)
      wgmma_tf32_n128(d, a, b, scale_d);
    else
      wgmma_tf32_n256(d, a, b, scale_d);
  }
}
#endif  // SG2_HAVE_WGMMA

/// A 32-bit word of the A fragment as the tensor cores take it: tf32x3 splits the fp32 value
/// into hi and lo, tf32 truncates it to TF32, f16 passes its two fp16 values through.
template <Ops OPS>
__device__ __forceinline__ void fragment(float v, uint32_t& hi, uint32_t& lo) {
  if constexpr (OPS == Ops::tf32x3) {
    dev::tf32_split(v, hi, lo);
  } else if constexpr (OPS == Ops::tf32) {
    hi = __float_as_uint(v) & 0xffffe000u;
    lo = 0;
  } else {
    hi = __float_as_uint(v);
    lo = 0;
  }
}

// TA: the activation tile by TMA too (forward convolutions whose 128 MH-pixel tiles are boxes of the
// [N, H, W, Cin] tensor, activation_box): one 4-D copy per chunk, the padding zero-filled by the copy
// engine, 128-byte swizzled; else cp.async per thread into [128][36] floats (MH = 1 only).
// FOLD: the block runs every split of the split-K factor one after another (TcConvArgs::fold_splits).
// tf32 and f16: each split's chain in `part`, added to acc at its end. 3xTF32 (no registers for a
// third set): each split's sum in acc as before, added at its end into the block's own fp32 output
// tile in y (y = 0 + p0, then y + p1, ...: the order of the partials' sum kernel, so the same bits).
template <int BN, int MH, bool TR, bool TA, Ops OPS, bool FOLD>
__global__ void __launch_bounds__(kThreads, 1)
    tc_conv_wgmma_kernel(TcConvArgs a, const __grid_constant__ CUtensorMap map_hi,
                         const __grid_constant__ CUtensorMap map_lo, const __grid_constant__ CUtensorMap map_x) {
  dev::pdl_begin();
  static_assert(!(TR && TA), "activation boxes: forward convolutions only");
  static_assert(MH == 1 || (MH == 2 && TA && OPS != Ops::tf32x3 && !FOLD && BN <= 128),
                "256-pixel tiles: activation boxes, chained modes, no folded splits, at most 128 channels");
#ifdef SG2_HAVE_WGMMA
  using C = WgCfg<BN, OPS, MH>;
  constexpr int BM = kBM * MH;  // pixels per tile
  constexpr int R = BN / 2;     // accumulator registers per thread
  constexpr int ESZ = tc_element_bytes(OPS);
  constexpr int kC = tc_chunk_channels(OPS);  // input channels per chunk
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024u - (raw_addr & 1023u)) & 1023u;
  unsigned char* const smem = smem_raw + pad;
  const uint32_t sbase = raw_addr + pad;

  const int tid = threadIdx.x;
  const dev::TcTile<TR, ESZ, BM> tl(a, BN);
  if (tl.m0 >= tl.M) return;  // whole block (phases have different sizes)
  const int n0 = tl.n0, nchunks = tl.nchunks, cbeg = tl.cbeg;
  constexpr int S = C::kStages;
  const uint32_t bars = sbase + uint32_t(C::kBars);  // stage s: bars + 8 s
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) mbar_init(bars + 8 * s, 1);
    mbar_init_fence();
  }
  __syncthreads();

  // Copies, with a cursor instead of per-chunk index arithmetic (chunks are issued in order): the
  // next chunk's tap and first input channel, and per tap the source pixel of each of this
  // thread's four activation rows (-1: outside the image, zero-filled). Activations: cp.async,
  // thread tid the 16-byte segment tid & 7 of rows (tid >> 3) + 32 j. Filter tiles (hi, lo): two
  // TMA copies by thread 0, which write the 128-byte swizzle themselves and complete on the
  // stage's mbarrier.
  const int seg = tid & 7, row = tid >> 3;
  int cur_t = cbeg / tl.cpt, cur_ci = (cbeg - cur_t * tl.cpt) * kC;
  int src_pix[4], tap_off = 0, box_x = 0, box_y = 0, box_n = 0;
  if constexpr (TA) {  // the tile's first pixel: sample, row, column (the box's origin before the tap)
    const int hw = a.H * a.W;
    box_n = tl.m0 / hw;
    const int r = tl.m0 - box_n * hw;
    box_y = r / a.W;
    box_x = r - box_y * a.W;
  }
  int ox = box_x, oy = box_y;  // the current tap's box origin (TA)
  auto set_tap = [&](int t) {
    const dev::ConvTap tp = dev::conv_tap(TR, t, tl.py, tl.px, tl.nx);
    tap_off = tp.index * a.Cin;
    if constexpr (TA) {
      ox = box_x + tp.dx;
      oy = box_y + tp.dy;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int iy = (tl.ayx[j] >> 16) + tp.dy, ix = (tl.ayx[j] & 0xffff) + tp.dx;
        src_pix[j] = iy >= 0 && iy < a.H && ix >= 0 && ix < a.W ? tl.apix[j] + iy * a.W + ix : -1;
      }
    }
  };
  set_tap(cur_t);
  auto issue = [&](int stage) {
    if constexpr (!TA) {
      unsigned char* st = smem + stage * C::kStage;
      float* As = reinterpret_cast<float*>(st + C::kNB * C::kBBytes) + row * kAP + 4 * seg;
      const char* x = static_cast<const char*>(a.x);
      const char* xs = x + size_t(cur_ci) * ESZ + 16 * seg;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const bool in = src_pix[j] >= 0;
        dev::cp_async16(As + 32 * j * kAP, in ? xs + size_t(src_pix[j]) * a.Cin * ESZ : x, in ? 16 : 0);
      }
    }
    if (tid == 0) {
      const uint32_t dst = sbase + stage * C::kStage, bar = bars + 8 * stage;
      mbar_expect_tx(bar, (OPS == Ops::tf32x3 ? 2 : 1) * C::kBBytes + (TA ? BM * 128 : 0));
      tma_load_2d(dst, &map_hi, tap_off + cur_ci, n0, bar);
      if constexpr (OPS == Ops::tf32x3) tma_load_2d(dst + C::kBBytes, &map_lo, tap_off + cur_ci, n0, bar);
      if constexpr (TA) tma_load_4d(dst + C::kNB * C::kBBytes, &map_x, cur_ci, ox, oy, box_n, bar);
    }
    cur_ci += kC;
    if (cur_ci == a.Cin) {  // next tap (past the last one: computed, never used)
      cur_ci = 0;
      set_tap(++cur_t);
    }
  };

  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  // the warp's first pixel row in the tile (MH = 2: and 64 rows below, its warpgroup's second half)
  const int wr = (warp >> 2) * 64 * MH + (warp & 3) * 16;
  // tf32x3: each chunk summed from zero in `part`, then added to acc (round to nearest); the other
  // modes chain every chunk's MMAs into acc (one tensor-core sum over the whole k)
  constexpr bool kChain = OPS != Ops::tf32x3;
  static_assert(!FOLD || BN <= 128, "folded splits: at most 128 channels");
  constexpr int kPart = kChain && !FOLD ? 1 : R;     // registers of the partial chain
  float acc[R], part[kPart], acc1[MH == 2 ? R : 1];  // acc1: MH = 2, the second half's
#pragma unroll
  for (int e = 0; e < R; ++e) acc[e] = acc1[e % (MH == 2 ? R : 1)] = 0.0f;
#pragma unroll
  for (int e = 0; e < kPart; ++e) part[e] = 0.0f;
  // 3xTF32 folded: adds the split's sum acc into y (from zero at the first split), then clears acc
  // (accumulator e = 4 j + 2 h + {0, 1}: row g + 8 h, columns 8 j + 2 t4 + {0, 1}, as the epilogue)
  auto flush_split = [&](bool first_split) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = tl.m0 + wr + g + 8 * h;
      if (m >= tl.M) continue;
      float* o = static_cast<float*>(a.y) + tl.out_offset(a, m) + n0 + 2 * t4;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        float2 v = first_split ? make_float2(0.0f, 0.0f) : *reinterpret_cast<const float2*>(o + 8 * j);
        v.x += acc[4 * j + 2 * h];
        v.y += acc[4 * j + 2 * h + 1];
        *reinterpret_cast<float2*>(o + 8 * j) = v;
      }
    }
#pragma unroll
    for (int e = 0; e < R; ++e) acc[e] = 0.0f;
  };

#pragma unroll
  for (int s = 0; s < S - 2; ++s) {
    if (s < nchunks) issue(s);
    dev::cp_async_commit();
  }
  // Software pipeline, one chunk per step, two register sets for the split activations (x: this
  // chunk's, y: the previous chunk's, still read by its MMAs): wait for chunk c's copies, refill
  // the stage of chunk c - 2, split chunk c, wait for chunk c - 1's MMAs (3xTF32: and add their
  // sum to acc), then issue chunk c's MMAs without waiting (chained modes: issue, then wait for
  // chunk c - 1). The tensor cores thus work through the barrier, the copies and the splitting.
  // (first: a compile-time flag, so that the compiler sees every read of the MMAs' registers
  // behind a wait)
  // Waits for the MMAs in flight, keeps the activation registers they read alive until then, and
  // adds their chunk sum to acc (round to nearest; 3xTF32).
  auto retire = [&](const auto&... sets) {
    wg_wait<0>();
    if constexpr (kChain && !FOLD) {
#pragma unroll
      for (int e = 0; e < R; ++e) reg_fence(acc[e]);
      if constexpr (MH == 2) {
#pragma unroll
        for (int e = 0; e < R; ++e) reg_fence(acc1[e]);
      }
    } else {
#pragma unroll
      for (int e = 0; e < R; ++e) reg_fence(part[e]);
    }
    (reg_keep(sets), ...);
    if constexpr (!kChain) {
#pragma unroll
      for (int e = 0; e < R; ++e) acc[e] += part[e];
    }
  };
  auto step = [&](auto first, int c, uint32_t(&xhi)[4][4], uint32_t(&xlo)[4][4], uint32_t(&yhi)[4][4],
                  uint32_t(&ylo)[4][4]) {
    dev::cp_async_wait<S - 3>();
    __syncthreads();  // chunk c's activations are in; chunk c - 2's MMAs are done (waited for last step)
    mbar_wait(bars + 8 * (c % S), (c / S) & 1);  // chunk c's filter tiles are in
    if (c + S - 2 < nchunks) issue((c + S - 2) % S);
    dev::cp_async_commit();
    const int stage = c % S;
    const float* at = reinterpret_cast<const float*>(smem + stage * C::kStage + C::kNB * C::kBBytes);
    if constexpr (TA) {
      // rows of 32 floats, the 16-byte piece q of row r at q ^ (r % 8); rows wr + g and wr + g + 8
      // both have r % 8 == g
      const float* p = at + (wr + g) * kBK + t4;
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const int q0 = ((2 * s) ^ g) * 4, q1 = ((2 * s + 1) ^ g) * 4;
        fragment<OPS>(p[q0], xhi[s][0], xlo[s][0]);
        fragment<OPS>(p[8 * kBK + q0], xhi[s][1], xlo[s][1]);
        fragment<OPS>(p[q1], xhi[s][2], xlo[s][2]);
        fragment<OPS>(p[8 * kBK + q1], xhi[s][3], xlo[s][3]);
        if constexpr (MH == 2) {  // the second half, 64 rows below (the same row % 8), into the second set
          uint32_t unused;
          fragment<OPS>(p[64 * kBK + q0], xlo[s][0], unused);
          fragment<OPS>(p[72 * kBK + q0], xlo[s][1], unused);
          fragment<OPS>(p[64 * kBK + q1], xlo[s][2], unused);
          fragment<OPS>(p[72 * kBK + q1], xlo[s][3], unused);
        }
      }
    } else {
      const float* p = at + (wr + g) * kAP + t4;
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        fragment<OPS>(p[8 * s], xhi[s][0], xlo[s][0]);
        fragment<OPS>(p[8 * kAP + 8 * s], xhi[s][1], xlo[s][1]);
        fragment<OPS>(p[8 * s + 4], xhi[s][2], xlo[s][2]);
        fragment<OPS>(p[8 * kAP + 8 * s + 4], xhi[s][3], xlo[s][3]);
      }
    }
    const uint32_t bh = sbase + stage * C::kStage;
    if constexpr (kChain && FOLD) {
      // the chain of chunk c's split in part: from zero at the split's first chunk, into acc
      // (round to nearest) after its last
      const bool split_first = c % tl.per_split == 0,
                 split_last = c % tl.per_split == tl.per_split - 1 || c == nchunks - 1;
      int z = split_first ? 0 : 1, one = 1;
      asm volatile("" : "+r"(z), "+r"(one));
#pragma unroll
      for (int e = 0; e < R; ++e) reg_fence(part[e]);
      wg_fence();
#pragma unroll
      for (int s = 0; s < 4; ++s) wgmma<BN, OPS == Ops::f16>(part, xhi[s], smem_desc(bh + 32 * s), s > 0 ? one : z);
      wg_commit();
      if (split_last) {
        wg_wait<0>();
#pragma unroll
        for (int e = 0; e < R; ++e) reg_fence(part[e]);
        reg_keep(xhi);
        reg_keep(yhi);
#pragma unroll
        for (int e = 0; e < R; ++e) acc[e] += part[e];
      } else if constexpr (!decltype(first)::value) {
        wg_wait<1>();
#pragma unroll
        for (int e = 0; e < R; ++e) reg_fence(part[e]);
        reg_keep(yhi);
      }
      (void)ylo;
    } else if constexpr (kChain) {
#pragma unroll
      for (int e = 0; e < R; ++e) reg_fence(acc[e]);
      if constexpr (MH == 2) {
#pragma unroll
        for (int e = 0; e < R; ++e) reg_fence(acc1[e]);
      }
      wg_fence();
#pragma unroll
      for (int s = 0; s < 4; ++s)  // k step s: 32 bytes into each 128-byte filter row
        wgmma<BN, OPS == Ops::f16>(acc, xhi[s], smem_desc(bh + 32 * s), decltype(first)::value ? s > 0 : 1);
      if constexpr (MH == 2) {  // the second half: the same filter tile, its own chain
#pragma unroll
        for (int s = 0; s < 4; ++s)
          wgmma<BN, OPS == Ops::f16>(acc1, xlo[s], smem_desc(bh + 32 * s), decltype(first)::value ? s > 0 : 1);
      }
      wg_commit();
      if constexpr (!decltype(first)::value) {
        wg_wait<1>();  // chunk c - 1's MMAs are done: its registers (y) and its stage are free
#pragma unroll
        for (int e = 0; e < R; ++e) reg_fence(acc[e]);
        reg_keep(yhi);
        if constexpr (MH == 2) {
#pragma unroll
          for (int e = 0; e < R; ++e) reg_fence(acc1[e]);
          reg_keep(ylo);
        }
      }
      (void)ylo;
    } else {
      if constexpr (!decltype(first)::value) {
        retire(yhi, ylo);  // chunk c - 1
        if constexpr (FOLD) {
          if ((c - 1) % tl.per_split == tl.per_split - 1) flush_split(c - 1 < tl.per_split);  // its split's last
        }
      }
#pragma unroll
      for (int e = 0; e < R; ++e) reg_fence(part[e]);
      wg_fence();
#pragma unroll
      for (int s = 0; s < 4; ++s) {  // k step s: 32 bytes into each 128-byte filter row
        wgmma<BN, false>(part, xlo[s], smem_desc(bh + 32 * s), s > 0);
        wgmma<BN, false>(part, xhi[s], smem_desc(bh + C::kBBytes + 32 * s), 1);
        wgmma<BN, false>(part, xhi[s], smem_desc(bh + 32 * s), 1);
      }
      wg_commit();
    }
  };
  uint32_t ahi[4][4], alo[4][4], bhi[4][4], blo[4][4];
  if (nchunks > 0) {
    step(std::true_type{}, 0, ahi, alo, bhi, blo);
    int c = 1;
    for (; c + 1 < nchunks; c += 2) {
      step(std::false_type{}, c, bhi, blo, ahi, alo);
      step(std::false_type{}, c + 1, ahi, alo, bhi, blo);
    }
    if (c < nchunks) step(std::false_type{}, c, bhi, blo, ahi, alo);
    retire(ahi, alo, bhi, blo);  // the last chunk
  }
  dev::cp_async_wait<0>();

  if constexpr (FOLD && !kChain) {  // the last split's sum into y
    if (nchunks > 0) flush_split(nchunks - 1 < tl.per_split);
  } else {
    // accumulator e = 4 j + 2 h + {0, 1}: row g + 8 h, columns 8 j + 2 t4 + {0, 1} (acc1: 64 rows below)
    auto store = [&](const auto& v, int row) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = tl.m0 + row + g + 8 * h;
        if (m >= tl.M) continue;
        const size_t o = tl.out_offset(a, m) + n0 + 2 * t4;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          dev::store_pair<ESZ>(a, tl.partial, o + 8 * j, v[4 * j + 2 * h], v[4 * j + 2 * h + 1]);
      }
    };
    store(acc, wr);
    if constexpr (MH == 2) store(acc1, wr + 64);
  }
#else
  // built without sm_90a code: tc_conv_wgmma_probe() says false, never launched
  if (threadIdx.x == 0 && blockIdx.x == 0) __trap();
#endif
}

/// Writes 1 where this kernel image was compiled with the wgmma instructions.
__global__ void wgmma_probe_kernel(int* out) {
  dev::pdl_begin();
#ifdef SG2_HAVE_WGMMA
  *out = 1;
#else
  *out = 0;
#endif
}

bool probe_device() {
  int dev = 0, major = 0, minor = 0;
  SG2_CUDA_CHECK(cudaGetDevice(&dev));
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major != 9 || minor != 0) return false;
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, wgmma_probe_kernel) != cudaSuccess) {
    cudaGetLastError();  // no image for this GPU: not available
    return false;
  }
  int* d = nullptr;
  SG2_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  int h = 0;
  wgmma_probe_kernel<<<1, 1>>>(d);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (e != cudaSuccess) fail(ErrorKind::device, "tc_conv: the wgmma probe failed: ", cudaGetErrorString(e));
  return h == 1;
}

/// TMA map of a packed filter [Cout, 9 Cin] (fp32): boxes of 32 k x BN rows, 128-byte swizzle
/// (the layout the kernel's descriptors name).
CUtensorMap filter_map(const TcConvArgs& a, const void* w, int bn) {
  CUtensorMap m;
  const int esz = tc_element_bytes(a.operands);
  const cuuint64_t dims[2] = {cuuint64_t(9) * a.Cin, cuuint64_t(a.Cout)};
  const cuuint64_t strides[1] = {cuuint64_t(9) * a.Cin * esz};
  const cuuint32_t box[2] = {cuuint32_t(tc_chunk_channels(a.operands)), cuuint32_t(bn)};
  const cuuint32_t estr[2] = {1, 1};
  const CUtensorMapDataType dt = esz == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = a.encode_tensor_map(&m, dt, 2, const_cast<void*>(w), dims, strides, box, estr,
                                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) fail(ErrorKind::device, "tc_conv: cuTensorMapEncodeTiled failed (CUresult ", int(r), ")");
  return m;
}

/// TMA map of the activations [N, H, W, Cin] (fp32) with the given box, 128-byte swizzle.
CUtensorMap act_map(const TcConvArgs& a, const uint32_t (&box)[4]) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {cuuint64_t(a.Cin), cuuint64_t(a.W), cuuint64_t(a.H), cuuint64_t(a.N)};
  const int esz = tc_element_bytes(a.operands);
  const cuuint64_t px = cuuint64_t(a.Cin) * esz;
  const cuuint64_t strides[3] = {px, px * a.W, px * a.W * a.H};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  const CUtensorMapDataType dt = esz == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = a.encode_tensor_map(&m, dt, 4, const_cast<void*>(a.x), dims, strides, box, estr,
                                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    fail(ErrorKind::device, "tc_conv: cuTensorMapEncodeTiled (activations) failed (CUresult ", int(r), ")");
  return m;
}

template <int BN, int MH, bool TR, bool TA, Ops OPS>
void launch_t(const TcConvArgs& a, dim3 grid, const CUtensorMap& map_x, cudaStream_t stream) {
  using C = WgCfg<BN, OPS, MH>;
  auto* k = tc_conv_wgmma_kernel<BN, MH, TR, TA, OPS, false>;
  if constexpr (BN <= 128 && MH == 1) {
    if (a.fold_splits) k = tc_conv_wgmma_kernel<BN, MH, TR, TA, OPS, true>;
  }
  SG2_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmem)));
  const CUtensorMap hi = filter_map(a, a.w_hi, BN);
  const CUtensorMap lo = OPS == Ops::tf32x3 ? filter_map(a, a.w_lo, BN) : CUtensorMap{};
  dev::launch("tc_conv_wgmma_kernel", k, grid, kThreads, C::kSmem, stream, a, hi, lo, map_x);
}

/// Whether a forward convolution runs 256-pixel tiles (two 64-row halves per warpgroup, each its
/// own accumulator chain on the same filter tile: half the filter traffic per product, the same
/// sums): the chained modes, 128 channels per block (256-channel blocks already share each
/// activation tile over twice the channels), no folded splits, every 256-pixel tile a box of the
/// input; asked for (TcConvArgs::block_pixels), or where the grid of 256-pixel tiles still fills
/// the GPU twice over. These convolutions are bound by the traffic from L2 (session 18, H100, the
/// tiles' bytes per chunk over the layer's time: 7.1-8.1 TB/s on ffhq1024-f's b64/b128/b256.conv1 in
/// fp16); with 256-pixel tiles ffhq1024-f b256.conv1 at batch 32 took 1.59 -> 1.21 ms in fp16 and
/// 2.52 -> 1.99 in tf32, paper256 b128.conv1 at 128 1.61 -> 1.20-1.30. Sets box.
template <int BN, Ops OPS>
bool use_256_pixels(const TcConvArgs& a, uint32_t (&box)[4]) {
  if (OPS == Ops::tf32x3 || BN > 128 || a.fold_splits || a.block_pixels == 128 || !activation_box(a, 256, box))
    return false;
  if (a.block_pixels == 256) return true;
  const int64_t tiles = (int64_t(a.N) * a.H * a.W + 255) / 256 * (a.Cout / BN) * a.splits;
  return BN == 128 && a.num_sms > 0 && tiles >= 2 * int64_t(a.num_sms);
}

template <int BN, Ops OPS>
void launch_ops(const TcConvArgs& a, dim3 grid, cudaStream_t stream) {
  uint32_t box[4];
  if constexpr (OPS != Ops::tf32x3 && BN <= 128) {
    if (use_256_pixels<BN, OPS>(a, box)) {
      grid.x = static_cast<unsigned>((int64_t(a.N) * a.H * a.W + 255) / 256);
      return launch_t<BN, 2, false, true, OPS>(a, grid, act_map(a, box), stream);
    }
  }
  if (activation_box(a, kBM, box)) {
    launch_t<BN, 1, false, true, OPS>(a, grid, act_map(a, box), stream);
  } else {
    CUtensorMap unused{};
    if (a.transposed)
      launch_t<BN, 1, true, false, OPS>(a, grid, unused, stream);
    else
      launch_t<BN, 1, false, false, OPS>(a, grid, unused, stream);
  }
}

template <int BN>
void launch_bn(const TcConvArgs& a, dim3 grid, cudaStream_t stream) {
  if constexpr (BN == 256) {  // the chained modes only (3xTF32 has no registers for 256 columns)
    if (a.operands == Ops::f16)
      launch_ops<BN, Ops::f16>(a, grid, stream);
    else
      launch_ops<BN, Ops::tf32>(a, grid, stream);
  } else {
    switch (a.operands) {
      case Ops::tf32x3:
        launch_ops<BN, Ops::tf32x3>(a, grid, stream);
        break;
      case Ops::tf32:
        launch_ops<BN, Ops::tf32>(a, grid, stream);
        break;
      case Ops::f16:
        launch_ops<BN, Ops::f16>(a, grid, stream);
        break;
    }
  }
}

}  // namespace

bool tc_wgmma_activation_box(const TcConvArgs& a, uint32_t (&box)[4]) { return activation_box(a, kBM, box); }

namespace {
bool activation_box(const TcConvArgs& a, int bm, uint32_t (&box)[4]) {
  if (a.transposed || !a.tma_activations) return false;
  box[0] = uint32_t(tc_chunk_channels(a.operands));
  if (a.W <= bm && bm % a.W == 0) {
    const int rows = bm / a.W;
    box[1] = a.W;
    if (a.H % rows == 0) {
      box[2] = rows;
      box[3] = 1;
      return true;
    }
    if (rows % a.H == 0) {
      box[2] = a.H;
      box[3] = rows / a.H;  // <= 256
      return true;
    }
    return false;
  }
  if (a.W % bm == 0) {
    box[1] = bm;
    box[2] = box[3] = 1;
    return true;
  }
  return false;
}
}  // namespace

bool tc_wgmma_probe() { return probe_device(); }

int tc_wgmma_block_pixels(const TcConvArgs& a, int bn) {
  uint32_t box[4];
  const bool chained = a.operands != Ops::tf32x3;
  if (bn == 128 && chained) return use_256_pixels<128, Ops::f16>(a, box) ? 256 : kBM;
  if (bn == 64 && chained) return use_256_pixels<64, Ops::f16>(a, box) ? 256 : kBM;
  return kBM;
}

PFN_cuTensorMapEncodeTiled_v12000 tc_tensor_map_encoder() {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
#if CUDART_VERSION >= 12050
  const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
#else
  const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q);
#endif
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();
    fail(ErrorKind::device, "tc_conv: the driver has no cuTensorMapEncodeTiled (", cudaGetErrorString(e), ")");
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
}

int tc_wgmma_bn(const TcConvArgs& a) {
  if (a.block_channels > 0) {  // asked for (the kernel runner): where the shape and the mode allow it
    const bool ok =
        (a.block_channels == 64 || a.block_channels == 128 || (a.block_channels == 256 && a.operands != Ops::tf32x3)) &&
        a.Cout % a.block_channels == 0;
    return ok ? a.block_channels : 0;
  }
  if (a.Cout % 64 != 0) return 0;
  return a.Cout % 128 == 0 ? 128 : 64;
}

void tc_conv_wgmma(const TcConvArgs& a, dim3 grid, int bn, cudaStream_t stream) {
  if (bn == 256)
    launch_bn<256>(a, grid, stream);
  else if (bn == 128)
    launch_bn<128>(a, grid, stream);
  else
    launch_bn<64>(a, grid, stream);
  SG2_LAUNCH_CHECK("tc_conv_wgmma_kernel");
}

}  // namespace sg2::cuda
