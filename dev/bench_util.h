// sg2 kernel runner (dev/): device buffers of random data, CUDA-event timing, output comparison.
// Experiments only: nothing in the library depends on dev/.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/cuda/cuda_raii.h"
#include "kernels/dtype.h"

namespace sg2::dev {

using cuda::DeviceBuffer;
using cuda::DType;

/// Device buffer of `count` elements of `dt` filled with N(0, scale^2) (never zeros), from `seed`.
DeviceBuffer random_buffer(size_t count, DType dt, float scale, uint64_t seed);
/// Device copy of host floats in `dt`.
DeviceBuffer upload(const std::vector<float>& v, DType dt);
/// Host floats of `count` elements of `dt` at device `p`.
std::vector<float> download(const void* p, size_t count, DType dt);

/// One candidate implementation of a layer: `run` launches it on the stream (false: it refuses).
struct Candidate {
  std::string name;
  std::function<bool(cudaStream_t)> run;
  bool chosen = false;  ///< the engine's (batch-invariant) choice: the reference output
};

struct Timing {
  bool ran = false;
  float median_ms = 0, min_ms = 0;
  int runs = 0;
  std::string note;  ///< why it did not run, or why timing stopped early
};

/// Times `c`: `warmup` untimed runs, then `iters` launches each between two CUDA events; the
/// median and the minimum. A candidate slower than `slow_ms` per launch stops after three.
Timing time_candidate(const Candidate& c, int warmup, int iters, float slow_ms, cudaStream_t s);

/// max |a - b| / max(1, max |b|); infinity when a holds a NaN or an infinity.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace sg2::dev
