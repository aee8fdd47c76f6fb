// sg2 CUDA kernels: the tap order of the implicit-GEMM 3x3 convolutions (conv2d_simt.cu,
// tc_conv.cu). Device code only; include from .cu files.
//
// forward (pad 1): taps t = 0..8 in row-major order, tap (ky, kx) reads input (y + ky - 1, x + kx - 1).
// transposed (stride 2), phase (py, px) of the output: output pixel (2 oy + py, 2 ox + px) gets the
// taps ky = py ? 1 : {0, 2} and kx = px ? 1 : {0, 2} (ny x nx of them, t = row * nx + column), each
// reading input (oy + (py - ky) / 2, ox + (px - kx) / 2).
#pragma once

namespace sg2::cuda::dev {

struct ConvTap {
  int index;   ///< ky * 3 + kx: the filter's tap
  int dy, dx;  ///< input offset from the output pixel (phase grid for the transposed conv)
};

__device__ __forceinline__ ConvTap conv_tap(bool transposed, int t, int py, int px, int nx) {
  int ky, kx, dy, dx;
  if (transposed) {
    const int ty = t / nx, tx = t - ty * nx;
    ky = py ? 1 : 2 * ty;
    kx = px ? 1 : 2 * tx;
    dy = (py - ky) / 2;
    dx = (px - kx) / 2;
  } else {
    ky = t / 3;
    kx = t - ky * 3;
    dy = ky - 1;
    dx = kx - 1;
  }
  return ConvTap{ky * 3 + kx, dy, dx};
}

}  // namespace sg2::cuda::dev
