// sg2 CUDA kernels: the implicit-GEMM convolution on tensor cores, its mma.sync implementation
// (sm_80+) and the entry point that dispatches to the wgmma one (tc_conv.h).
//
// GEMM view: rows = output pixels (of one phase for the transposed conv), columns = output
// channels, k = (tap, input channel) in chunks of kBK = 32 channels of one tap. Block tile
// 128 x BN (BN = 64 or 32), 256 threads = 8 warps (4 along the pixels x 2 along the channels),
// each warp 32 x BN/2 outputs as m16n8k8 tiles. The tiles stream through a kStages-deep
// cp.async pipeline (16-byte copies, zero fill outside the image), one barrier per chunk. Shared
// rows are padded so that every fragment read hits 32 distinct banks:
//   A  [128 pixels][kBK + 4]      (channels contiguous, as in NHWC)
//   B  [BN channels][kBK + 4]     (packed filter [Cout, k, k, Cin]: input channels contiguous)
// The filter comes pre-split (its hi and lo parts, tf32x3_pack_weights); the activations are
// split as their fragments are read. Per 32-deep chunk and m16n8 tile: d = 0; for each of its
// four 8-deep steps d += lo(A) hi(B); d += hi(A) lo(B); d += hi(A) hi(B) on the tensor core; then
// acc += d in fp32 (round to nearest). Fixed order everywhere.
// The other operand modes (TcConvArgs::Operands) use the same tiles, copies and order, and chain
// every step into acc (no partial sums): tf32 issues only hi(A) hi(B); f16 reads each 32-bit word
// of the tiles as two fp16 values (a chunk is then 64 channels) and issues one m16n8k16 fp16 MMA
// per step: the fragments of m16n8k16 sit at the same 32-bit positions as those of m16n8k8 TF32.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/conv_taps.cuh"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/tc_conv.h"
#include "kernels/tc_conv_device.cuh"
#include "kernels/tc_conv_sm90.h"

