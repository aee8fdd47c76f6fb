// sg2 CUDA backend: a model's weights on one device, in the layouts and precisions the kernels
// use, and the per-layer tables (style columns, demodulation slices, dtypes) derived once from
// the synthesis plan. Immutable after construction; shared by every batch size.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>
#include <string>
#include <vector>

#include "engine/cuda/conv.h"
#include "engine/cuda/cuda_raii.h"
#include "engine/cuda/device_caps.h"
#include "engine/cuda/recipe.h"
#include "engine/plan.h"
#include "kernels/demodulate.h"
#include "kernels/dtype.h"
#include "sg2/generator.h"
#include "sg2/model.h"

namespace sg2::cuda {

/// A modulated 3x3 conv (conv0 or conv1).
struct ConvLayer {
  const LayerPlan* plan = nullptr;
  DType dtype = DType::f32;  ///< its input activations, weight and conv output
  ConvMath math = ConvMath::fp32_strict;
  size_t weight_off = 0;     ///< conv1: [Cout, 3, 3, Cin]; conv0: [Cin, 3, 3, Cout] (dtype; fp16: rows pre-normalized)
  size_t weight_hi_off = 0;  ///< the tensor-core kernel's filter [Cout, 3, 3, Cin] (conv.h set_packed_weights):
                             ///< fp32_strict the TF32 heads, tf32 the same, fp16 the fp16 weights; 0: none
  size_t weight_lo_off = 0;  ///< fp32_strict: the TF32 tails; else 0
  size_t weight_tconv_off = 0;     ///< conv0 on tc_transposed: its filter in tc_tconv_pack_weights' layout; 0: none
  size_t weight_tconv_lo_off = 0;  ///< fp32_strict conv0 on tc_transposed: the TF32 tails of that filter; else 0
  size_t bias_off = 0;             ///< [Cout] fp32
  size_t noise_const_off = 0;      ///< [r, r] fp32 (use_noise)
  float noise_strength = 0.0f;
  int noise_offset = 0;  ///< offset of its map inside one sample's per-sample noise maps
  int s_col = 0;         ///< first column of its styles in s / s_in
  int dcoef_col = 0;     ///< first column of its coefficients in dcoefs
  int demod_index = 0;   ///< row of the DemodLayer table
};

/// A block's ToRGB (fused into the conv1 epilogue).
struct TorgbLayer {
  const LayerPlan* plan = nullptr;
  size_t weight_off = 0;  ///< [img_channels, C] fp32
  size_t bias_off = 0;    ///< [img_channels] fp32
  int s_col = 0;          ///< its styles (affine * 1/sqrt(C)) in s
};

/// The resnet skip branch (1x1 conv, no modulation).
struct SkipLayer {
  const LayerPlan* plan = nullptr;
  size_t weight_off = 0;  ///< [Cout, 1, 1, Cin] * weight_gain, in the block's dtype
  /// Where the recipe runs the 1x1 on tensor_core: its filter in that kernel's packing (the same
  /// [Cout, 1, 1, Cin]): fp16 weights, or TF32 heads (rounded to nearest) and, for fp32_strict,
  /// the 3xTF32 tails; 0: none.
  size_t weight_hi_off = 0, weight_lo_off = 0;
};

struct BlockData {
  const BlockPlan* plan = nullptr;
  BlockRecipe recipe;        ///< how it runs (recipe.h)
  DType dtype = DType::f32;  ///< recipe.dtype
  std::optional<ConvLayer> conv0;
  ConvLayer conv1;
  std::optional<TorgbLayer> torgb;
  std::optional<SkipLayer> skip;
};

class DeviceModel {
 public:
  /// Resolves every block's recipe (recipe.h; `batch_invariant`: GeneratorOptions::batch_invariant)
  /// and uploads everything in the layouts its kernels need (synchronizes `stream`). Throws
  /// Error(out_of_memory | device | unsupported).
  DeviceModel(const Model& model, Precision precision, const DeviceCaps& caps, bool batch_invariant, MemoryStats* stats,
              cudaStream_t stream);

  const ModelConfig& config() const { return cfg_; }
  const SynthesisPlan& plan() const { return plan_; }
  const std::vector<BlockData>& blocks() const { return blocks_; }
  /// Whether any convolution's recipe asks cuDNN (batch invariance off): else no cuDNN handle is
  /// made (its libraries' start costs a run a few hundred milliseconds).
  bool uses_cudnn() const;

  /// Device pointer of an arena entry.
  template <typename T = float>
  const T* at(size_t off) const {
    return reinterpret_cast<const T*>(static_cast<const char*>(arena_.get()) + off);
  }
  size_t arena_bytes() const { return arena_.bytes(); }

  // mapping
  int map_in_features() const { return map_in_; }    ///< z_dim + embed_features (c_dim > 0)
  int map_max_features() const { return map_max_; }  ///< widest mapping layer
  struct Fc {
    size_t weight_off, bias_off;
    int in, out;
  };
  const std::vector<Fc>& mapping_fc() const { return fc_; }
  const std::optional<Fc>& embed() const { return embed_; }
  size_t w_avg_off() const { return w_avg_off_; }

  // styles: s [N, s_cols] = affine of every modulated layer in one launch
  int s_cols() const { return s_cols_; }
  size_t affine_weight_off() const { return aff_w_off_; }     ///< [s_cols, w_dim]
  size_t affine_bias_off() const { return aff_b_off_; }       ///< [s_cols]
  size_t affine_rows_off() const { return aff_rows_off_; }    ///< [s_cols] int: ws row
  size_t affine_scale_off() const { return aff_scale_off_; }  ///< [s_cols]: style_gain
  // demodulation
  int dcoef_cols() const { return dcoef_cols_; }
  int num_conv_layers() const { return num_conv_; }
  size_t demod_layers_off() const { return demod_layers_off_; }
  size_t layer_of_output_off() const { return layer_of_output_off_; }
  size_t q_off() const { return q_off_; }
  size_t w_inv_off() const { return w_inv_off_; }
  // misc
  size_t const_off() const { return const_off_; }  ///< synthesis.b4.const [C, 4, 4]
  size_t filter_off() const { return filter_off_; }
  /// The resample filter's 1-D taps (SynthesisPlan::filter1d): the 2-D filter is their outer product.
  size_t filter1d_off() const { return filter1d_off_; }
  int noise_floats_per_sample() const { return noise_per_sample_; }

 private:
  ModelConfig cfg_;
  SynthesisPlan plan_;
  std::vector<BlockData> blocks_;
  DeviceBuffer arena_;
  int map_in_ = 0, map_max_ = 0;
  std::vector<Fc> fc_;
  std::optional<Fc> embed_;
  size_t w_avg_off_ = 0;
  int s_cols_ = 0, dcoef_cols_ = 0, num_conv_ = 0;
  size_t aff_w_off_ = 0, aff_b_off_ = 0, aff_rows_off_ = 0, aff_scale_off_ = 0;
  size_t demod_layers_off_ = 0, layer_of_output_off_ = 0, q_off_ = 0, w_inv_off_ = 0;
  size_t const_off_ = 0, filter_off_ = 0, filter1d_off_ = 0;
  int noise_per_sample_ = 0;
};

}  // namespace sg2::cuda
