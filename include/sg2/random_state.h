// sg2: numpy's legacy RandomState, bit-exact (spec §8.1).
#pragma once

#include <cstdint>
#include <random>
#include <vector>
#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// numpy.random.RandomState(seed) reimplemented: MT19937 seeded as numpy's `init_genrand`,
/// `random_sample` from 53 bits, `randn` by the legacy polar Box-Muller method with numpy's
/// one-value cache. For every seed in [0, 2^32-1] the draws equal numpy's bit for bit
/// (IEEE double, glibc log/sqrt; no fast-math).
class RandomState {
 public:
  explicit RandomState(uint32_t seed) : mt_(seed) {}

  /// Next raw 32-bit output of MT19937.
  uint32_t next_u32() { return static_cast<uint32_t>(mt_()); }
  /// numpy `random_sample()`: a double in [0, 1) from 53 random bits.
  double random_sample();
  /// numpy `standard_normal()` (legacy gauss, with the cached second value).
  double gauss();
  /// numpy `randn(n)`: n Gaussian draws in C order (randn(1, n) gives the same values).
  std::vector<double> randn(size_t n);
  /// Fills out[0..n) with Gaussian draws.
  void randn(double* out, size_t n);

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace sg2
SG2_PUBLIC_END
