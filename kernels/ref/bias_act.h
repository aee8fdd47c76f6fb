// sg2 CPU reference: bias_act — add bias, activation, gain, clamp (official
// torch_utils/ops/bias_act.py `_bias_act_ref`; spec §6).
#pragma once

#include <optional>
#include <string>

#include "sg2/tensor.h"

namespace sg2::ref {

/// The activations of the official table.
enum class Activation { linear, relu, lrelu, tanh, sigmoid, elu, selu, softplus, swish };

/// "lrelu" -> Activation::lrelu; throws Error(invalid_argument) for an unknown name.
Activation parse_activation(const std::string& name);
/// Default alpha (0.2 for lrelu, else 0) and gain (sqrt(2) for relu, lrelu, swish, else 1).
float default_alpha(Activation a);
float default_gain(Activation a);

/// act(v) for one value (float32 arithmetic, as the reference implementation).
float activate(Activation a, float v, float alpha);

/// x [d0, C, ...] (bias broadcast along dimension `dim`, the channels), float32, host.
/// out = clamp(act(x + b) * gain, -clamp, clamp); bias may be null (no bias); alpha/gain nullopt
/// mean the activation's defaults; clamp nullopt (or < 0) means no clamp. The gain multiply is
/// skipped when gain == 1, as in the reference. Throws on shape mismatch.
Tensor bias_act(const Tensor& x, const Tensor* bias, int dim, Activation act, std::optional<float> alpha = {},
                std::optional<float> gain = {}, std::optional<float> clamp = {});

}  // namespace sg2::ref
