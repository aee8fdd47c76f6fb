// sg2 CLI: style mixing as NVIDIA's style_mixing.py defines it — shared by `sg2 mix` and `sg2 serve`,
// so that a served mixed image is the mix command's file bit for bit.
//
//   all_w = G.mapping(z, c) (psi 1), then w_avg + (all_w - w_avg) * psi   (the plain formula, not lerp)
//   w = w_row with the ws rows k in styles replaced by w_col[k]
#pragma once

#include <vector>

#include "sg2/tensor.h"

namespace sg2::cli {

/// style_mixing.py's truncation, in place: every element of ws [N, num_ws, w_dim] becomes
/// w_avg + (w - w_avg) * psi, the subtraction, product and sum each rounded to float32 (no FMA).
/// w_avg: [w_dim].
void truncate_plain(Tensor& ws, const Tensor& w_avg, float psi);

/// One mixed latent: dst = w_row [num_ws, w_dim] with each row k of `styles` copied from w_col.
/// The rows must lie in [0, num_ws) (the caller checks them).
void mix_styles(const float* w_row, const float* w_col, const std::vector<int>& styles, int num_ws, int w_dim,
                float* dst);

}  // namespace sg2::cli
