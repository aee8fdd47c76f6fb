// sg2 CUDA kernels: strict-fp32 SIMT implicit-GEMM convolution (conv2d_simt.h).
//
// GEMM view: rows = output pixels (of one phase for the transposed conv), columns = output
// channels, k = (tap, input channel) in chunks of 8 channels of one tap. Block tile 128 x BN,
// 256 threads, each TM x 4 outputs in registers; shared-memory tiles double buffered with a
// register prefetch of the next chunk (one barrier per chunk). Plain FMAs in a fixed order: the
// same result for any batch size or position.
#include <algorithm>
#include <cstdint>

#include "kernels/conv2d_simt.h"
#include "kernels/conv_taps.cuh"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"

namespace sg2::cuda {

namespace {

constexpr int kBM = 128, kBK = 8, kThreads = 256;

template <int BN, int TM>
__global__ void __launch_bounds__(kThreads) conv_simt_kernel(SimtConvArgs a) {
  dev::pdl_begin();
  constexpr int TN = 4;
  constexpr int TX = BN / TN;        // threads along the channels
  constexpr int TY = kThreads / TX;  // threads along the pixels
  static_assert(TY * TM == kBM, "tile shape");
  constexpr int AP = kBM + 4, BP = BN + 4;  // padded rows: conflict-free transposed stores
  __shared__ __align__(16) float As[2][kBK][AP];
  __shared__ __align__(16) float Bs[2][kBK][BP];

  const int tid = threadIdx.x;
  const int py = a.transposed ? int(blockIdx.z >> 1) : 0, px = a.transposed ? int(blockIdx.z & 1) : 0;
  const int Ho = a.transposed ? a.H + 1 - py : a.H;
  const int Wo = a.transposed ? a.W + 1 - px : a.W;
  const int HWo = Ho * Wo;
  const int M = a.N * HWo;
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * BN;
  if (m0 >= M) return;  // whole block (phases have different sizes)
  const int ny = a.transposed ? (py ? 1 : 2) : 3, nx = a.transposed ? (px ? 1 : 2) : 3;
  const int cpt = a.Cin / kBK;  // chunks per tap
  const int nchunks = ny * nx * cpt;

  // A loader: one pixel, 4 channels
  const int am = m0 + (tid >> 1), ah = tid & 1;
  const bool a_ok = am < M;
  int an = 0, ay = 0, ax = 0;
  if (a_ok) {
    an = am / HWo;
    const int r = am - an * HWo;
    ay = r / Wo;
    ax = r - ay * Wo;
  }
  const float* xn = a.x + size_t(an) * a.H * a.W * a.Cin;
  // B loader: forward [Cout][9][Cin] -> one channel, 4 k; transposed [Cin][9][Cout] -> one k, 4 channels
  const bool b_ok = tid < 2 * BN;
  const int bco = tid >> 1, bh = tid & 1;                // forward
  const int bkr = tid / (BN / 4), bc4 = tid % (BN / 4);  // transposed

  float4 ra, rb;
  auto load = [&](int c) {
    const int t = c / cpt, ci0 = (c - t * cpt) * kBK;
    const dev::ConvTap tp = dev::conv_tap(a.transposed, t, py, px, nx);
    const int tap = tp.index, dy = tp.dy, dx = tp.dx;
    const int iy = ay + dy, ix = ax + dx;
    if (a_ok && iy >= 0 && iy < a.H && ix >= 0 && ix < a.W)
      ra = *reinterpret_cast<const float4*>(xn + (size_t(iy) * a.W + ix) * a.Cin + ci0 + 4 * ah);
    else
      ra = make_float4(0.f, 0.f, 0.f, 0.f);
    if (b_ok) {
      if (a.transposed)
        rb = *reinterpret_cast<const float4*>(a.w + (size_t(ci0 + bkr) * 9 + tap) * a.Cout + n0 + 4 * bc4);
      else
        rb = *reinterpret_cast<const float4*>(a.w + (size_t(n0 + bco) * 9 + tap) * a.Cin + ci0 + 4 * bh);
    }
  };
  auto store = [&](int buf) {
    const int m = tid >> 1;
    As[buf][4 * ah + 0][m] = ra.x;
    As[buf][4 * ah + 1][m] = ra.y;
    As[buf][4 * ah + 2][m] = ra.z;
    As[buf][4 * ah + 3][m] = ra.w;
    if (b_ok) {
      if (a.transposed) {
        *reinterpret_cast<float4*>(&Bs[buf][bkr][4 * bc4]) = rb;
      } else {
        Bs[buf][4 * bh + 0][bco] = rb.x;
        Bs[buf][4 * bh + 1][bco] = rb.y;
        Bs[buf][4 * bh + 2][bco] = rb.z;
        Bs[buf][4 * bh + 3][bco] = rb.w;
      }
    }
  };

  const int tx = tid % TX, ty = tid / TX;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  load(0);
  store(0);
  __syncthreads();
  for (int c = 0; c < nchunks; ++c) {
    const int buf = c & 1;
    if (c + 1 < nchunks) load(c + 1);
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float av[TM], bv[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&As[buf][k][g * (kBM / (TM / 4)) + ty * 4]);
        av[4 * g + 0] = v.x;
        av[4 * g + 1] = v.y;
        av[4 * g + 2] = v.z;
        av[4 * g + 3] = v.w;
      }
      const float4 w = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
      bv[0] = w.x;
      bv[1] = w.y;
      bv[2] = w.z;
      bv[3] = w.w;
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    if (c + 1 < nchunks) store(buf ^ 1);
    __syncthreads();
  }

