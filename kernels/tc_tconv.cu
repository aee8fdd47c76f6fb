// sg2 CUDA kernels: the stride-2 transposed convolution as one tensor-core GEMM per tile of cells
// (tc_tconv.h): its mma.sync implementation (sm_80+), the host parts and the entry point that
// dispatches to the Hopper one (tc_tconv_sm90.cu).
//
// A block is 256 threads, 8 warps: 4 along the tile's 128 cells (warp w: cells 32 (w & 3) ..
// + 31, two m16 rows of MMAs) x 2 along the bnc output channels (bnc / 2 each), every warp all
// four phases. Per chunk of 64 bytes of input channels (32 fp16 or 16 fp32), stage s of a
// cp.async ring (2 to 4 stages, as deep as the block's shared memory allows) holds
//   B: the chunk's filter, 9 taps x bnc rows of 64 bytes;
//   A: the (TH + 1) x (TW + 1) input pixels around the tile, row y (TW + 1) + x of 64 bytes,
//      zero-filled outside the image;
// each row's four 16-byte pieces swizzled (piece ^ (row >> 1) & 3) so that any eight consecutive
// rows read at one piece hit 32 distinct banks (a warp's eight cells are consecutive halo rows but
// where they wrap to the next tile row, which skips one: a two-way conflict there, as on Hopper). Per 32-byte step (16
// fp16 or 8 TF32 values of k), a warp loads its cells' four neighbours x[i - di, j - dj] with one ldmatrix.x4 each per
// m16 row (every lane addresses its own halo row), then tap by tap the filter's fragments (ldmatrix.x4: 16 channels)
// and the MMAs into the four phase accumulators, in the order of the Hopper kernel: P0 += n00 w0, P1 += n00 w1, P2 +=
// n00 w3, P3 += n00 w4, P0 += n01 w2, P2 += n01 w5, P0 += n10 w6, P1 += n10 w7, P0 += n11 w8. Per warp and step: 8 + 9
// bnc / 32 fragment loads (ldmatrix.x4) for 9 bnc / 8 MMAs of m16n8 (72 at bnc 64). The ring runs over the block's
// (item, chunk) sequence: the chunks of the next item load while this item's last ones multiply and its outputs are
// stored (fp16 pairs or fp32 pairs).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/tc_conv_device.cuh"
#include "kernels/tc_tconv.h"
#include "kernels/tc_tconv_impl.cuh"

