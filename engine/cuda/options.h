// sg2 CUDA backend: the options of one backend. In production only the batch-invariance policy
// (GeneratorOptions::batch_invariant) is set; the GPU tests construct the rest to reach the paths
// that other GPUs and low memory take (README "Batch invariance"; docs/developing.md "GPU tests").
// Kernel experiments (A/B variants of one layer) live in the kernel runner (dev/kernel_bench.cpp),
// not here: the engine runs the recipe's choice (recipe.h) and nothing else.
#pragma once

#include <cstddef>
#include <memory>

#include "engine/backend.h"
#include "engine/cuda/device_caps.h"
#include "sg2/generator.h"
#include "sg2/model.h"

namespace sg2::cuda {

struct CudaOptions {
  /// Every image's bits independent of the batch size and of its position in the batch
  /// (GeneratorOptions::batch_invariant): sg2's own kernels, whose reduction order the layer's
  /// shape fixes. false: cuDNN first in tf32 and fp16 and split-K tuned to each batch (faster
  /// where cuDNN wins, not batch-invariant).
  bool batch_invariant = true;
  /// > 0: device allocations beyond this many bytes fail as out of memory (tests the
  /// batch-splitting path).
  size_t memory_limit_bytes = 0;
  /// false: choose kernels as on a GPU without Hopper's warpgroup MMA (the mma.sync kernels).
  bool allow_wgmma = true;
  /// > 0: choose kernels as if a block could have at most this much shared memory (sm_86 and
  /// sm_89 allow 99 KiB: fp32 then runs on the SIMT kernel, fp16 conv1 of 64 channels unfused).
  size_t smem_per_block_limit = 0;

  /// `caps` with the limits above applied (what the recipes see).
  DeviceCaps limit(DeviceCaps caps) const {
    if (!allow_wgmma) {
      caps.wgmma = false;
      caps.encode_tensor_map = nullptr;
    }
    if (smem_per_block_limit > 0 && smem_per_block_limit < caps.smem_per_block_optin)
      caps.smem_per_block_optin = smem_per_block_limit;
    return caps;
  }
};

/// The CUDA backend on device `index` with these options (engine/backend.h make_cuda_backend
/// passes GeneratorOptions::batch_invariant alone). Throws Error(device) when the device cannot
/// be used.
std::unique_ptr<Backend> make_cuda_backend(const Model& model, int index, Precision precision,
                                           const CudaOptions& options);

}  // namespace sg2::cuda
