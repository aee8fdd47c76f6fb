// sg2 CUDA kernels: the skip architecture's image path inside the conv epilogues
// (kernels/conv_epilogue.cu, kernels/fused_conv_f16.cu): one pixel of upsample2d(img_prev), the
// official upfirdn2d(up 2, pad ((f+1)/2, (f-2)/2), gain 4) with the resample filter (spec §4).
// Device code only.
#pragma once

namespace sg2::cuda::dev {

// upsample2d(img_prev)[k, y, x] of one sample: up 2, pad p0 = (f+1)/2, gain 4, the filter flipped
// (convolution), taps in the reference's order (filter row, then column).
__device__ inline float upsampled(const float* src, int Hi, int Wi, const float* filter, int f, int y, int x) {
  const int p0 = (f + 1) / 2;
  float acc = 0.0f;
  if (f == 4) {  // two taps per axis: i with (y + i - 2) even
    const int i0 = y & 1, j0 = x & 1;
#pragma unroll
    for (int a = 0; a < 2; ++a) {
      const int i = i0 + 2 * a, sy = (y + i - p0) >> 1;
      if (sy < 0 || sy >= Hi) continue;
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const int j = j0 + 2 * b, sx = (x + j - p0) >> 1;
        if (sx < 0 || sx >= Wi) continue;
        acc += src[sy * Wi + sx] * (__ldg(filter + (3 - i) * 4 + (3 - j)) * 4.0f);
      }
    }
    return acc;
  }
  for (int i = 0; i < f; ++i) {
    const int uy = y + i - p0;
    if (uy < 0 || uy >= 2 * Hi || (uy & 1)) continue;
    for (int j = 0; j < f; ++j) {
      const int ux = x + j - p0;
      if (ux < 0 || ux >= 2 * Wi || (ux & 1)) continue;
      acc += src[(uy / 2) * Wi + ux / 2] * (filter[(f - 1 - i) * f + (f - 1 - j)] * 4.0f);
    }
  }
  return acc;
}

/// The same for a 4-tap filter with g[i * 4 + j] = filter[3 - i][3 - j] * 4 precomputed (e.g. in
/// shared memory): two taps per axis, rows i0, i0 + 2 and columns j0, j0 + 2 of g, in the same
/// order as upsampled(). Branch-free: a tap outside the image reads a pixel inside it and is not
/// added (the sum is the one upsampled() makes).
__device__ __forceinline__ float upsampled4(const float* src, int Hi, int Wi, const float* g, int y, int x) {
  float up = 0.0f;
  const int i0 = y & 1, j0 = x & 1;
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const int i = i0 + 2 * p, sy = (y + i - 2) >> 1;
    const bool y_in = unsigned(sy) < unsigned(Hi);
    const float* row = src + (y_in ? sy : 0) * Wi;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int j = j0 + 2 * q, sx = (x + j - 2) >> 1;
      const bool in = y_in && unsigned(sx) < unsigned(Wi);
      const float sum = up + row[in ? sx : 0] * g[i * 4 + j];
      up = in ? sum : up;
    }
  }
  return up;
}

}  // namespace sg2::cuda::dev
