// sg2: timing the generator (what `sg2 bench` measures), for benchmarks and tools.
//
//   sg2::Generator gen(sg2::make_random_model(sg2::named_config("paper256"), 0), {sg2::Device::parse("cuda")});
//   sg2::BenchResult r = sg2::bench_generate(gen, 32, 3, 20, 0);   // r.ms: 20 timings of a batch of 32
//
// The timed region is the whole generate (mapping with psi 1, synthesis with const noise) of a
// batch of random inputs (z from numpy RandomState(seed + n), classes cycled), on the device, as
// one CUDA graph replay measured with CUDA events. Backends without timing hooks throw
// Error(unsupported).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sg2/export.h"
#include "sg2/generator.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// One timed batch size.
struct BenchResult {
  int batch = 0;
  std::vector<float> ms;                     ///< per timed run (ms), device events around each replay
  size_t model_bytes = 0;                    ///< weights and tables on the device
  size_t batch_bytes = 0;                    ///< this batch size's buffers, convolution workspace included
  size_t workspace_bytes = 0;                ///< convolution workspace (part of batch_bytes)
  size_t peak_bytes = 0;                     ///< high-water mark of sg2's own allocations (model + batch)
  size_t meminfo_delta = 0;                  ///< device free memory before the batch - after its first run
  bool output_finite = false;                ///< the timed output has no NaN / Inf
  double output_mean_abs = 0;                ///< mean |img| of the timed output (never time on zeros)
  std::vector<std::string> conv_algorithms;  ///< "b64.conv1: <implementation>" per convolution
  bool graph = true;                         ///< false: CUDA graph capture failed, launches ran eagerly
  std::string graph_error;                   ///< why capture failed
};

/// Times `iters` runs of a batch of `batch` after `warmup` untimed ones. Frees the cached state
/// of other batch sizes first. Throws Error(out_of_memory) when the batch does not fit,
/// Error(unsupported) when the generator's backend cannot time itself, Error(invalid_argument)
/// for batch < 1, iters < 1 or warmup < 0.
BenchResult bench_generate(Generator& gen, int batch, int warmup, int iters, uint64_t seed);

/// One eager generate of `batch` inputs with device events around every step (after a warm-up):
/// (step name, ms) in execution order. Where the time goes, without a profiler.
std::vector<std::pair<std::string, float>> profile_generate(Generator& gen, int batch, uint64_t seed);

/// Frees every batch size's buffers and graphs (the weights stay).
void release_batches(Generator& gen);

/// "NVIDIA H200 (sm_90, 132 SMs, 143771 MiB), cuDNN 91400, CUDA runtime 13000, built for 900".
std::string device_description(Generator& gen);

}  // namespace sg2
SG2_PUBLIC_END