namespace sg2::cuda {

namespace {

using Ops = TcTconvArgs::Operands;
constexpr int kThreads = 256;
constexpr int kChunkBytes = 64;  // bytes of input channels per pixel and chunk (two 32-byte steps)

template <int BNC>
struct MmaCfg {
  static constexpr int kBBytes = 9 * BNC * kChunkBytes;        // the chunk's filter
  static constexpr int kABytes = kTconvMaxHalo * kChunkBytes;  // the halo, at most
  static constexpr int kStage = kBBytes + kABytes;             // 48 KiB (bnc 64) or 30 KiB (32)
  static constexpr size_t smem(int stages) { return size_t(stages) * kStage; }
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <bool F16>
__device__ __forceinline__ void mma16x8(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (F16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

/// Byte offset of 16-byte piece `piece` of 64-byte row `row` in a stage's A or B (swizzled).
__host__ __device__ constexpr uint32_t swz64(int row, int piece) {
  return uint32_t(row) * kChunkBytes + (uint32_t(piece ^ ((row >> 1) & 3)) << 4);
}

template <int BNC, Ops OPS, int S>
__global__ void __launch_bounds__(kThreads, 1) tc_tconv_mma_kernel(TcTconvArgs a, TconvGeom gm) {
  dev::pdl_begin();
  using C = MmaCfg<BNC>;
  constexpr bool F16 = OPS == Ops::f16;
  constexpr int ESZ = F16 ? 2 : 4;
  constexpr int WN = BNC / 2;                                                     // channels per warp
  constexpr int NT = WN / 8;                                                      // n8 tiles per warp
  constexpr int HALO_PER_THREAD = (kTconvMaxHalo * 4 + kThreads - 1) / kThreads;  // 16-byte pieces
  constexpr int B_PIECES = 9 * BNC * 4, B_PER_THREAD = (B_PIECES + kThreads - 1) / kThreads;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sbase = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int my_items = gm.items > int(blockIdx.x) ? (gm.items - 1 - int(blockIdx.x)) / int(gridDim.x) + 1 : 0;
  const int steps = my_items * gm.nchunks;  // the block's (item, chunk) sequence
  const int cells = gm.th * gm.tw, hw = gm.tw + 1;
  const int halo = (gm.th + 1) * hw;

  // the copies of this thread: halo pieces tid + 256 j (pixel v >> 2 of the halo, piece v & 3)
  int hy[HALO_PER_THREAD], hx[HALO_PER_THREAD];
#pragma unroll
  for (int j = 0; j < HALO_PER_THREAD; ++j) {
    const int h = (tid + kThreads * j) >> 2;
    hy[j] = h < halo ? h / hw : -1;
    hx[j] = h < halo ? h - (h / hw) * hw : 0;
  }
  const char* xg = static_cast<const char*>(a.x);
  const char* wg = static_cast<const char*>(a.w);
  auto issue = [&](int q) {
    const int item = int(blockIdx.x) + (q / gm.nchunks) * int(gridDim.x), c = q % gm.nchunks;
    const TconvItem it = tconv_item(gm, item);
    unsigned char* sp = smem + size_t(q % S) * C::kStage;
#pragma unroll
    for (int j = 0; j < B_PER_THREAD; ++j) {
      const int v = tid + kThreads * j, r = v >> 2, piece = v & 3;
      if (B_PIECES % kThreads != 0 && v >= B_PIECES) break;
      const char* src = wg + (size_t(it.ct) * 9 * BNC + r) * size_t(a.Cin) * ESZ + c * kChunkBytes + 16 * piece;
      dev::cp_async16(sp + swz64(r, piece), src, 16);
    }
#pragma unroll
    for (int j = 0; j < HALO_PER_THREAD; ++j) {
      if (hy[j] < 0) continue;
      const int v = tid + kThreads * j, h = v >> 2, piece = v & 3;
      const int iy = it.i0 - 1 + hy[j], ix = it.j0 - 1 + hx[j];
      const bool in = iy >= 0 && iy < a.H && ix >= 0 && ix < a.W;
      const char* src =
          in ? xg + ((size_t(it.n) * a.H + iy) * a.W + ix) * size_t(a.Cin) * ESZ + c * kChunkBytes + 16 * piece : xg;
      dev::cp_async16(sp + C::kBBytes + swz64(h, piece), src, in ? 16 : 0);
    }
  };

  // this lane's ldmatrix rows: A (per m16 row mi, the cell's four neighbours' halo rows) and B
  const int wm = (warp & 3) * 32, wn = (warp >> 2) * WN;
  uint32_t a_off[2][4];  // step 0; step 1 is ^ 32 (the piece's bit 1)
#pragma unroll
  for (int mi = 0; mi < 2; ++mi) {
    int m = wm + 16 * mi + (lane & 7) + 8 * ((lane >> 3) & 1);
    if (m >= cells) m = 0;  // rows past the tile: any halo row (their outputs are dropped)
    const int lr = m / gm.tw, lc = m - lr * gm.tw;
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) {
      const int hp = (lr + 1 - (nb >> 1)) * hw + (lc + 1 - (nb & 1));
      a_off[mi][nb] = uint32_t(C::kBBytes) + swz64(hp, lane >> 4);
    }
  }
  // tap t's 16-channel group np: rows t BNC + wn + 16 np + (lane & 7) + 8 (lane >> 4); a multiple of
  // 8 plus the lane's row, so the swizzle depends on the lane alone
  const uint32_t b_off = swz64((lane & 7) + 8 * (lane >> 4), (lane >> 3) & 1) + uint32_t(wn) * kChunkBytes;

  // the thread's output cells (rows g and g + 8 of each m16 row) and channels
  const int g = lane >> 2, t4 = lane & 3;
  int cy[4], cx[4];  // the cell's (row, column) in the tile; row -1: past the tile
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int m = wm + 16 * (k >> 1) + g + 8 * (k & 1);
    cy[k] = m < cells ? m / gm.tw : -1;
    cx[k] = m < cells ? m - (m / gm.tw) * gm.tw : 0;
  }

  float acc[4][2][NT][4] = {};
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < steps) issue(s);
    dev::cp_async_commit();
  }
  for (int q = 0; q < steps; ++q) {
    dev::cp_async_wait<S - 2>();
    __syncthreads();  // step q's chunk is in; every warp is done with the stage refilled below
    if (q + S - 1 < steps) issue(q + S - 1);
    dev::cp_async_commit();
    const int c = q % gm.nchunks;
    if (c == 0) {
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
          for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[p][mi][j][e] = 0.0f;
    }
    const uint32_t st = sbase + uint32_t(q % S) * C::kStage;
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const uint32_t sx = uint32_t(s) << 5;  // the step's pieces: 2 s, 2 s + 1
      uint32_t fa[4][2][4];                  // [neighbour][mi]
#pragma unroll
      for (int nb = 0; nb < 4; ++nb)
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
          ldmatrix_x4(fa[nb][mi], st + (a_off[mi][nb] ^ sx));
          if constexpr (!F16) {
#pragma unroll
            for (int e = 0; e < 4; ++e) fa[nb][mi][e] &= 0xffffe000u;  // TF32: truncated, as the Hopper kernel
          }
        }
      // (neighbour, tap, phase) in the fixed order
      constexpr int kNb[9] = {0, 0, 0, 0, 1, 1, 2, 2, 3};
      constexpr int kTap[9] = {0, 1, 3, 4, 2, 5, 6, 7, 8};
      constexpr int kPh[9] = {0, 1, 2, 3, 0, 2, 0, 1, 0};
#pragma unroll
      for (int u = 0; u < 9; ++u) {
        uint32_t fb[NT / 2][4];
#pragma unroll
        for (int np = 0; np < NT / 2; ++np)
          ldmatrix_x4(fb[np], st + ((b_off + uint32_t(kTap[u] * BNC + 16 * np) * kChunkBytes) ^ sx));
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
          for (int j = 0; j < NT; ++j)
            mma16x8<F16>(acc[kPh[u]][mi][j], fa[kNb[u]][mi], fb[j >> 1][2 * (j & 1)], fb[j >> 1][2 * (j & 1) + 1]);
      }
    }
    if (c + 1 < gm.nchunks) continue;

