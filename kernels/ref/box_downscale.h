// sg2 CPU reference: integer-factor downscaling of uint8 images by a box (area) filter — what
// `sg2 generate --size` writes (docs/bulk.md "Smaller images"); kernels/box_downscale.h is the GPU
// version, bit-identical.
//
// The filter, exactly: output pixel (y, x) of channel c is the mean of the f x f input pixels
// (f*y + i, f*x + j), 0 <= i, j < f, of the official uint8 image (the conversion runs first), in
// integer arithmetic rounded half up: (sum + f*f/2) / (f*f) with integer division. Every value is
// exact, so any implementation that sums the same integers gives the same bytes.
#pragma once

#include <cstdint>

namespace sg2::ref {

/// in [N, H, W, C] uint8 (H and W multiples of f, f >= 1) -> out [N, H/f, W/f, C] uint8. f = 1 copies.
void box_downscale_u8(const uint8_t* in, int N, int H, int W, int C, int f, uint8_t* out);

}  // namespace sg2::ref
