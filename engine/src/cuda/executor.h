// sg2 CUDA backend: the plan executor for one batch size — the activation buffers (allocated
// once, ping-pong), the convolutions with their algorithms chosen once, the forward program as a
// list of launches, and one CUDA graph per noise kind (captured on first use, then replayed).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda_raii.h"
#include "cudnn_conv.h"
#include "device_model.h"

namespace sg2::cuda {

enum class NoiseKind { none, constant, per_sample };

/// Mapping inputs and scratch for a batch (device).
struct MappingBuffers {
  MappingBuffers(const DeviceModel& m, int N, MemoryStats* stats);
  int N;
  DeviceBuffer z, c, x0, e, a, b;
};

/// Issues the mapping network: z [N, z_dim], c [N, c_dim] -> ws [N, num_ws, w_dim] (truncated).
/// `after_fc(i, y, width)`, when set, is called after fc i was issued (eager dumps).
void run_mapping(const DeviceModel& m, MappingBuffers& b, float psi, int cutoff, float* ws, cudaStream_t s,
                 const std::function<void(int, const float*, int)>& after_fc = {});

/// What a dump of one block needs: called after the block ran (eagerly, stream synchronized by
/// the callee): x [N, H, W, C] NHWC in `dtype` (device), img [N, img_channels, H, W] or null.
using BlockDumpFn = std::function<void(int res, const void* x, DType dtype, int C, const float* img)>;

class Executor {
 public:
  /// Allocates every buffer and chooses the convolution algorithms (runs each once).
  Executor(const DeviceModel& m, int N, cudnnHandle_t cudnn, MemoryStats* stats, cudaStream_t stream,
           size_t workspace_limit);

  int batch() const { return N_; }
  float* ws() const { return ws_.as<float>(); }                 ///< [N, num_ws, w_dim] input
  float* noise_maps();                                          ///< [N, noise floats per sample]
  MappingBuffers& mapping() { return mapping_; }

  /// ws -> images; returns the device image [N, img_channels, R, R] fp32. Graph replay.
  const float* synthesize(NoiseKind kind, cudaStream_t s);
  /// The same without a graph, calling `dump` after every block.
  const float* synthesize_eager(NoiseKind kind, cudaStream_t s, const BlockDumpFn& dump);
  /// Mapping (psi 1) + synthesis with const noise from z()/c() as one graph (benchmarks).
  const float* generate(cudaStream_t s);

  /// Runs generate() eagerly with CUDA events around every step: (step name, ms) in order.
  std::vector<std::pair<std::string, float>> profile(cudaStream_t s);

  /// False when capturing a CUDA graph failed and the program runs eagerly instead.
  bool uses_graphs() const { return !graph_failed_; }
  const std::string& capture_error() const { return capture_error_; }

  size_t bytes() const;            ///< device bytes held (buffers + workspace)
  size_t workspace_bytes() const { return workspace_.bytes(); }
  std::vector<std::string> conv_descriptions() const;

 private:
  struct Step {
    std::function<void(cudaStream_t)> fn;
    std::string name;     ///< "b64.conv1", "b64.conv1.epilogue", ...
    int dump_block = -1;  ///< >= 0: block index finished after this step
  };
  std::vector<Step> program(NoiseKind kind, bool with_mapping, bool for_dump);
  void run_steps(const std::vector<Step>& steps, cudaStream_t s, const BlockDumpFn* dump);
  GraphExec capture(const std::vector<Step>& steps, cudaStream_t s);
  /// Replays the graph `key` (capturing it first), or runs `steps` eagerly when capture failed.
  void replay(int key, NoiseKind kind, bool with_mapping, cudaStream_t s);

  const DeviceModel& m_;
  int N_;
  MemoryStats* stats_;
  DeviceBuffer ws_, s_, s_in_, smax_, dd_, X_, Y_, R_, S_, img_[2], noise_, workspace_, dump_;
  MappingBuffers mapping_;
  struct Convs {
    std::unique_ptr<CudnnConv> conv0, conv1, skip;
  };
  std::vector<Convs> convs_;  // per block
  std::map<int, GraphExec> graphs_;  // key: noise kind, or 100 for generate
  const float* final_img_ = nullptr;  // the same buffer for every program of this executor
  bool graph_failed_ = false;
  std::string capture_error_;
  std::map<int, std::vector<Step>> eager_;  // programs run without a graph (capture failed)
  size_t dump_bytes_ = 0;
  struct DumpTarget {
    const void* x;
    DType dtype;
    const float* img;
  };
  std::vector<DumpTarget> dump_x_;
};

}  // namespace sg2::cuda
