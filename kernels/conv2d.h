// sg2 CUDA kernels: a direct (SIMT, fp32-accumulating) convolution — the fallback for shapes the
// cuDNN path does not take, and an independent cross-check of it in the tests. Same layouts as
// the cuDNN path (NHWC activations, KRSC filters). Semantics as the CPU reference
// kernels/ref/modulated_conv2d.h conv2d / conv_transpose2d_stride2 with shared weights.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dtype.h"

namespace sg2::cuda {

struct Conv2dArgs {
  int N = 0, H = 0, W = 0;  // input size
  int Cin = 0, Cout = 0;
  int k = 3;    // square kernel
  int pad = 1;  // forward only
  bool transposed = false;
  DType dtype = DType::f32;  // x, w and y
  const void* x = nullptr;   // [N, H, W, Cin]
  // forward:    w [Cout, k, k, Cin], y [N, H + 2 pad - k + 1, W + 2 pad - k + 1, Cout]; correlation
  //             y[n, oy, ox, o] = sum x[n, oy + ky - pad, ox + kx - pad, i] * w[o, ky, kx, i]
  // transposed: w [Cin, k, k, Cout], y [N, 2H + k - 2, 2W + k - 2, Cout]; stride 2, no padding
  //             y[n, 2a + ky, 2b + kx, o] += x[n, a, b, i] * w[i, ky, kx, o]
  const void* w = nullptr;
  void* y = nullptr;
};

void conv2d_direct(const Conv2dArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
