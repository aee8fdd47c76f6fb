// sg2 internal: the timing hooks a backend offers `sg2 bench` (sg2/bench.h), obtained with
// Backend::device_bench(). Plain C++ (no CUDA headers).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sg2/bench.h"

namespace sg2 {

class DeviceBench {
 public:
  virtual ~DeviceBench() = default;

  /// sg2/bench.h bench_generate (arguments validated by the caller).
  virtual BenchResult time_generate(int batch, int warmup, int iters, uint64_t seed) = 0;
  /// sg2/bench.h profile_generate.
  virtual std::vector<std::pair<std::string, float>> profile(int batch, uint64_t seed) = 0;
  /// Frees every batch size's buffers and graphs (the weights stay).
  virtual void release_batches() = 0;
  /// sg2/bench.h device_description.
  virtual std::string device_description() const = 0;
};

}  // namespace sg2
