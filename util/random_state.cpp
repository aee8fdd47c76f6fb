// sg2: numpy legacy RandomState (random_state.h; spec §8.1).
#include "sg2/random_state.h"

#include <cmath>

namespace sg2 {

double RandomState::random_sample() {
  // numpy: a = genrand >> 5 (27 bits), b = genrand >> 6 (26 bits), (a * 2^26 + b) / 2^53.
  uint32_t a = next_u32() >> 5;
  uint32_t b = next_u32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double RandomState::gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * random_sample() - 1.0;
    x2 = 2.0 * random_sample() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

void RandomState::randn(double* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = gauss();
}

std::vector<double> RandomState::randn(size_t n) {
  std::vector<double> v(n);
  randn(v.data(), n);
  return v;
}

}  // namespace sg2
