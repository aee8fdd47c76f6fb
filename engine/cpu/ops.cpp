// sg2 CPU backend: modulation, FIR, epilogue and image-path loops (ops.h).
//
// The hot loops are compiled for AVX-512, AVX2 and baseline x86-64 (the loader picks one for the
// CPU at run time). They are elementwise over channels, with no reordered sums, and the build
// keeps -ffp-contract=off, so every variant computes the same bits.
#include "engine/cpu/ops.h"

#include <algorithm>
#include <cstring>

namespace sg2::cpu {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SG2_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SG2_CLONES
#endif

namespace {

SG2_CLONES void scale_add_row(float* acc, const float* src, float g, int64_t n, bool first) {
  if (first) {
    for (int64_t i = 0; i < n; ++i) acc[i] = src[i] * g;
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + src[i] * g;
  }
}

SG2_CLONES void epilogue_pixels(const Epilogue& e, int y, const float* u, int64_t u_stride, float* v) {
  const int W = e.W, cb = e.cb;
  const float* d = e.dcoef + e.c0;
  const float* b = e.bias + e.c0;
  for (int x = 0; x < W; ++x) {
    const float* ux = u + x * u_stride;
    float* vx = v + int64_t(x) * cb;
    for (int c = 0; c < cb; ++c) vx[c] = ux[c] * d[c];
    if (e.noise) {
      const float nz = e.noise[int64_t(y) * W + x];
      for (int c = 0; c < cb; ++c) vx[c] = vx[c] + nz;
    }
    for (int c = 0; c < cb; ++c) vx[c] = vx[c] + b[c];
  }
  const int64_t n = int64_t(W) * cb;
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] : v[i] * 0.2f;  // lrelu, alpha 0.2
  if (e.gain != 1.0f)
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] * e.gain;
  if (e.clamp && *e.clamp >= 0.0f) {
    const float c = *e.clamp;
    for (int64_t i = 0; i < n; ++i) v[i] = std::min(std::max(v[i], -c), c);
  }
  if (e.residual) {
    const float* r = e.residual + int64_t(y) * W * e.C + e.c0;
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < cb; ++c) v[int64_t(x) * cb + c] = r[int64_t(x) * e.C + c] + v[int64_t(x) * cb + c];
  }
  if (e.raw) {
    float* r = e.raw + int64_t(y) * W * e.C + e.c0;
    for (int x = 0; x < W; ++x) std::memcpy(r + int64_t(x) * e.C, v + int64_t(x) * cb, sizeof(float) * cb);
  }
  if (e.modulated) {
    const int64_t wp = W + 2 * e.B;
    float* m = e.modulated + ((int64_t(y) + e.B) * wp + e.B) * e.C + e.c0;
    const float* s = e.out_scale + e.c0;
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < cb; ++c) m[int64_t(x) * e.C + c] = v[int64_t(x) * cb + c] * s[c];
  }
}

}  // namespace

void epilogue_row(const Epilogue& e, int y, const float* u, int64_t u_stride) {
  thread_local std::vector<float> v;
  v.resize(size_t(e.W) * size_t(e.cb));
  epilogue_pixels(e, y, u, u_stride, v.data());
}

void zero_border_rows(float* padded, int H, int W, int B, int C, int c0, int cb, int y0, int y1) {
  const int64_t wp = W + 2 * B;
  for (int y = y0; y < y1; ++y) {
    float* row = padded + (int64_t(y) + B) * wp * C;
    const bool border_row = y < 0 || y >= H;
    for (int64_t x = 0; x < wp; ++x) {
      if (!border_row && x >= B && x < B + W) continue;
      std::memset(row + x * C + c0, 0, sizeof(float) * cb);
    }
  }
}

void modulate_const(const float* const_chw, int C, int H, int W, const float* s, int B, float* padded) {
  zero_border_rows(padded, H, W, B, C, 0, C, -B, H + B);
  const int64_t wp = W + 2 * B;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      float* p = padded + ((int64_t(y) + B) * wp + x + B) * C;
      for (int c = 0; c < C; ++c) p[c] = const_chw[(int64_t(c) * H + y) * W + x] * s[c];
    }
}

void fir_row(const float* t, int t_cols, int cb, int t_row, int t_col, const std::vector<float>& gv,
             const std::vector<float>& gh, int pad0, int y, int W, float* tmp, float* u) {
  const int f = static_cast<int>(gv.size());
  const int64_t n_tmp = int64_t(W + f - 1) * cb;
  // vertical: tmp[k, c] = sum_i gv[i] t[y + i - pad0 + t_row, k - pad0 + t_col, c], k in [0, W + f - 1)
  for (int i = 0; i < f; ++i) {
    const float* src = t + (int64_t(y + i - pad0 + t_row) * t_cols + (t_col - pad0)) * cb;
    scale_add_row(tmp, src, gv[size_t(i)], n_tmp, i == 0);
  }
  // horizontal: u[x, c] = sum_j gh[j] tmp[x + j, c]
  const int64_t n_u = int64_t(W) * cb;
  for (int j = 0; j < f; ++j) scale_add_row(u, tmp + int64_t(j) * cb, gh[size_t(j)], n_u, j == 0);
}

SG2_CLONES void upsample2d_rows(const float* x, int H, int W, int C, const std::vector<float>& g, int f, int y0, int y1,
                                float* out) {
  const int pad0 = (f + 1) / 2, OW = 2 * W;
  // The taps that hit a source pixel (upsampled index even and inside), in the reference's order.
  const size_t taps = static_cast<size_t>(OW) * static_cast<size_t>(f);
  std::vector<int> col_j(taps), col_sx(taps), col_n(static_cast<size_t>(OW));
  for (int ox = 0; ox < OW; ++ox) {
    int n = 0;
    for (int j = 0; j < f; ++j) {
      const int ux = ox + j - pad0;
      if (ux < 0 || ux >= OW || ux % 2 != 0) continue;
      col_j[size_t(ox) * f + n] = j;
      col_sx[size_t(ox) * f + n] = ux / 2;
      ++n;
    }
    col_n[size_t(ox)] = n;
  }
  std::vector<float> acc(static_cast<size_t>(C));
  for (int oy = y0; oy < y1; ++oy) {
    float* orow = out + int64_t(oy) * OW * C;
    for (int ox = 0; ox < OW; ++ox) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int i = 0; i < f; ++i) {
        const int uy = oy + i - pad0;
        if (uy < 0 || uy >= 2 * H || uy % 2 != 0) continue;
        const float* srow = x + int64_t(uy / 2) * W * C;
        for (int k = 0; k < col_n[size_t(ox)]; ++k) {
          const float gv = g[size_t(i) * f + col_j[size_t(ox) * f + k]];
          const float* s = srow + int64_t(col_sx[size_t(ox) * f + k]) * C;
          for (int c = 0; c < C; ++c) acc[size_t(c)] = acc[size_t(c)] + s[c] * gv;
        }
      }
      std::memcpy(orow + int64_t(ox) * C, acc.data(), sizeof(float) * C);
    }
  }
}

}  // namespace sg2::cpu
