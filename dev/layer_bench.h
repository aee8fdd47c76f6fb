// sg2 kernel runner: the candidates of one layer of a configuration (its convolution, and its
// epilogue variants), built on random inputs, timed and checked against the engine's choice.
#pragma once

#include <cudnn.h>

#include <string>
#include <vector>

#include "dev/bench_util.h"
#include "engine/cuda/conv.h"
#include "engine/cuda/device_caps.h"
#include "engine/plan.h"
#include "sg2/generator.h"

namespace sg2::dev {

struct LayerRow {
  std::string candidate;
  Timing timing;
  double diff = 0;  ///< max |out - chosen out| / scale (the chosen row: vs the CPU reference, or -1)
  bool chosen = false;
};

struct LayerResult {
  std::string layer, what;     ///< "b256.conv0", "transposed 128x128 256->128 fp16 batch 32"
  double floor_ms = 0;         ///< max(tensor-core time, HBM time) at the measured ceilings
  std::vector<LayerRow> rows;  ///< the convolution's candidates, then the epilogue's
};

struct LayerOptions {
  int batch = 1;
  int warmup = 3, iters = 20;
  float slow_ms = 50.0f;   ///< candidates slower than this per launch run three times only
  bool reference = false;  ///< also check the chosen output of image 0 against the CPU reference
  uint64_t seed = 1;
};

/// Measures the candidates of the convolution `layer` (LayerPlan::name without "synthesis.") of
/// block `b` in `precision` on this device.
LayerResult bench_conv_layer(const BlockPlan& b, const LayerPlan& layer, Precision precision,
                             const cuda::DeviceCaps& caps, cudnnHandle_t cudnn, const LayerOptions& o, cudaStream_t s);

}  // namespace sg2::dev
