// sg2: network blending (layer swapping, as Justin Pinkney's stylegan2 blend_models.py): the
// synthesis layers of low resolutions from one network, of high resolutions from another.
//
// Layers are placed as in blend_models.py: position p = 2 * log2(res / 4) + level, level 0 for
// b{res}.conv0 (b4.const at 4x4; a resnet block's skip too), level 1 for b{res}.conv1 and
// b{res}.torgb. With x = p - 2 * log2(at / 4) (x = 0 at the first layer of block `at`), the share
// of `high` is y = 1 if x >= 0 else 0 (blocks below `at` from `low`, from `at` up from `high`), or,
// with a width, y = 1 / (1 + exp(-x / width)) as blend_models.py's logistic. Every tensor of a
// layer becomes high * y + low * (1 - y) in float32 (float(y) once; the two products then their
// sum), exactly low's bits where y = 0 and high's where y = 1; a layer's noise_const (a fixed noise
// draw, not a weight) is taken whole from high where y >= 0.5, else from low. The mapping network
// and w_avg are low's. (blend_models.py's hard switch is y = 1 only for x > 1: its block `at`
// comes from the low network too, which is sg2's --at 2*RES; its noise buffers stay model_1's.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/model.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

struct BlendOptions {
  int at = 0;                    ///< block resolution: a power of two in [4, 2 * img_resolution]
  std::optional<double> width;   ///< blend_width of blend_models.py (> 0, finite); nullopt = hard switch
  std::string low_what = "low";  ///< names the networks in messages (their files)
  std::string high_what = "high";
};

/// One synthesis layer's share of `high` (y above), for a summary.
struct BlendLayer {
  int resolution = 0;
  int level = 0;
  double high_share = 0;
};

/// The share of `high` of every synthesis layer of `config`, by the rule above, in position order.
/// Throws Error(invalid_argument) for `at` not a power of two in [4, 2 * img_resolution] or a bad width.
std::vector<BlendLayer> blend_layers(const ModelConfig& config, const BlendOptions& options);

/// The blended network (see above). Throws Error(invalid_argument) naming both networks and the
/// difference when they cannot be blended: a different z_dim, w_dim, num_ws, img_resolution,
/// img_channels, architecture, channel count of a block, conv_clamp, resample_filter or use of noise.
Model blend_models(const Model& low, const Model& high, const BlendOptions& options);

}  // namespace sg2
SG2_PUBLIC_END
