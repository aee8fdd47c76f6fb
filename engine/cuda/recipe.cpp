// sg2 CUDA backend: the per-block recipes (recipe.h).
#include "engine/cuda/recipe.h"

#include "kernels/fused_conv_f16.h"

namespace sg2::cuda {

DType block_dtype(const BlockPlan& b, Precision precision) {
  switch (precision) {
    case Precision::fp16:
      return DType::f16;
    case Precision::automatic:
      return b.fp16 ? DType::f16 : DType::f32;
    case Precision::fp32:
    case Precision::tf32:
      return DType::f32;
  }
  return DType::f32;
}

ConvMath conv_math(DType dtype, Precision precision, const CudaTuning& tuning) {
  if (dtype == DType::f16) return ConvMath::fp16;
  if (precision == Precision::tf32) return ConvMath::tf32;
  // SG2_AUTO_FP32_MATH=tf32 runs auto's fp32 blocks on TF32 tensor cores, as the official code does
  // under PyTorch's default allow_tf32 (docs/performance-notes.md).
  if (precision == Precision::automatic && tuning.auto_fp32_as_tf32) return ConvMath::tf32;
  return ConvMath::fp32_strict;
}

std::vector<BlockRecipe> make_recipes(const SynthesisPlan& plan, int img_channels, Precision precision,
                                      const DeviceCaps& caps, const CudaTuning& tuning) {
  std::vector<BlockRecipe> out;
  for (const BlockPlan& b : plan.blocks) {
    BlockRecipe r;
    r.dtype = block_dtype(b, precision);
    r.math = conv_math(r.dtype, precision, tuning);
    r.separable_upconv = tuning.separable_upconv && plan.filter_size == 4 && !plan.filter1d.empty();
    r.shared_table_epilogue = tuning.shared_table_epilogue;
    out.push_back(r);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const BlockPlan& b = plan.blocks[i];
    BlockRecipe& r = out[i];
    r.out_dtype = i + 1 < out.size() ? out[i + 1].dtype : r.dtype;
    const int rgb = b.torgb ? img_channels : 0;
    r.fused_conv1 = tuning.fused_conv1 && r.dtype == DType::f16 && r.out_dtype == DType::f16 && !b.skip &&
                    fused_conv_f16_shape_ok(b.out_channels, b.resolution, b.resolution, rgb, caps.smem_per_block_optin);
  }
  return out;
}

}  // namespace sg2::cuda
