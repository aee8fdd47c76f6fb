// sg2 CPU reference: normalize_2nd_moment and fully_connected (fully_connected.h).
#include "kernels/ref/fully_connected.h"

#include <cmath>

#include "kernels/ref/parallel.h"
#include "sg2/error.h"

namespace sg2::ref {

Tensor normalize_2nd_moment(const Tensor& x, float eps) {
  if (x.ndim() != 2) fail(ErrorKind::invalid_argument, "normalize_2nd_moment: x must be [N, F], got ", x.shape_str());
  const int64_t N = x.dim(0), F = x.dim(1);
  Tensor out = x;
  for (int64_t n = 0; n < N; ++n) {
    double sum = 0;
    for (int64_t j = 0; j < F; ++j) {
      const float v = x[n * F + j];
      sum += double(v * v);
    }
    const float mean = F > 0 ? static_cast<float>(sum / double(F)) : 0.0f;
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t j = 0; j < F; ++j) out[n * F + j] = x[n * F + j] * scale;
  }
  return out;
}

Tensor fully_connected(const Tensor& x, const Tensor& weight, const Tensor* bias, float weight_gain, float bias_gain,
                       Activation act) {
  if (x.ndim() != 2 || weight.ndim() != 2 || weight.dim(1) != x.dim(1))
    fail(ErrorKind::invalid_argument, "fully_connected: x ", x.shape_str(), " and weight ", weight.shape_str(),
         " do not match");
  const int64_t N = x.dim(0), I = x.dim(1), O = weight.dim(0);
  if (bias != nullptr && (bias->ndim() != 1 || bias->dim(0) != O))
    fail(ErrorKind::invalid_argument, "fully_connected: bias ", bias->shape_str(), " for ", O, " outputs");
  Tensor y({N, O});
  parallel_for(O, [&](int64_t o) {
    const float* w = weight.data() + o * I;
    for (int64_t n = 0; n < N; ++n) {
      const float* xr = x.data() + n * I;
      float acc = 0.0f;
      for (int64_t i = 0; i < I; ++i) acc += xr[i] * (w[i] * weight_gain);
      y[n * O + o] = acc;
    }
  });
  if (bias == nullptr) return bias_act(y, nullptr, 1, act);
  Tensor b = *bias;
  if (bias_gain != 1.0f)
    for (auto& v : b.vec()) v = v * bias_gain;
  return bias_act(y, &b, 1, act);
}

}  // namespace sg2::ref
