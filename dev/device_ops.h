// sg2 kernel runner: device-side helpers for large buffers (random fill, comparison), so that a
// 4 GB layer output is neither generated nor compared on the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace sg2::dev {

/// p[0 .. n) = pseudo-random values of about N(0, scale^2) (a hash of the index and the seed;
/// never exactly zero), stored as `dt`.
void fill_random(void* p, size_t n, cuda::DType dt, float scale, uint64_t seed, cudaStream_t s);

struct Comparison {
  double max_abs_diff = 0;  ///< max |a - b|
  double max_abs_ref = 0;   ///< max |b|
  uint64_t non_finite = 0;  ///< elements of a that are NaN or infinite
};
/// a against b, both n elements of `dt` on the device. Synchronizes `s`.
Comparison compare(const void* a, const void* b, size_t n, cuda::DType dt, cudaStream_t s);

}  // namespace sg2::dev
