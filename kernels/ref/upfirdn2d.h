// sg2 CPU reference: upfirdn2d — upsample by zero insertion, pad, FIR filter, downsample
// (official torch_utils/ops/upfirdn2d.py `_upfirdn2d_ref`; spec §4.1).
#pragma once

#include <vector>

#include "sg2/tensor.h"

namespace sg2::ref {

struct Upfirdn2dArgs {
  int up_x = 1, up_y = 1;
  int down_x = 1, down_y = 1;
  int pad_x0 = 0, pad_x1 = 0, pad_y0 = 0, pad_y1 = 0;  ///< negative values crop
  bool flip_filter = false;  ///< false: true convolution (the filter is flipped), as the default
  float gain = 1.0f;         ///< the filter is multiplied by gain (2-D filter) before use
};

/// x: [N, C, H, W] float32 host; f: [fh, fw] float32 (row-major), applied per channel.
/// Returns [N, C, (H*up_y + py0 + py1 - fh) / down_y + 1, (W*up_x + px0 + px1 - fw) / down_x + 1].
/// Throws Error(invalid_argument) on bad factors or an empty output.
Tensor upfirdn2d(const Tensor& x, const std::vector<float>& f, int fh, int fw, const Upfirdn2dArgs& a);

/// The official upsample2d(x, f, up=2): pads (fw+1)/2, (fw-2)/2 (i.e. (2,1) for 4 taps), gain 4.
Tensor upsample2d(const Tensor& x, const std::vector<float>& f, int fsize);

}  // namespace sg2::ref
