// sg2 CPU reference: modulated_conv2d and plain conv2d (official
// training/networks_stylegan2.py `modulated_conv2d`, torch_utils/ops/conv2d_resample.py;
// spec §3 and §5).
#pragma once

#include <vector>

#include "sg2/tensor.h"

namespace sg2::ref {

struct ModConvArgs {
  int up = 1;               ///< 1, or 2 for the up-sampling conv (conv0)
  int padding = 1;          ///< user padding (kernel // 2)
  bool demodulate = true;   ///< false for ToRGB
  bool flip_weight = true;  ///< true: correlation (conv1, ToRGB); conv0 passes false (true convolution)
};

/// x [N, Cin, H, W], weight [Cout, Cin, k, k] (raw), styles [N, Cin], all float32 host.
/// Per sample: w = weight * styles[n]; if demodulate, w *= rsqrt(sum(w^2) + 1e-8) per output
/// channel; y = conv2d_resample(x, w, filter, up, padding, flip_weight). With up = 2 this is the
/// transposed convolution (stride 2) followed by the FIR filter with gain 4 (spec §3.4).
/// `filter` is the 2-D resample filter [fsize * fsize] (normalised), used only when up = 2.
/// Returns [N, Cout, H*up + 2*padding - k + 1 ... ] = [N, Cout, H*up, W*up] for the StyleGAN2 uses.
Tensor modulated_conv2d(const Tensor& x, const Tensor& weight, const Tensor& styles, const std::vector<float>& filter,
                        int fsize, const ModConvArgs& args);

/// Demodulation coefficients d[n, o] = rsqrt(sum_{i,k} (weight[o,i,k] * styles[n,i])^2 + 1e-8):
/// [N, Cout].
Tensor demod_coefficients(const Tensor& weight, const Tensor& styles);

/// Plain conv2d: x [N, Cin, H, W], weight [Cout, Cin, k, k] (already scaled), zero padding p,
/// correlation when flip_weight (torch conv2d), true convolution otherwise. Per-sample weights
/// [N, Cout, Cin, k, k] are accepted too. Returns [N, Cout, H + 2p - k + 1, W + 2p - k + 1].
Tensor conv2d(const Tensor& x, const Tensor& weight, int padding, bool flip_weight);

/// Transposed conv, stride 2, no padding: T[o, 2i + ky, 2j + kx] += x[c, i, j] * w[o, c, ky, kx]
/// (weights flipped first when flip_weight). weight [Cout, Cin, k, k] or per sample
/// [N, Cout, Cin, k, k]. Returns [N, Cout, 2H + k - 2, 2W + k - 2].
Tensor conv_transpose2d_stride2(const Tensor& x, const Tensor& weight, bool flip_weight);

}  // namespace sg2::ref