namespace sg2::cuda {

namespace {

constexpr int kBM = 128, kBK = 32, kThreads = 256;
constexpr int kLaunchStages = 3;  // pipeline depth of the launched variant
constexpr int kAP = kBK + 4;      // A row pitch (floats)
constexpr int kBP = kBK + 4;      // B row pitch

using Ops = TcConvArgs::Operands;

template <int BN, Ops OPS = Ops::tf32x3>
struct Smem {
  static constexpr int kA = kBM * kAP;
  static constexpr int kB = BN * kBP;
  static constexpr int kStage = kA + (OPS == Ops::tf32x3 ? 2 : 1) * kB;  // words per stage: A, B hi (, B lo)
  static constexpr size_t bytes(int stages) { return size_t(stages) * kStage * sizeof(float); }
};

__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// TR: the stride-2 transposed conv (4 phases). 3xTF32 chains the four 8-deep steps of a 32-deep
// chunk in the tensor core before each fp32 add (measured the fastest at the FMA path's accuracy,
// docs/performance-notes.md session 2); tf32 and fp16 chain the whole k. Three pipeline stages,
// two resident blocks per SM where its shared memory holds them (one on sm_86/sm_89: 81 KiB blocks
// in 100 KiB; tc_conv_choose_splits still assumes two, which affects speed only).
template <int BN, bool TR, Ops OPS>
__global__ void __launch_bounds__(kThreads, 2) tc_conv_mma_kernel(TcConvArgs a) {
  dev::pdl_begin();
  constexpr int kStages = kLaunchStages;
  constexpr bool kChain = OPS != Ops::tf32x3;  // one tensor-core sum over the whole k
  using S = Smem<BN, OPS>;
  constexpr int ESZ = tc_element_bytes(OPS);
  constexpr int WN = BN / 2;  // channels per warp
  constexpr int MT = 2;       // m16 tiles per warp (32 pixels)
  constexpr int NT = WN / 8;  // n8 tiles per warp
  extern __shared__ __align__(16) float smem[];

  const int tid = threadIdx.x;
  const dev::TcTile<TR, ESZ> tl(a, BN);
  if (tl.m0 >= tl.M) return;  // whole block (phases have different sizes)
  const int n0 = tl.n0, nchunks = tl.nchunks, cbeg = tl.cbeg;
  const char* w_hi = static_cast<const char*>(a.w_hi);
  const char* w_lo = reinterpret_cast<const char*>(a.w_lo);

  auto issue = [&](int c, int stage) {
    float* As = smem + stage * S::kStage;
    float* Bh = As + S::kA;
    float* Bl = Bh + S::kB;
    int ci0;
    const dev::ConvTap tp = tl.tap(c, ci0);
    tl.issue_a(a, tp, ci0, As, kAP);
    // BN rows (output channels) of kBK input channels: 8 segments per row
    constexpr int total = BN * 8;
#pragma unroll
    for (int q = tid; q < total; q += kThreads) {
      const int n = q >> 3, sg = q & 7;
      const size_t off = ((size_t(n0 + n) * tl.taps + tp.index) * a.Cin + ci0) * ESZ + 16 * sg;
      dev::cp_async16(Bh + n * kBP + 4 * sg, w_hi + off, 16);
      if constexpr (OPS == Ops::tf32x3) dev::cp_async16(Bl + n * kBP + 4 * sg, w_lo + off, 16);
    }
  };

  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int wm = (warp & 3) * 32, wn = (warp >> 2) * WN;
  float acc[MT][NT][4];
  float part[kChain ? 1 : MT][kChain ? 1 : NT][4];  // 3xTF32: the chunk's partial sums
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nchunks) issue(cbeg + s, s);
    dev::cp_async_commit();
  }
  for (int c = 0; c < nchunks; ++c) {
    dev::cp_async_wait<kStages - 2>();
    __syncthreads();  // chunk c is in; every warp is done with the stage refilled below
    if (c + kStages - 1 < nchunks) issue(cbeg + c + kStages - 1, (c + kStages - 1) % kStages);
    dev::cp_async_commit();
    const float* As = smem + (c % kStages) * S::kStage;
    const uint32_t* Bh = reinterpret_cast<const uint32_t*>(As + S::kA);
    const uint32_t* Bl = Bh + S::kB;
#pragma unroll
    for (int ks = 0; ks < kBK; ks += 8) {  // 8 words: 8 TF32 or 16 fp16 values of k
      uint32_t ahi[MT][4], alo[MT][4];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const float* p = As + (wm + 16 * i + g) * kAP + ks + t4;
        const float v[4] = {p[0], p[8 * kAP], p[4], p[8 * kAP + 4]};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if constexpr (OPS == Ops::tf32x3)
            dev::tf32_split(v[e], ahi[i][e], alo[i][e]);
          else if constexpr (OPS == Ops::tf32)
            ahi[i][e] = __float_as_uint(v[e]) & 0xffffe000u;  // truncated
          else
            ahi[i][e] = __float_as_uint(v[e]);  // two fp16 values
        }
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {  // one n8 tile's filter fragments at a time (registers)
        const int n = wn + 8 * j + g;
        const int i0 = n * kBP + ks + t4;
        const int i1 = i0 + 4;
        const uint32_t bhi[2] = {Bh[i0], Bh[i1]};
        uint32_t blo[2] = {0, 0};
        if constexpr (OPS == Ops::tf32x3) {
          blo[0] = Bl[i0];
          blo[1] = Bl[i1];
        }
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          if constexpr (OPS == Ops::tf32x3) {
            float(&d)[4] = part[i][j];
            if (ks == 0) {
#pragma unroll
              for (int e = 0; e < 4; ++e) d[e] = 0.0f;
            }
            mma_tf32(d, alo[i], bhi);
            mma_tf32(d, ahi[i], blo);
            mma_tf32(d, ahi[i], bhi);
            if (ks == kBK - 8) {
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[i][j][e] += d[e];
            }
          } else if constexpr (OPS == Ops::tf32) {
            mma_tf32(acc[i][j], ahi[i], bhi);
          } else {
            mma_f16(acc[i][j], ahi[i], bhi);
          }
        }
      }
    }
  }
  dev::cp_async_wait<0>();

  // c0, c1: row g, columns 2 t4 and 2 t4 + 1; c2, c3: row g + 8
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = tl.m0 + wm + 16 * i + g + 8 * h;
      if (m >= tl.M) continue;
      const size_t o = tl.out_offset(a, m);
#pragma unroll
      for (int j = 0; j < NT; ++j)
        dev::store_pair<ESZ>(a, tl.partial, o + n0 + wn + 8 * j + 2 * t4, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
    }
}

/// y = sum over s of partial[s] in the order s = 0, 1, ... (fp32, round to nearest), stored as
/// fp32 or (F16) fp16.
template <bool F16>
__global__ void split_k_sum_kernel(const float4* partial, int64_t n4, int splits, void* y) {
  dev::pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4; i += int64_t(gridDim.x) * blockDim.x) {
    // from zero, in split order: the folded launch (TcConvArgs::fold_splits) adds the same way
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s = 0; s < splits; ++s) {
      const float4 v = partial[s * n4 + i];
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
    if constexpr (F16) {
      __half2* o = static_cast<__half2*>(y) + 2 * i;
      o[0] = __floats2half2_rn(acc.x, acc.y);
      o[1] = __floats2half2_rn(acc.z, acc.w);
    } else {
      static_cast<float4*>(y)[i] = acc;
    }
  }
}

