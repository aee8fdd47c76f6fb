// sg2 CUDA backend: every switch that changes which kernel runs, in one place. Read from the
// environment once, when a backend is created (CudaTuning::from_environment), and passed down in
// the recipe (recipe.h) and the kernels' launch arguments; no kernel reads the environment.
//
// The defaults are the fastest measured, and what every test and benchmark runs. The switches
// exist for A/B measurements and to run the fallbacks on a GPU that would not choose them
// (docs/developing.md, "Switches for A/B measurements", lists them):
//   SG2_FP32_CONV=simt|cudnn    strict fp32 on FMA pipes only: the SIMT implicit GEMM first, or
//                               cuDNN's FMA algorithms only (default: the 3xTF32 tensor-core kernel)
//   SG2_CONV=direct             every convolution on the direct kernel (slow; for checks)
//   SG2_CONV=cudnn              cuDNN for the convolutions sg2's fast kernels do not take (odd channel
//                               counts, the resnet skip), before the slow direct kernel: faster there,
//                               but those layers' results then depend on the batch size
//   SG2_CONV=cudnn-first        cuDNN before sg2's tensor-core kernel in tf32 and fp16, and split-K
//                               tuned to the batch: GeneratorOptions::batch_invariant = false (the
//                               choices before batch invariance: faster, not batch-invariant)
//   SG2_TF32X3_KERNEL=mma       the mma.sync 3xTF32 kernel on Hopper too (default there: wgmma)
//   SG2_TF32X3_TMA_X=0          the wgmma kernel copies activations with cp.async, not TMA
//   SG2_UNFUSED_CONV1=1         fp16 conv1 and its epilogue as two kernels (Conv + conv_epilogue)
//   SG2_UPCONV_2D=1             the up-conv epilogue's 2-D FIR even where it factors into 1-D taps
//   SG2_EPILOGUE_GENERAL=1      the general conv epilogue kernel instead of the shared-table one
//   SG2_AUTO_FP32_MATH=tf32     plain TF32 in auto's fp32 blocks (as PyTorch's allow_tf32; not
//                               float32-accurate)
//   SG2_CUDA_MEMORY_LIMIT_MB=M  allocations beyond M MiB fail as out of memory (tests the
//                               batch-splitting path)
#pragma once

#include <cstddef>

namespace sg2::cuda {

struct CudaTuning {
  enum class Fp32Conv { tensor_cores, simt, cudnn };
  Fp32Conv fp32_conv = Fp32Conv::tensor_cores;  ///< SG2_FP32_CONV
  /// Which convolution implementations may run (SG2_CONV): sg2's own, batch-invariant kernels
  /// only (default), cuDNN too where those do not take the shape, cuDNN first, or direct only.
  enum class ConvPolicy { invariant, allow_cudnn, cudnn_first, direct_only };
  ConvPolicy conv_policy = ConvPolicy::invariant;
  bool tf32x3_wgmma = true;            ///< false: SG2_TF32X3_KERNEL=mma
  bool tf32x3_tma_activations = true;  ///< false: SG2_TF32X3_TMA_X=0
  bool fused_conv1 = true;             ///< false: SG2_UNFUSED_CONV1=1
  bool separable_upconv = true;        ///< false: SG2_UPCONV_2D=1
  bool shared_table_epilogue = true;   ///< false: SG2_EPILOGUE_GENERAL=1
  bool auto_fp32_as_tf32 = false;      ///< SG2_AUTO_FP32_MATH=tf32
  size_t memory_limit_bytes = 0;       ///< SG2_CUDA_MEMORY_LIMIT_MB (0: none)

  /// The switches above from the environment. Throws Error(invalid_argument) naming the variable
  /// for a value it does not know (a misspelt switch must not silently measure the default).
  static CudaTuning from_environment();
};

}  // namespace sg2::cuda
