// sg2 CUDA kernels: the modulated const input of b4 (official SynthesisBlock: `x = const`
// repeated over the batch, then conv1 with styles s; here the styles scale the activations,
// see demodulate.h).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dtype.h"

namespace sg2::cuda {

/// out[n, y, x, c] = const_[c, y, x] * s_in[n, c]  (NHWC, out_dtype; s_in row stride s_stride).
/// const_ [C, H, W] fp32 device (official NCHW order), s_in [N, s_stride] fp32 device.
void modulate_const(const float* const_, int C, int H, int W, const float* s_in, int s_stride, int N, DType out_dtype,
                    void* out, cudaStream_t stream);

}  // namespace sg2::cuda
