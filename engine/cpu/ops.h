// sg2 CPU backend: the loops around the convolutions — modulation of the inputs, the up-sampling
// FIR after the transposed convolution, the layers' pointwise epilogue, and the image path.
// Semantics: official training/networks_stylegan2.py SynthesisLayer / ToRGBLayer / SynthesisBlock
// with torch_utils/ops upfirdn2d and bias_act (spec §3-§6); the reference ops are kernels/ref.
//
// Layouts: activations NHWC float32 per sample; a "padded" buffer holds [H + 2B, W + 2B, C] with a
// zero border of B pixels (the convolutions then need no padding); images are planar [C, H, W].
// Every function works on a band of rows and writes only that band, so the work units of a phase
// never touch each other's output.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace sg2::cpu {

/// The pointwise epilogue of a conv layer, for one block of output channels [c0, c0 + cb):
///   v = u * dcoef[c] + noise[y, x]          (noise already scaled by noise_strength; optional)
///   v = clamp(lrelu(v + bias[c]) * gain, -clamp, clamp)     (official bias_act order)
///   v = residual[y, x, c] + v               (resnet: the skip branch; optional)
/// then stores v (raw, optional) and v * out_scale[c] (the next conv's styles; into a padded
/// buffer, optional).
struct Epilogue {
  int C = 0;                     // channels of the full tensors (row stride W * C)
  int c0 = 0, cb = 0;            // this unit's channels
  const float* dcoef = nullptr;  // [C]
  const float* noise = nullptr;  // [H, W] or null
  const float* bias = nullptr;   // [C]
  float gain = 1.0f;
  std::optional<float> clamp;
  const float* residual = nullptr;   // [H, W, C] or null
  float* raw = nullptr;              // [H, W, C] or null
  float* modulated = nullptr;        // padded [H + 2B, W + 2B, C] or null
  const float* out_scale = nullptr;  // [C] (with modulated)
  int H = 0, W = 0, B = 0;
};

/// Applies the epilogue to row y of the output: u [W, cb] (pixel stride u_stride floats).
void epilogue_row(const Epilogue& e, int y, const float* u, int64_t u_stride);

/// Zeroes channels [c0, c0 + cb) of the border of padded rows [y0, y1) (in unpadded row numbers;
/// -B..H+B-1): every pixel of border rows, the B left and right pixels of image rows.
void zero_border_rows(float* padded, int H, int W, int B, int C, int c0, int cb, int y0, int y1);

/// The modulated const input of b4: padded [H + 2B, W + 2B, C] = const [C, H, W] * s[c].
void modulate_const(const float* const_chw, int C, int H, int W, const float* s, int B, float* padded);

/// The separable FIR after the stride-2 transposed convolution (official conv2d_resample, up 2:
/// upfirdn2d(pad (pad0, ...), gain 4)), one output row y: u[x, c] = sum_{i, j} gv[i] gh[j]
/// t[y + i - pad0 + t_row, x + j - pad0 + t_col, c] for x in [0, W). t is the band of the
/// transposed-conv output [rows, t_cols, cb]; (t_row, t_col) map output coordinates into it.
/// tmp holds (W + f - 1) * cb floats.
void fir_row(const float* t, int t_cols, int cb, int t_row, int t_col, const std::vector<float>& gv,
             const std::vector<float>& gh, int pad0, int y, int W, float* tmp, float* u);

/// upfirdn2d(x, f, up 2, pad ((f+1)/2, (f-2)/2), gain 4) (official upsample2d), output rows
/// [y0, y1) of an [2H, 2W] result, as the reference computes it (kernels/ref/upfirdn2d.cpp, the
/// same float operations in the same order). x is [H, W, C] with pixel stride C (C = 1 for one
/// plane); g = the 2-D filter flipped and times 4 ([f * f]). out [2H, 2W, C].
void upsample2d_rows(const float* x, int H, int W, int C, const std::vector<float>& g, int f, int y0, int y1,
                     float* out);

}  // namespace sg2::cpu
