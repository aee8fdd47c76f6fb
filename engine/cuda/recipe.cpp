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

ConvMath conv_math(DType dtype, Precision precision) {
  if (dtype == DType::f16) return ConvMath::fp16;
  if (precision == Precision::tf32) return ConvMath::tf32;
  return ConvMath::fp32_strict;
}

std::vector<BlockRecipe> make_recipes(const SynthesisPlan& plan, int img_channels, Precision precision,
                                      const DeviceCaps& caps, bool batch_invariant) {
  std::vector<BlockRecipe> out;
  for (const BlockPlan& b : plan.blocks) {
    BlockRecipe r;
    r.dtype = block_dtype(b, precision);
    r.math = conv_math(r.dtype, precision);
    r.separable_upconv = plan.filter_size == 4 && !plan.filter1d.empty();
    const int C = b.out_channels;
    ConvShape c1;  // the shapes of one image (the choice never depends on the batch)
    c1.N = 1;
    c1.H = b.height;
    c1.W = b.width;
    c1.Cin = C;
    c1.Cout = C;
    c1.dtype = r.dtype;
    r.conv1 = choose_conv(c1, r.math, caps, batch_invariant);
    if (b.in_channels > 0) {
      ConvShape c0 = c1;
      c0.H = b.height / 2;
      c0.W = b.width / 2;
      c0.Cin = b.in_channels;
      c0.transposed = true;
      c0.pad = 0;
      r.conv0 = choose_conv(c0, r.math, caps, batch_invariant);
      if (b.skip) {
        ConvShape sk = c0;
        sk.transposed = false;
        sk.k = 1;
        r.skip = choose_conv(sk, r.math, caps, batch_invariant);
      }
    }
    out.push_back(r);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const BlockPlan& b = plan.blocks[i];
    BlockRecipe& r = out[i];
    r.out_dtype = i + 1 < out.size() ? out[i + 1].dtype : r.dtype;
    const int rgb = b.torgb ? img_channels : 0;
    // Non-square blocks (height != width) never fuse: the fused kernel is not tested on them.
    r.fused_conv1 = r.dtype == DType::f16 && r.out_dtype == DType::f16 && !b.skip && b.height == b.width &&
                    fused_conv_f16_shape_ok(b.out_channels, b.height, b.width, rgb, caps.smem_per_block_optin);
  }
  return out;
}

}  // namespace sg2::cuda
