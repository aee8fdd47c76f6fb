// sg2 CUDA kernels: the official uint8 conversion of generated images, on the device (spec §2.8;
// the official scripts: `(img * 127.5 + 128).clamp(0, 255).to(torch.uint8)`, images permuted to
// HWC for saving; CPU reference: sg2::to_image8, formats/image.cpp):
//   u8 = trunc(clamp(x * 127.5 + 128, 0, 255)), the multiply and the add rounded separately (no FMA);
//   NaN -> 0, +inf -> 255, -inf -> 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sg2::cuda {

/// img [N, C, H, W] fp32 device -> out [N, H, W, C] uint8 device (interleaved channels, as PNG rows).
/// Nothing is launched for an empty batch.
void images_to_uint8(const float* img, int N, int C, int H, int W, uint8_t* out, cudaStream_t stream);

}  // namespace sg2::cuda
