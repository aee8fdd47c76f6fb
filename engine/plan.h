// sg2 internal: the synthesis network as data — the layers a configuration implies, with the
// ws row, gains, clamp and noise input of each (official SynthesisNetwork / SynthesisBlock).
// Both backends walk this plan; nothing here computes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sg2/model.h"

namespace sg2 {

/// One modulated layer (conv0, conv1, torgb) or the resnet skip conv.
struct LayerPlan {
  enum class Kind { conv, torgb, skip };
  Kind kind = Kind::conv;
  std::string name;    ///< tensor prefix, "synthesis.b8.conv0"
  int resolution = 0;  ///< output resolution (the block's)
  int height = 0;      ///< output feature map height and width: resolution x resolution unless
  int width = 0;       ///< the network is non-square (ModelConfig::block_height / block_width)
  int in_channels = 0;
  int out_channels = 0;
  int up = 1;                  ///< 2 for conv0 and skip (r >= 8)
  int w_index = -1;            ///< row of ws feeding the affine; -1 for skip
  bool demodulate = true;      ///< false for torgb
  float act_gain = 1.0f;       ///< conv: sqrt(2)*gain; torgb: 1; skip: sqrt(1/2)
  std::optional<float> clamp;  ///< conv: conv_clamp*gain; torgb: conv_clamp; skip: none
  float style_gain = 1.0f;     ///< torgb: 1/sqrt(in_channels) applied to the styles
  float weight_gain = 1.0f;    ///< skip: 1/sqrt(in_channels) applied to the weight
  int noise_index = -1;        ///< index into noise_layers(); -1 when the layer has no noise
};

/// One SynthesisBlock b{resolution}.
struct BlockPlan {
  int resolution = 0;
  int height = 0, width = 0;  ///< its feature maps (resolution x resolution when square)
  int in_channels = 0;        ///< 0 for b4 (the const input)
  int out_channels = 0;
  bool fp16 = false;  ///< the checkpoint runs this block in fp16
  bool is_last = false;
  std::optional<LayerPlan> conv0;  ///< r >= 8
  LayerPlan conv1;
  std::optional<LayerPlan> torgb;  ///< skip: every block; orig/resnet: last block
  std::optional<LayerPlan> skip;   ///< resnet, r >= 8
};

struct SynthesisPlan {
  Architecture architecture = Architecture::skip;
  std::vector<BlockPlan> blocks;
  std::vector<float> filter;    ///< [fh * fw] 2-D resample filter, normalised to sum 1, row-major
  int filter_size = 4;          ///< fh = fw
  std::vector<float> filter1d;  ///< [fw] the 1-D taps / their sum: filter = outer(filter1d, filter1d) up to rounding
};

/// Builds the plan of `config` (validated). ws rows follow the official w_idx bookkeeping:
/// block b receives ws[w_idx : w_idx + num_conv + num_torgb], then w_idx += num_conv.
SynthesisPlan make_synthesis_plan(const ModelConfig& config);

/// The official setup_filter of 1-D taps: outer(t, t) / sum, in float32, row-major [n*n].
std::vector<float> make_filter2d(const std::vector<float>& taps);

}  // namespace sg2
