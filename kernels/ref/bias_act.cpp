// sg2 CPU reference: bias_act (bias_act.h).
#include "kernels/ref/bias_act.h"

#include <cmath>

#include "kernels/ref/parallel.h"
#include "sg2/error.h"

namespace sg2::ref {

Activation parse_activation(const std::string& s) {
  if (s == "linear") return Activation::linear;
  if (s == "relu") return Activation::relu;
  if (s == "lrelu") return Activation::lrelu;
  if (s == "tanh") return Activation::tanh;
  if (s == "sigmoid") return Activation::sigmoid;
  if (s == "elu") return Activation::elu;
  if (s == "selu") return Activation::selu;
  if (s == "softplus") return Activation::softplus;
  if (s == "swish") return Activation::swish;
  fail(ErrorKind::invalid_argument, "unknown activation '", s, "'");
}

float default_alpha(Activation a) { return a == Activation::lrelu ? 0.2f : 0.0f; }

float default_gain(Activation a) {
  switch (a) {
    case Activation::relu:
    case Activation::lrelu:
    case Activation::swish:
      return static_cast<float>(std::sqrt(2.0));
    default:
      return 1.0f;
  }
}

float activate(Activation a, float v, float alpha) {
  switch (a) {
    case Activation::linear:
      return v;
    case Activation::relu:
      return v > 0.0f ? v : 0.0f;
    case Activation::lrelu:
      return v > 0.0f ? v : v * alpha;
    case Activation::tanh:
      return std::tanh(v);
    case Activation::sigmoid:
      return 1.0f / (1.0f + std::exp(-v));
    case Activation::elu:
      return v >= 0.0f ? v : std::expm1(v);
    case Activation::selu: {
      const float lambda = 1.0507009873554804934193349852946f, a2 = 1.6732632423543772848170429916717f;
      return v >= 0.0f ? lambda * v : lambda * a2 * std::expm1(v);
    }
    case Activation::softplus:
      return std::log1p(std::exp(-std::fabs(v))) + std::max(v, 0.0f);
    case Activation::swish:
      return v / (1.0f + std::exp(-v));
  }
  return v;
}

Tensor bias_act(const Tensor& x, const Tensor* bias, int dim, Activation act, std::optional<float> alpha,
                std::optional<float> gain, std::optional<float> clamp) {
  if (dim < 0 || dim >= x.ndim())
    fail(ErrorKind::invalid_argument, "bias_act: dim ", dim, " for shape ", x.shape_str());
  const int64_t C = x.dim(dim);
  if (bias != nullptr && (bias->ndim() != 1 || bias->dim(0) != C))
    fail(ErrorKind::invalid_argument, "bias_act: bias ", bias->shape_str(), " does not match dimension ", dim, " of ",
         x.shape_str());
  int64_t inner = 1;
  for (int d = dim + 1; d < x.ndim(); ++d) inner *= x.dim(d);
  const float a = alpha ? *alpha : default_alpha(act);
  const float g = gain ? *gain : default_gain(act);
  const bool do_clamp = clamp && *clamp >= 0.0f;
  const float c = do_clamp ? *clamp : 0.0f;
  Tensor out = x;
  float* p = out.data();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    float v = p[i];
    if (bias != nullptr) v = v + (*bias)[(i / inner) % C];
    v = activate(act, v, a);
    if (g != 1.0f) v = v * g;
    if (do_clamp) v = std::min(std::max(v, -c), c);
    p[i] = v;
  }
  return out;
}

}  // namespace sg2::ref
