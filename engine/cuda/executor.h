// sg2 CUDA backend: the plan executor for one batch size — the activation buffers (allocated
// once), the convolutions with their implementations chosen once, the forward program as a list of
// launches emitted block by block from the recipes (recipe.h), and one CUDA graph per program
// (captured on first use, then replayed).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/conv.h"
#include "engine/cuda/cuda_raii.h"
#include "engine/cuda/device_model.h"

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
  /// Allocates every buffer and chooses the convolutions' implementations (runs each once);
  /// `cudnn` may be null when no recipe of `m` asks cuDNN (DeviceModel::uses_cudnn).
  Executor(const DeviceModel& m, int N, cudnnHandle_t cudnn, const DeviceCaps& caps, MemoryStats* stats,
           cudaStream_t stream, size_t workspace_limit);

  int batch() const { return N_; }
  float* ws() const { return ws_.as<float>(); }  ///< [N, num_ws, w_dim] input
  float* noise_maps();                           ///< [N, noise floats per sample]
  /// [N, s_cols] fp32: the last run's styles (columns per layer: DeviceModel's s_col, padded).
  const float* styles() const { return styles_.as<float>(); }
  MappingBuffers& mapping() { return mapping_; }

  /// ws -> images; returns the device image [N, img_channels, R, R] fp32. Graph replay.
  const float* synthesize(NoiseKind kind, cudaStream_t s);
  /// The same without a graph, calling `dump` after every block.
  const float* synthesize_eager(NoiseKind kind, cudaStream_t s, const BlockDumpFn& dump);
  /// Mapping (psi 1) + synthesis with const noise from mapping().z/c as one graph (benchmarks).
  const float* generate(cudaStream_t s);

  /// Runs generate() eagerly with CUDA events around every step: (step name, ms) in order.
  std::vector<std::pair<std::string, float>> profile(cudaStream_t s);

  /// False when capturing a CUDA graph failed and the program runs eagerly instead.
  bool uses_graphs() const { return !graph_failed_; }
  const std::string& capture_error() const { return capture_error_; }

  size_t bytes() const;  ///< device bytes held (buffers + workspace)
  size_t workspace_bytes() const { return workspace_.bytes(); }
  std::vector<std::string> conv_descriptions() const;

 private:
  struct Step {
    std::function<void(cudaStream_t)> fn;
    std::string name;     ///< "b64.conv1", "b64.conv1.epilogue", ...
    int dump_block = -1;  ///< >= 0: block index finished after this step
  };
  /// What a program is: its noise, whether the mapping runs first (benchmarks), dumps.
  struct ProgramKey {
    NoiseKind noise = NoiseKind::constant;
    bool with_mapping = false;
    bool operator<(const ProgramKey& o) const {
      return noise != o.noise ? noise < o.noise : with_mapping < o.with_mapping;
    }
  };
  /// The state of a program being emitted (emit_* below append to `steps`).
  struct Emit {
    NoiseKind noise;
    bool for_dump;
    std::vector<Step> steps;
    void* act;         ///< the buffer holding the current activation (the next conv's scaled input)
    void* conv_out;    ///< the buffer the next convolution writes
    int img_cur = -1;  ///< which of img_[] holds the current image (-1: none yet)
  };
  std::vector<Step> program(const ProgramKey& key, bool for_dump);
  void emit_styles(Emit& e);
  void emit_const(Emit& e, size_t block);
  void emit_skip(Emit& e, size_t block);
  void emit_conv0(Emit& e, size_t block);
  void emit_conv1(Emit& e, size_t block);
  /// The noise input of a layer for this program: pointer, per-sample stride, strength.
  void noise_of(const Emit& e, const ConvLayer& c, const float** ptr, int64_t* stride, float* strength);
  void run_steps(const std::vector<Step>& steps, cudaStream_t s, const BlockDumpFn* dump);
  GraphExec capture(const std::vector<Step>& steps, cudaStream_t s);
  /// Replays the graph of `key` (capturing it first), or runs its steps eagerly when capture failed.
  void replay(const ProgramKey& key, cudaStream_t s);

  const DeviceModel& m_;
  int N_;
  DeviceCaps caps_;
  MemoryStats* stats_;
  // Buffers by role. Activations are NHWC in the block's dtype.
  DeviceBuffer ws_;            ///< [N, num_ws, w_dim] the latents
  DeviceBuffer styles_;        ///< [N, s_cols] every modulated layer's styles (affine output)
  DeviceBuffer input_scales_;  ///< [N, s_cols] the styles as the convolutions' input scales (fp16: s / max|s|)
  DeviceBuffer style_max_;     ///< [N, conv layers] max|s| of each fp16 layer (1 for fp32 layers)
  DeviceBuffer dcoefs_;        ///< [N, dcoef_cols] demodulation coefficients of every conv layer
  DeviceBuffer act_a_,
      act_b_;              ///< the current activation and the convolution output (they trade roles after a fused conv1)
  DeviceBuffer skip_in_;   ///< resnet: the unscaled block input for the skip conv
  DeviceBuffer residual_;  ///< resnet: the skip branch's output [N, r, r, C] fp32, added in the conv1 epilogue
  DeviceBuffer img_[2];    ///< [N, img_channels, R, R] the skip image, ping-pong
  DeviceBuffer noise_;     ///< [N, noise floats per sample] per-sample noise maps
  DeviceBuffer workspace_;  ///< the convolutions' workspace (cuDNN, 3xTF32 split-K partials)
  DeviceBuffer dump_;       ///< eager dumps: each block's unscaled output
  MappingBuffers mapping_;
  struct Convs {
    std::unique_ptr<Conv> conv0, conv1, skip;
  };
  std::vector<Convs> convs_;  // per block
  std::map<ProgramKey, GraphExec> graphs_;
  const float* final_img_ = nullptr;  // the same buffer for every program of this executor
  bool graph_failed_ = false;
  std::string capture_error_;
  std::map<ProgramKey, std::vector<Step>> eager_;  // programs run without a graph (capture failed)
  size_t dump_bytes_ = 0;
  struct DumpTarget {
    const void* x;
    DType dtype;
    const float* img;
  };
  std::vector<DumpTarget> dump_x_;
};

}  // namespace sg2::cuda
