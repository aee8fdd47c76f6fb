// sg2: seeded random generators of the named benchmark configurations (performance.md §2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sg2/export.h"
#include "sg2/model.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// The configurations of performance.md: "ffhq1024-f" (channel_base 32768, 1024 px),
/// "paper512" (32768, 512 px), "paper256" (16384, 256 px); all z_dim = w_dim = 512, 8 mapping
/// layers, skip, conv_clamp 256, fp16 in the top four resolutions. Throws Error(invalid_argument)
/// for another name.
ModelConfig named_config(const std::string& name);

/// A configuration built like the official constructors: channels min(channel_base / r,
/// channel_max), num_ws from the resolution, fp16 in the top `num_fp16_res` blocks (>= 8).
ModelConfig make_config(int img_resolution, int channel_base, int channel_max, int z_dim, int w_dim, int c_dim,
                        int img_channels, int mapping_layers, Architecture architecture,
                        std::optional<float> conv_clamp, int num_fp16_res);

/// Random weights with the official initialisation, seeded (deterministic for a seed): fc
/// weights N(0,1)/lr_multiplier, conv/const/noise_const N(0,1), affine biases 1; then, so that
/// no term is silently zero, noise_strength ~ N(0, 0.3^2), every non-affine bias += N(0, 0.1^2),
/// w_avg ~ N(0, 0.5^2).
Model make_random_model(const ModelConfig& config, uint64_t seed);

}  // namespace sg2
SG2_PUBLIC_END
