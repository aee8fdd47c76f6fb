// sg2 CPU reference: normalize_2nd_moment and fully_connected (official
// training/networks_stylegan2.py `normalize_2nd_moment`, `FullyConnectedLayer`).
#pragma once

#include "kernels/ref/bias_act.h"
#include "sg2/tensor.h"

namespace sg2::ref {

/// x [N, F] float32 -> x * rsqrt(mean_j(x_j^2) + eps), per row.
Tensor normalize_2nd_moment(const Tensor& x, float eps = 1e-8f);

/// FullyConnectedLayer.forward: x [N, in], weight [out, in] (stored, raw), bias [out] or null.
/// y = bias_act(x @ (weight * weight_gain)^T, bias * bias_gain, act) with the activation's
/// default alpha and gain. weight_gain = lr_multiplier / sqrt(in), bias_gain = lr_multiplier;
/// both applied in float32 as the official code does. Returns [N, out].
Tensor fully_connected(const Tensor& x, const Tensor& weight, const Tensor* bias, float weight_gain, float bias_gain,
                       Activation act);

}  // namespace sg2::ref