    // the item's outputs: acc[p][mi][j][2 h + v] is cell wm + 16 mi + g + 8 h, channel wn + 8 j + 2 t4 + v
    const TconvItem it = tconv_item(gm, int(blockIdx.x) + (q / gm.nchunks) * int(gridDim.x));
    const int H = a.H, W = a.W, OW = 2 * W + 1;
    const size_t chan0 = size_t(it.ct) * BNC + wn + 2 * t4;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int mi = k >> 1, h = k & 1;
      const int i = it.i0 + cy[k], j = it.j0 + cx[k];
      if (cy[k] < 0 || i > H || j > W) continue;
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const int py = p >> 1, px = p & 1;
        if ((py == 1 && i == H) || (px == 1 && j == W)) continue;
        const size_t pix = (size_t(it.n) * (2 * H + 1) + size_t(2 * i + py)) * OW + size_t(2 * j + px);
        const size_t o = pix * a.Cout + chan0;
#pragma unroll
        for (int jj = 0; jj < NT; ++jj) {
          const float v0 = acc[p][mi][jj][2 * h], v1 = acc[p][mi][jj][2 * h + 1];
          if constexpr (F16)
            *reinterpret_cast<__half2*>(static_cast<__half*>(a.y) + o + 8 * jj) = __floats2half2_rn(v0, v1);
          else
            *reinterpret_cast<float2*>(static_cast<float*>(a.y) + o + 8 * jj) = make_float2(v0, v1);
        }
      }
    }
  }
  dev::cp_async_wait<0>();
}

/// The deepest ring (2 to 4 stages) within the block's shared memory; 0: not even two.
template <int BNC>
int mma_stages(size_t smem_per_block) {
  for (int s = 4; s >= 2; --s)
    if (MmaCfg<BNC>::smem(s) <= smem_per_block) return s;
  return 0;
}

template <int BNC, Ops OPS, int S>
void launch_mma_s(const TcTconvArgs& a, const TconvGeom& g, cudaStream_t stream) {
  auto* k = tc_tconv_mma_kernel<BNC, OPS, S>;
  const size_t bytes = MmaCfg<BNC>::smem(S);
  SG2_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  const int grid = std::max(1, std::min(g.items, a.num_sms));
  dev::launch("tc_tconv_mma_kernel", k, grid, kThreads, bytes, stream, a, g);
}

template <int BNC, Ops OPS>
void launch_mma(const TcTconvArgs& a, const TconvGeom& g, cudaStream_t stream) {
  switch (mma_stages<BNC>(a.smem_per_block)) {
    case 4:
      launch_mma_s<BNC, OPS, 4>(a, g, stream);
      break;
    case 3:
      launch_mma_s<BNC, OPS, 3>(a, g, stream);
      break;
    default:
      launch_mma_s<BNC, OPS, 2>(a, g, stream);
      break;
  }
}

int chunk_channels(const TcTconvArgs& a) { return a.operands == Ops::f16 ? 64 : 32; }
bool x3(const TcTconvArgs& a) { return a.operands == Ops::tf32x3; }
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

int tc_tconv_phase_channels(int cout, bool tf32x3) { return cout % 64 == 0 && !tf32x3 ? 64 : 32; }