int64_t out_elems(const TcConvArgs& a) {
  return int64_t(a.N) * (a.transposed ? int64_t(2 * a.H + 1) * (2 * a.W + 1) : int64_t(a.H) * a.W) * a.Cout;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <int BN, Ops OPS>
void launch_v(const TcConvArgs& a, dim3 grid, cudaStream_t stream) {
  constexpr size_t bytes = Smem<BN, OPS>::bytes(kLaunchStages);
  // the transposed conv is a template parameter: no run-time selects in the inner loops
  auto* k = a.transposed ? tc_conv_mma_kernel<BN, true, OPS> : tc_conv_mma_kernel<BN, false, OPS>;
  // opt in to more than 48 KiB of dynamic shared memory (a host-side setting; cheap)
  SG2_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  dev::launch("tc_conv_mma_kernel", k, grid, kThreads, bytes, stream, a);
}

template <int BN>
void launch(const TcConvArgs& a, dim3 grid, cudaStream_t stream) {
  // 3xTF32: chained 32-deep chunks, 3 stages, 2 blocks per SM: the fastest of the variants measured
  // on an H200 (docs/performance-notes.md, run 7: every-step adds 231 img/s, chunk chains with 4
  // stages and 1 block/SM 233, this 242 at ffhq1024-f fp32 batch 32), at the FMA path's accuracy.
  switch (a.operands) {
    case Ops::tf32x3:
      launch_v<BN, Ops::tf32x3>(a, grid, stream);
      break;
    case Ops::tf32:
      launch_v<BN, Ops::tf32>(a, grid, stream);
      break;
    case Ops::f16:
      launch_v<BN, Ops::f16>(a, grid, stream);
      break;
  }
}

}  // namespace

bool tc_conv_shape_ok(const TcConvArgs& a) {
  const int64_t M = int64_t(a.N) * (a.H + 1) * (a.W + 1);
  const int64_t in = int64_t(a.N) * a.H * a.W;
  return (a.k == 3 || (a.k == 1 && !a.transposed)) && a.N > 0 && a.H > 0 && a.W > 0 && a.H < 16384 && a.W < 16384 &&
         a.Cin > 0 && a.Cin % tc_chunk_channels(a.operands) == 0 && a.Cout > 0 && a.Cout % 32 == 0 &&
         M < (int64_t(1) << 31) - kBM && in < (int64_t(1) << 31);
}

bool tc_conv_supports(const TcConvArgs& a) {
  const int64_t M = int64_t(a.N) * (a.H + 1) * (a.W + 1);
  const int64_t in = int64_t(a.N) * a.H * a.W;
  const bool lo_ok = a.operands != TcConvArgs::Operands::tf32x3 || (a.w_lo && aligned16(a.w_lo));
  return tc_conv_shape_ok(a) && (a.k == 3 || a.impl == TcConvArgs::Impl::mma) && a.x && a.y &&
         M < (int64_t(1) << 31) - kBM && in < (int64_t(1) << 31) && aligned16(a.x) && a.w_hi && aligned16(a.w_hi) &&
         lo_ok && aligned16(a.y) && a.splits >= 1 && a.splits <= 32 && (a.splits == 1 || aligned16(a.partial));
}

bool tc_conv_wgmma_probe() { return tc_wgmma_probe(); }

PFN_cuTensorMapEncodeTiled_v12000 tc_conv_tensor_map_encoder() { return tc_tensor_map_encoder(); }

int tc_conv_block_channels(const TcConvArgs& a, TcConvArgs::Impl impl) {
  if (impl == TcConvArgs::Impl::wgmma) return tc_wgmma_bn(a);
  return a.Cout % 64 == 0 ? 64 : 32;
}

namespace {
dim3 grid_of(const TcConvArgs& a, int bn) {
  const int64_t M = a.transposed ? int64_t(a.N) * (a.H + 1) * (a.W + 1) : int64_t(a.N) * a.H * a.W;
  return dim3(static_cast<unsigned>((M + kBM - 1) / kBM), static_cast<unsigned>(a.Cout / bn),
              static_cast<unsigned>((a.transposed ? 4 : 1) * a.splits));
}
}  // namespace