  const int TH = 2 * a.H + 1, TW = 2 * a.W + 1;
#pragma unroll
  for (int g = 0; g < TM / 4; ++g)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int m = m0 + g * (kBM / (TM / 4)) + ty * 4 + i;
      if (m >= M) continue;
      size_t o;
      if (a.transposed) {
        const int n = m / HWo, r = m - n * HWo, oy = r / Wo, ox = r - oy * Wo;
        o = ((size_t(n) * TH + 2 * oy + py) * TW + 2 * ox + px) * a.Cout;
      } else {
        o = size_t(m) * a.Cout;
      }
      const float* v = acc[4 * g + i];
      *reinterpret_cast<float4*>(a.y + o + n0 + tx * 4) = make_float4(v[0], v[1], v[2], v[3]);
    }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

bool conv2d_simt_supports(const SimtConvArgs& a) {
  const int64_t M = int64_t(a.N) * (a.H + 1) * (a.W + 1);
  return a.N > 0 && a.Cin % kBK == 0 && a.Cout % 32 == 0 && a.Cout > 0 && M < (int64_t(1) << 31) - kBM &&
         aligned16(a.x) && aligned16(a.w) && aligned16(a.y) && (M + kBM - 1) / kBM < (int64_t(1) << 31);
}

void conv2d_simt(const SimtConvArgs& a, cudaStream_t stream) {
  if (!conv2d_simt_supports(a)) fail(ErrorKind::internal, "conv2d_simt: unsupported shape");
  const int64_t M = a.transposed ? int64_t(a.N) * (a.H + 1) * (a.W + 1) : int64_t(a.N) * a.H * a.W;
  const bool wide = a.Cout % 64 == 0;
  const dim3 grid(static_cast<unsigned>((M + kBM - 1) / kBM), a.Cout / (wide ? 64 : 32), a.transposed ? 4 : 1);
  if (wide)
    dev::launch("conv_simt_kernel", conv_simt_kernel<64, 8>, grid, kThreads, 0, stream, a);
  else
    dev::launch("conv_simt_kernel", conv_simt_kernel<32, 4>, grid, kThreads, 0, stream, a);
  SG2_LAUNCH_CHECK("conv_simt_kernel");
}

}  // namespace sg2::cuda
