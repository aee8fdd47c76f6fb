// sg2 CUDA backend: how each synthesis block runs on a GPU — its recipe — resolved once from the
// plan, the precision, the device and the batch-invariance policy, never from the batch size. This
// is the one place that maps precision x block to (storage dtype, convolution arithmetic, each
// convolution's implementation, fusion); DeviceModel packs the filters and Executor launches the
// kernels it names, neither chooses again.
//
//   precision   block in the checkpoint's fp16 set    other blocks
//   fp32        f32, fp32_strict                       f32, fp32_strict
//   auto        f16, fp16                              f32, fp32_strict
//   tf32        f32, tf32                              f32, tf32
//   fp16        f16, fp16                              f16, fp16
//
// To add a precision mode (bf16, say): a Precision value (sg2/generator.h, its parse/to_string in
// engine/generator.cpp), its row here (block_dtype, conv_math), a DType and the kernels'
// instantiations for it (kernels/dtype.h and the .cu files that switch on DType), the cuDNN type
// in conv.cpp, and the tests (docs/design.md "How to add a precision mode").
#pragma once

#include <vector>

#include "engine/cuda/conv.h"
#include "engine/cuda/device_caps.h"
#include "engine/plan.h"
#include "kernels/dtype.h"
#include "sg2/generator.h"

namespace sg2::cuda {

struct BlockRecipe {
  DType dtype = DType::f32;               ///< storage of its activations, conv weights and conv outputs
  ConvMath math = ConvMath::fp32_strict;  ///< arithmetic of its convolutions
  DType out_dtype = DType::f32;  ///< what its conv1 epilogue writes: the next block's dtype (its own for the last)
  ConvChoice conv0;              ///< the up-sampling transposed conv (blocks with an input)
  ConvChoice conv1;              ///< the 3x3 conv (unused when fused_conv1)
  ConvChoice skip;               ///< the resnet skip's 1x1 conv
  /// conv1, its epilogue and ToRGB as one kernel (kernels/fused_conv_f16.h): fp16 blocks of 32 or
  /// 64 channels whose shared memory the device allows, without a residual (not resnet).
  bool fused_conv1 = false;
  /// The up-conv epilogue's FIR as two 1-D passes (the filter is an outer product of 4 taps).
  bool separable_upconv = false;
};

/// The storage type of block `b` under `precision` (auto: the checkpoint's fp16 blocks).
DType block_dtype(const BlockPlan& b, Precision precision);
/// The arithmetic of a block's convolutions stored in `dtype` under `precision`.
ConvMath conv_math(DType dtype, Precision precision);

/// One recipe per block of `plan`, in order (choose_conv for each convolution; batch_invariant:
/// GeneratorOptions::batch_invariant).
std::vector<BlockRecipe> make_recipes(const SynthesisPlan& plan, int img_channels, Precision precision,
                                      const DeviceCaps& caps, bool batch_invariant);

}  // namespace sg2::cuda