int tc_conv_choose_splits(const TcConvArgs& a, int num_sms) {
  // Estimated time in chunk steps: the longest block (max_chunks / s) or the whole work spread
  // over the resident slots, whichever is longer. The transposed conv's phases differ (4, 2, 2
  // and 1 taps), so splitting its heavy phase pays even where the grid already fills the GPU.
  const int bn = tc_conv_block_channels(a, a.impl);
  if (bn == 0) return 1;
  const int resident = a.impl == TcConvArgs::Impl::wgmma ? 1 : 2;  // blocks per SM
  const int cpt = a.Cin / tc_chunk_channels(a.operands);
  int64_t work = 0;  // chunk steps of all blocks
  int max_chunks = 0;
  for (int ph = 0; ph < (a.transposed ? 4 : 1); ++ph) {
    const int py = ph >> 1, px = ph & 1;
    const int64_t M = a.transposed ? int64_t(a.N) * (a.H + 1 - py) * (a.W + 1 - px) : int64_t(a.N) * a.H * a.W;
    const int chunks = a.transposed ? (py ? 1 : 2) * (px ? 1 : 2) * cpt : a.k * a.k * cpt;
    work += (M + kBM - 1) / kBM * (a.Cout / bn) * chunks;
    max_chunks = std::max(max_chunks, chunks);
  }
  const double slots = double(resident) * std::max(num_sms, 1);
  auto time = [&](int s) { return std::max(double(max_chunks) / s, double(work) / slots); };
  int best = 1;
  // larger splits only for a clear gain (> 10 %; each split also costs a partial output), and at
  // least 4 chunks per split
  for (int s = 2; s <= 32 && max_chunks / s >= 4; s *= 2)
    if (time(s) < 0.9 * time(best)) best = s;
  return best;
}

size_t tc_conv_smem_bytes(const TcConvArgs& a) {
  // what launch_v asks for: the filter's tails only in the 3xTF32 mode (tf32 and fp16 tiles are alike)
  const bool wide = a.Cout % 64 == 0;
  if (a.operands == Ops::tf32x3)
    return wide ? Smem<64, Ops::tf32x3>::bytes(kLaunchStages) : Smem<32, Ops::tf32x3>::bytes(kLaunchStages);
  return wide ? Smem<64, Ops::tf32>::bytes(kLaunchStages) : Smem<32, Ops::tf32>::bytes(kLaunchStages);
}

size_t tc_conv_workspace(const TcConvArgs& a) {
  return a.splits > 1 ? size_t(a.splits) * size_t(out_elems(a)) * sizeof(float) : 0;
}

void tc_conv(const TcConvArgs& args, cudaStream_t stream) {
  if (!tc_conv_supports(args)) fail(ErrorKind::internal, "tc_conv: unsupported shape");
  TcConvArgs a = args;
  a.fold_splits = false;
  const bool wgmma = a.impl == TcConvArgs::Impl::wgmma;
  const bool chain = a.operands != TcConvArgs::Operands::tf32x3;
  // Launch-time choices that never change an output's bits (batch invariance): wider blocks, and
  // the splits of the split-K factor folded into each block, where the grid fills the GPU anyway.
  if (wgmma && chain && a.block_channels == 0 && a.num_sms > 0 && a.splits == 1 && a.Cout % 256 == 0) {
    TcConvArgs wide = a;
    wide.block_channels = 256;
    const dim3 g = grid_of(wide, 256);
    if (int64_t(g.x) * g.y * g.z >= 2 * int64_t(a.num_sms)) a.block_channels = 256;
  }
  int bn = tc_conv_block_channels(a, a.impl);
  if (bn == 0 || (wgmma && a.encode_tensor_map == nullptr))
    fail(ErrorKind::internal, "tc_conv: the wgmma kernel cannot take this shape or has no tensor-map encoder");
  if (wgmma && a.splits > 1 && bn <= 128 && a.fold != 0) {
    TcConvArgs one = a;
    one.splits = 1;
    const dim3 g = grid_of(one, bn);
    a.fold_splits = a.fold == 1 || (a.num_sms > 0 && int64_t(g.x) * g.y * g.z >= int64_t(a.num_sms));
  }
  TcConvArgs grid_args = a;
  if (a.fold_splits) grid_args.splits = 1;
  const dim3 grid = grid_of(grid_args, bn);
  if (wgmma) {
    tc_conv_wgmma(a, grid, bn, stream);
  } else {
    if (bn == 64)
      launch<64>(a, grid, stream);
    else
      launch<32>(a, grid, stream);
    SG2_LAUNCH_CHECK("tc_conv_mma_kernel");
  }
  if (a.splits > 1 && !a.fold_splits) {
    const int64_t n4 = out_elems(a) / 4;
    const int blocks = static_cast<int>(std::min<int64_t>((n4 + 255) / 256, 1024));
    if (a.operands == TcConvArgs::Operands::f16)
      dev::launch("split_k_sum_kernel", split_k_sum_kernel<true>, blocks, 256, 0, stream,
                  reinterpret_cast<const float4*>(a.partial), n4, a.splits, a.y);
    else
      dev::launch("split_k_sum_kernel", split_k_sum_kernel<false>, blocks, 256, 0, stream,
                  reinterpret_cast<const float4*>(a.partial), n4, a.splits, a.y);
    SG2_LAUNCH_CHECK("split_k_sum_kernel");
  }
}

}  // namespace sg2::cuda
