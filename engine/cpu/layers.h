// sg2 CPU backend: the model prepared for the oneDNN path — every layer's weights in the layout
// its computation wants (fully connected weights pre-multiplied by their gains, convolution weights
// in the primitives' layout, Q = sum_k W^2 for the closed-form demodulation, const noise maps
// pre-multiplied by noise_strength), and how each layer is cut into work units.
//
// The cut depends on the layer's shape only (never on the batch or the thread count): a unit is
// one sample x one band of output rows x one block of output channels, and every unit of a layer
// runs the same oneDNN primitive on the same shape. So each output value is computed by the same
// instructions whatever the batch size, the sample's position in it, or the number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/cpu/onednn.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu_tuning.h"
#include "engine/plan.h"
#include "sg2/model.h"

namespace sg2::cpu {

/// A layer's work units per sample: bands of `band_rows` output rows x blocks of `oc_block`
/// output channels.
struct Split {
  int band_rows = 1, bands = 1;
  int oc_block = 1, oc_blocks = 1;
  int units() const { return bands * oc_blocks; }
};

/// Chooses the split of a layer with `rows` x `cols` output pixels, `cout` output channels and
/// `macs_per_row` multiply-adds per output row (all channels): bands of at least 256 pixels and,
/// where one band is still large, blocks of at least 64 channels, aiming at about 2^26
/// multiply-adds per unit. `even_rows`: band heights stay even (the up-sampling layers).
Split choose_split(int rows, int cols, int cout, int64_t macs_per_row, bool even_rows,
                   const CpuTuning& tuning = CpuTuning{});

/// An affine (style) or fully connected layer: y = x @ (W * weight_gain)^T + b * bias_gain.
struct Dense {
  int in = 0, out = 0;
  std::vector<float> weight;  // [out, in], times weight_gain (float32, as the official code)
  std::vector<float> bias;    // [out], times bias_gain
};

/// One oneDNN convolution of a layer's work unit: conv1 has one (3x3); conv0 has four, the
/// sub-pixel phases of its stride-2 transposed convolution: output rows 2i + a and columns 2j + b
/// take the taps ky = a (mod 2), kx = b (mod 2), i.e. forward convolutions with 2x2, 2x1, 1x2 and 1x1
/// kernels gathered from the 3x3 weight (oneDNN runs these faster than its transposed convolution).
struct ConvPart {
  std::shared_ptr<ConvBand> band;
  std::vector<std::vector<float>> weights;  // per channel block, in the primitive's layout
  int in_row0 = 0;                          // first row of the padded input it reads: y0 / (up ? 2 : 1) + in_row0
  int a = 0, b = 0;                         // conv0: its phase
  int i0 = 0;                               // conv0: output row r <-> i = y0 / 2 + i0 + r
  int j0 = 0;                               // conv0: output column c <-> j = c + j0
  int kh = 3, kw = 3;
  int64_t scratch_off = 0;  // its output in the worker's scratch (floats)
};

/// conv0 (up-sampling) or conv1 of a synthesis block.
struct ConvLayer {
  const LayerPlan* plan = nullptr;
  bool up = false;
  int cin = 0, cout = 0;
  int h = 0, w = 0;                // output height and width (the block's maps; h == w unless non-square)
  int in_h = 0, in_w = 0;          // input height and width (h / 2, w / 2 when up)
  int s_col = 0, d_col = 0;        // this layer's columns in a sample's styles / dcoefs
  Dense affine;                    // w_dim -> cin
  std::vector<float> q;            // [cout, cin] sum over taps of weight^2
  const float* bias = nullptr;     // [cout] (model tensor)
  std::vector<float> noise_const;  // [h, w] noise_const * noise_strength, or empty
  int64_t noise_off = -1;          // offset of its maps in a sample's noise buffer (random / given maps)
  Split split;
  std::vector<ConvPart> parts;
  // conv0: the band of the transposed-conv output the FIR reads, rows [y0 - pad0, y1 + f - 1 - pad0)
  // and columns [-pad0, w + f - 1 - pad0), assembled from the phases; then the FIR's row buffers
  int t_rows = 0, t_cols = 0;
  int64_t t_off = 0, tmp_off = 0, u_off = 0;
  int64_t macs = 0;  // per sample
};

struct TorgbLayer {
  const LayerPlan* plan = nullptr;
  int cin = 0, out = 0, h = 0, w = 0;  // output height and width
  Dense affine;                        // w_dim -> cin
  float style_gain = 1.0f;
  const float* weight = nullptr;  // [out, cin] raw (model tensor)
  const float* bias = nullptr;    // [out]
  std::optional<float> clamp;
  int64_t wmod_off = 0;  // its modulated weight [out, cin] in a sample's table
  int band_rows = 1, bands = 1;
};

struct SkipLayer {  // resnet: 1x1 conv (weight * weight_gain), up-sample, * act_gain
  const LayerPlan* plan = nullptr;
  int cin = 0, cout = 0, h = 0, w = 0;  // output height and width (the input is h / 2 x w / 2)
  std::vector<float> weight;            // [cout, cin] times weight_gain
  int band_rows = 1, bands = 1;         // of the input rows (1x1 conv) and of the output rows (up-sample)
  int up_band_rows = 1, up_bands = 1;
};

struct Block {
  const BlockPlan* plan = nullptr;
  std::optional<ConvLayer> conv0;
  ConvLayer conv1;
  std::optional<TorgbLayer> torgb;
  std::optional<SkipLayer> skip;
};

/// Everything the oneDNN path needs, built once per Generator.
struct CpuModel {
  const Model* model = nullptr;
  SynthesisPlan plan;
  std::vector<Block> blocks;
  std::vector<Dense> mapping;  // fc0..fcN-1
  std::optional<Dense> embed;
  int border = 1;                   // B of every padded activation buffer (enough for every conv0 phase window)
  int fir_pad0 = 1;                 // leading pad of the FIR after the transposed conv
  std::vector<float> fir_v, fir_h;  // its separable taps (flipped, times 2 each)
  std::vector<float> up_g;          // upsample2d's 2-D taps (flipped, times 4), [f * f]
  int64_t s_cols = 0, d_cols = 0, wmod_floats = 0, noise_floats = 0;
  // per-sample buffer sizes (floats) and per-worker scratch (floats / bytes)
  int64_t xa_floats = 0, xb_floats = 0, raw_floats = 0, img_floats = 0, skip_r_floats = 0, skip_s_floats = 0;
  int64_t scratch_floats = 0;
  size_t scratchpad_bytes = 0;
  int64_t total_macs = 0;  // per sample, for progress

  /// Prepares `model` (validated); the primitives and weight layouts are made on pool workers.
  CpuModel(const Model& model, ThreadPool& pool, const CpuTuning& tuning);
};

}  // namespace sg2::cpu