void tc_tconv_pack_weights(const float* w, int cin, int cout, float* out, bool tf32x3) {
  const int bnc = tc_tconv_phase_channels(cout, tf32x3);
  for (int ct = 0; ct < cout / bnc; ++ct)
    for (int t = 0; t < 9; ++t)
      for (int o = 0; o < bnc; ++o)
        for (int i = 0; i < cin; ++i)
          out[((size_t(ct) * 9 + t) * bnc + o) * cin + i] = w[(size_t(i) * 9 + t) * cout + size_t(ct) * bnc + o];
}

void tc_tconv_tile(int H, int W, int* rows, int* cols) {
  // the fewest tiles over the (H + 1) x (W + 1) cells; ties: the wider tile (longer output rows)
  int best_r = 1, best_c = 1;
  int64_t best_tiles = -1;
  for (int r = 1; r <= std::min(kTconvMaxCells, H + 1); ++r) {
    const int c = std::min({kTconvMaxCells / r, W + 1, kTconvMaxHalo / (r + 1) - 1});
    if (c < 1) break;
    const int64_t tiles = int64_t((H + r) / r) * ((W + c) / c);
    if (best_tiles < 0 || tiles < best_tiles) {
      best_r = r;
      best_c = c;
      best_tiles = tiles;
    }
  }
  *rows = best_r;
  *cols = best_c;
}

bool tc_tconv_shape_ok(const TcTconvArgs& a) {
  return a.N > 0 && a.H > 0 && a.W > 0 && a.H < 32768 && a.W < 32768 && a.Cin > 0 && a.Cin <= 65536 &&
         a.Cin % chunk_channels(a) == 0 && a.Cout > 0 && a.Cout % 32 == 0 &&
         int64_t(a.N) * (a.H + 1) * (a.W + 1) * (a.Cout / tc_tconv_phase_channels(a.Cout, x3(a))) < (int64_t(1) << 31);
}

size_t tc_tconv_mma_smem(const TcTconvArgs& a) {
  return tc_tconv_phase_channels(a.Cout) == 64 ? MmaCfg<64>::smem(2) : MmaCfg<32>::smem(2);
}

bool tc_tconv_supports(const TcTconvArgs& a) {
  // 3xTF32: wgmma only, with the filter's tails
  const bool impl_ok = a.impl == TcTconvArgs::Impl::wgmma
                           ? a.encode_tensor_map != nullptr && (!x3(a) || (a.w_lo && aligned16(a.w_lo)))
                           : !x3(a) && a.smem_per_block >= tc_tconv_mma_smem(a);
  return tc_tconv_shape_ok(a) && a.x && a.w && a.y && aligned16(a.x) && aligned16(a.w) && aligned16(a.y) &&
         a.num_sms > 0 && impl_ok;
}

TconvGeom tc_tconv_geom(const TcTconvArgs& a, int chunk_bytes) {
  TconvGeom g;
  tc_tconv_tile(a.H, a.W, &g.th, &g.tw);
  g.tiles_y = (a.H + g.th) / g.th;  // ceil((H + 1) / th)
  g.tiles_x = (a.W + g.tw) / g.tw;
  g.ct = a.Cout / tc_tconv_phase_channels(a.Cout, x3(a));
  g.items = a.N * g.tiles_y * g.tiles_x * g.ct;
  g.nchunks = a.Cin * (a.operands == Ops::f16 ? 2 : 4) / chunk_bytes;
  g.halo_bytes = (g.th + 1) * (g.tw + 1) * chunk_bytes;
  return g;
}

void tc_tconv(const TcTconvArgs& a, cudaStream_t stream) {
  if (!tc_tconv_supports(a)) fail(ErrorKind::internal, "tc_tconv: unsupported arguments");
  if (a.impl == TcTconvArgs::Impl::wgmma) {
    tc_tconv_wgmma(a, tc_tconv_geom(a, 128), stream);
    return;
  }
  const TconvGeom g = tc_tconv_geom(a, kChunkBytes);
  const bool f16 = a.operands == Ops::f16;
  if (tc_tconv_phase_channels(a.Cout) == 64) {
    if (f16)
      launch_mma<64, Ops::f16>(a, g, stream);
    else
      launch_mma<64, Ops::tf32>(a, g, stream);
  } else {
    if (f16)
      launch_mma<32, Ops::f16>(a, g, stream);
    else
      launch_mma<32, Ops::tf32>(a, g, stream);
  }
  SG2_LAUNCH_CHECK("tc_tconv_mma_kernel");
}

}  // namespace sg2::cuda
