// sg2 CUDA kernels: upsample2d on NHWC activations (official torch_utils/ops/upfirdn2d.py
// `upsample2d`: up 2, pad ((f+1)/2, (f-2)/2), gain 4, the filter flipped; spec §4; CPU reference
// kernels/ref/upfirdn2d.h upsample2d). Used by the resnet skip branch.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dtype.h"

namespace sg2::cuda {

/// out[n, y, x, c] = upsample2d(x)[n, c, y, x] * post_gain (the multiply skipped when 1).
/// x [N, H, W, C] in x_dtype, out [N, 2H, 2W, C] fp32, filter [fsize, fsize] (sums to 1); device.
void upsample2d_nhwc(const void* x, DType x_dtype, int N, int H, int W, int C, const float* filter, int fsize,
                     float post_gain, float* out, cudaStream_t stream);

}  // namespace sg2::cuda
