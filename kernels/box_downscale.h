// sg2 CUDA kernels: integer-factor box downscaling of uint8 images on the device, for
// `sg2 generate --size`. The filter and its exact integer rounding: kernels/ref/box_downscale.h
// (the CPU reference; the results are bit-identical).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sg2::cuda {

/// in [N, H, W, C] uint8 device (H, W multiples of f >= 1) -> out [N, H/f, W/f, C] uint8 device.
/// Nothing is launched for an empty batch.
void box_downscale_u8(const uint8_t* in, int N, int H, int W, int C, int f, uint8_t* out, cudaStream_t stream);

}  // namespace sg2::cuda
