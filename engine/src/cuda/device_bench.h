// sg2 internal: device-side timing hooks of the CUDA backend for `sg2 bench` (plain C++; no CUDA
// headers, so the CLI compiles without CUDA). Obtained with Backend::device_bench().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sg2 {

class DeviceBench {
 public:
  virtual ~DeviceBench() = default;

  struct Result {
    int batch = 0;
    std::vector<float> ms;         ///< per timed replay, CUDA events around each graph launch
    size_t model_bytes = 0;        ///< weights and tables on the device
    size_t batch_bytes = 0;        ///< this batch size's buffers, cuDNN workspace included
    size_t workspace_bytes = 0;    ///< cuDNN workspace (part of batch_bytes)
    size_t peak_bytes = 0;         ///< high-water mark of sg2's own allocations (model + batch)
    size_t meminfo_delta = 0;      ///< cudaMemGetInfo: free before the batch - free after its first replay
    bool output_finite = false;    ///< the timed output has no NaN / Inf
    double output_mean_abs = 0;    ///< mean |img| of the timed output (never time on zeros)
    std::vector<std::string> conv_algorithms;
    bool graph = true;             ///< false: CUDA graph capture failed, launches ran eagerly
    std::string graph_error;       ///< why capture failed
  };

  /// Times the whole generate (mapping with psi 1, synthesis with const noise) for a batch of
  /// `batch` random inputs (z ~ N(0,1) from `seed`, classes cycled) as one CUDA graph: `warmup`
  /// untimed replays, then `iters` timed ones. Releases the cached state of other batch sizes
  /// first. Throws Error(out_of_memory) when the batch does not fit.
  virtual Result time_generate(int batch, int warmup, int iters, uint64_t seed) = 0;

  /// One eager generate of `batch` inputs with CUDA events around every step (after a warm-up):
  /// (step name, ms) in execution order. Where the time goes, without a profiler.
  virtual std::vector<std::pair<std::string, float>> profile(int batch, uint64_t seed) = 0;

  /// Frees every batch size's buffers and graphs (the weights stay).
  virtual void release_batches() = 0;

  /// "NVIDIA H200 (sm_90, 132 SMs, 143771 MiB), cuDNN 91400, CUDA runtime 13000"
  virtual std::string device_description() const = 0;
};

}  // namespace sg2
