// sg2 CUDA backend: the model's weights on the device (device_model.h).
#include "engine/cuda/device_model.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "kernels/ref/parallel.h"
#include "kernels/tc_conv.h"
#include "kernels/tc_tconv.h"

namespace sg2::cuda {

namespace {

constexpr int kColAlign = 8;  // style / coefficient columns of each layer start at multiples of 8

int align_up(int v, int a) { return (v + a - 1) / a * a; }

/// v in `t` (fp32 as is, fp16 rounded to nearest even) as bytes.
std::vector<char> as_bytes(const std::vector<float>& v, DType t) {
  if (t == DType::f32) {
    std::vector<char> b(v.size() * sizeof(float));
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  std::vector<char> b(v.size() * sizeof(__half));
  __half* h = reinterpret_cast<__half*>(b.data());
  for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
  return b;
}

/// The device arena's layout and its entries' host bytes (every entry 256-byte aligned), each kept
/// as its own chunk: no staging copy of the whole arena, each chunk uploaded where it goes.
class ArenaBuilder {
 public:
  size_t add(std::vector<char>&& b) {
    const size_t off = place(b.size());
    if (!b.empty()) chunks_.push_back({off, std::move(b)});
    return off;
  }
  size_t add_bytes(const void* p, size_t n) {
    const size_t off = place(n);
    if (n) {  // built in place (a temporary vector moved in trips GCC 12's -Wfree-nonheap-object)
      chunks_.emplace_back();
      chunks_.back().offset = off;
      chunks_.back().bytes.resize(n);
      std::memcpy(chunks_.back().bytes.data(), p, n);
    }
    return off;
  }
  size_t add(const std::vector<float>& v) { return add_bytes(v.data(), v.size() * sizeof(float)); }
  size_t add(const std::vector<int>& v) { return add_bytes(v.data(), v.size() * sizeof(int)); }
  size_t add(const std::vector<float>& v, DType t) { return add(as_bytes(v, t)); }
  size_t size() const { return size_; }
  /// Zeroes `arena` (size() bytes) and queues every chunk's copy into it on `stream` (the chunks
  /// must live until the stream has run them).
  void upload(void* arena, cudaStream_t stream) const {
    SG2_CUDA_CHECK(cudaMemsetAsync(arena, 0, size_, stream));
    for (const Chunk& c : chunks_)
      SG2_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(arena) + c.offset, c.bytes.data(), c.bytes.size(),
                                     cudaMemcpyHostToDevice, stream));
  }

 private:
  struct Chunk {
    size_t offset = 0;
    std::vector<char> bytes;
  };
  size_t place(size_t n) {
    const size_t off = (size_ + 255) / 256 * 256;
    size_ = off + n;
    return off;
  }
  size_t size_ = 0;
  std::vector<Chunk> chunks_;
};

/// One convolution's filter in every device layout its recipe needs, as bytes (empty: not needed),
/// with its demodulation inputs: made for all layers at once on the CPU's threads, placed in the
/// arena afterwards in layer order (the same bytes at the same offsets as one layer at a time).
struct PackedConv {
  std::vector<char> weight;           // the direct/cuDNN layout in the block's dtype
  std::vector<char> hi, lo;           // the tensor-core kernel's layout (lo: 3xTF32 tails)
  std::vector<char> tconv, tconv_lo;  // the transposed-conv kernel's layout
  std::vector<float> q;               // [Cout, Cin]: sum over taps of W^2 (demodulation)
  std::vector<float> inv;             // [Cout]: the fp16 row scales' inverses (1 in fp32)
  std::exception_ptr error;           // what packing it threw, rethrown in layer order
};

/// Packs conv layer `l` of `model` (its weight [Cout, Cin, 3, 3]) for `choice` in `recipe`'s dtype
/// and math. Throws Error(unsupported) for a kernel size other than 3x3.
PackedConv pack_conv(const Model& model, const LayerPlan& l, const BlockRecipe& recipe, const ConvChoice& choice) {
  PackedConv p;
  const DType dt = recipe.dtype;
  const Tensor& Wt = model.at(l.name + ".weight");  // [Cout, Cin, k, k]
  const int O = l.out_channels, I = l.in_channels, K = static_cast<int>(Wt.dim(2) * Wt.dim(3));
  if (Wt.dim(2) != 3 || Wt.dim(3) != 3) fail(ErrorKind::unsupported, l.name, ": only 3x3 convolutions are supported");
  const float* W = Wt.data();
  // fp16: rows scaled by 1 / (sqrt(Cin k^2) max|W[o]|) (spec §3.3); the inverse goes to dcoefs.
  std::vector<float> scale(static_cast<size_t>(O), 1.0f);
  p.inv.assign(static_cast<size_t>(O), 1.0f);
  p.q.resize(static_cast<size_t>(O) * I);
  for (int o = 0; o < O; ++o) {
    float mx = 0.0f;
    for (int i = 0; i < I; ++i) {
      double sq = 0;
      for (int k = 0; k < K; ++k) {
        const float v = W[(int64_t(o) * I + i) * K + k];
        sq += double(v) * double(v);
        mx = std::max(mx, std::fabs(v));
      }
      p.q[size_t(o) * I + i] = static_cast<float>(sq);
    }
    if (dt == DType::f16 && mx > 0.0f) {
      const float fan = static_cast<float>(std::sqrt(double(I) * K));
      scale[size_t(o)] = 1.0f / fan / mx;
      p.inv[size_t(o)] = fan * mx;
    }
  }
  std::vector<float> dev(static_cast<size_t>(O) * I * K);
  for (int o = 0; o < O; ++o)
    for (int i = 0; i < I; ++i)
      for (int k = 0; k < K; ++k) {
        const float v = W[(int64_t(o) * I + i) * K + k] * scale[size_t(o)];
        const size_t idx = l.up == 2 ? (size_t(i) * K + k) * O + o   // [Cin, k, k, Cout]
                                     : (size_t(o) * K + k) * I + i;  // [Cout, k, k, Cin]
        dev[idx] = v;
      }
  p.weight = as_bytes(dev, dt);
  if (K == 9 && choice.needs(ConvImpl::tensor_core)) {
    // the tensor-core kernel's layout, [Cout, 3, 3, Cin] for both kinds: 3xTF32 hi and lo, TF32
    // hi (rounded to nearest), or the fp16 weights
    std::vector<float> hi(dev.size()), lo(dev.size());
    if (recipe.math == ConvMath::fp16) {
      tc_pack_weights(dev.data(), I, O, l.up == 2, hi.data());
      p.hi = as_bytes(hi, DType::f16);
    } else {
      tf32x3_pack_weights(dev.data(), I, O, l.up == 2, hi.data(), lo.data());
      p.hi = as_bytes(hi, DType::f32);
      if (recipe.math == ConvMath::fp32_strict) p.lo = as_bytes(lo, DType::f32);
    }
  }
  if (K == 9 && l.up == 2 && choice.needs(ConvImpl::tc_transposed)) {
    // the transposed-conv kernel's layout: fp16, or TF32 heads (rounded to nearest), and for
    // 3xTF32 (32-channel phase tiles) the tails
    const bool x3 = recipe.math == ConvMath::fp32_strict;
    std::vector<float> packed(dev.size());
    tc_tconv_pack_weights(dev.data(), I, O, packed.data(), x3);
    if (recipe.math == ConvMath::fp16) {
      p.tconv = as_bytes(packed, DType::f16);
    } else {
      std::vector<float> hi(dev.size()), lo(dev.size());
      tf32x3_split_weights(packed.data(), packed.size(), hi.data(), lo.data());
      p.tconv = as_bytes(hi, DType::f32);
      if (x3) p.tconv_lo = as_bytes(lo, DType::f32);
    }
  }
  return p;
}

}  // namespace

DeviceModel::DeviceModel(const Model& model, Precision precision, const DeviceCaps& caps, bool batch_invariant,
                         MemoryStats* stats, cudaStream_t stream)
    : cfg_(model.config), plan_(make_synthesis_plan(model.config)) {
  const std::vector<BlockRecipe> recipes = make_recipes(plan_, cfg_.img_channels, precision, caps, batch_invariant);
  ArenaBuilder ar;
  const int w_dim = cfg_.w_dim;

  // --- mapping
  if (cfg_.c_dim > 0) {
    const Tensor& w = model.at("mapping.embed.weight");
    embed_ = Fc{ar.add(w.vec()), ar.add(model.at("mapping.embed.bias").vec()), static_cast<int>(w.dim(1)),
                static_cast<int>(w.dim(0))};
  }
  map_in_ = cfg_.z_dim + (cfg_.c_dim > 0 ? cfg_.mapping.embed_features : 0);
  map_max_ = map_in_;
  for (int i = 0; i < cfg_.mapping.num_layers; ++i) {
    const std::string p = "mapping.fc" + std::to_string(i);
    const Tensor& w = model.at(p + ".weight");
    fc_.push_back(Fc{ar.add(w.vec()), ar.add(model.at(p + ".bias").vec()), static_cast<int>(w.dim(1)),
                     static_cast<int>(w.dim(0))});
    map_max_ = std::max(map_max_, static_cast<int>(w.dim(0)));
  }
  w_avg_off_ = ar.add(model.at("mapping.w_avg").vec());

  // --- synthesis layers: columns, weights in device layouts
  std::vector<float> aff_w, aff_b, aff_scale;
  std::vector<int> aff_rows;
  std::vector<DemodLayer> demod;
  std::vector<int> layer_of_output;
  std::vector<float> q_all, w_inv_all;
  auto add_style_columns = [&](const LayerPlan& l, int cin) {
    const int col = s_cols_;
    const int width = align_up(cin, kColAlign);
    const Tensor& aw = model.at(l.name + ".affine.weight");
    const Tensor& ab = model.at(l.name + ".affine.bias");
    aff_w.resize(static_cast<size_t>(col + width) * w_dim, 0.0f);
    std::copy(aw.vec().begin(), aw.vec().end(), aff_w.begin() + static_cast<int64_t>(col) * w_dim);
    aff_b.resize(static_cast<size_t>(col + width), 0.0f);
    std::copy(ab.vec().begin(), ab.vec().end(), aff_b.begin() + col);
    aff_rows.resize(static_cast<size_t>(col + width), l.w_index);
    aff_scale.resize(static_cast<size_t>(col + width), l.style_gain);
    s_cols_ += width;
    return col;
  };
  // Every conv layer's filter packed at once, on the CPU's threads (the largest part of a model's
  // start: 0.6 s for ffhq1024 on one thread), then placed in layer order below.
  struct ConvJob {
    const LayerPlan* layer;
    const BlockRecipe* recipe;
    const ConvChoice* choice;
  };
  std::vector<ConvJob> jobs;
  for (size_t bi = 0; bi < plan_.blocks.size(); ++bi) {
    const BlockPlan& b = plan_.blocks[bi];
    if (b.conv0) jobs.push_back({&*b.conv0, &recipes[bi], &recipes[bi].conv0});
    jobs.push_back({&b.conv1, &recipes[bi], &recipes[bi].conv1});
  }
  std::vector<PackedConv> packed(jobs.size());
  ref::parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j) {
    const ConvJob& job = jobs[size_t(j)];
    try {
      packed[size_t(j)] = pack_conv(model, *job.layer, *job.recipe, *job.choice);
    } catch (...) {
      packed[size_t(j)].error = std::current_exception();
    }
  });
  size_t next_packed = 0;
  auto make_conv = [&](const LayerPlan& l, const BlockRecipe& recipe) {
    PackedConv& pc = packed.at(next_packed++);
    if (pc.error) std::rethrow_exception(pc.error);
    const DType dt = recipe.dtype;
    ConvLayer c;
    c.plan = &l;
    c.dtype = dt;
    c.math = recipe.math;
    const int O = l.out_channels, I = l.in_channels;
    const std::vector<float>& q = pc.q;
    const std::vector<float>& inv = pc.inv;
    c.weight_off = ar.add(std::move(pc.weight));
    if (!pc.hi.empty()) c.weight_hi_off = ar.add(std::move(pc.hi));
    if (!pc.lo.empty()) c.weight_lo_off = ar.add(std::move(pc.lo));
    if (!pc.tconv.empty()) c.weight_tconv_off = ar.add(std::move(pc.tconv));
    if (!pc.tconv_lo.empty()) c.weight_tconv_lo_off = ar.add(std::move(pc.tconv_lo));
    c.bias_off = ar.add(model.at(l.name + ".bias").vec());
    if (l.noise_index >= 0) {
      c.noise_const_off = ar.add(model.at(l.name + ".noise_const").vec());
      c.noise_strength = model.at(l.name + ".noise_strength")[0];
      c.noise_offset = noise_per_sample_;
      noise_per_sample_ += l.height * l.width;
    }
    c.s_col = add_style_columns(l, I);
    c.dcoef_col = dcoef_cols_;
    c.demod_index = static_cast<int>(demod.size());
    DemodLayer d;
    d.s_offset = c.s_col;
    d.in_channels = I;
    d.dcoef_offset = c.dcoef_col;
    d.out_channels = O;
    d.q_offset = static_cast<int64_t>(q_all.size());
    d.fp16 = dt == DType::f16 ? 1 : 0;
    demod.push_back(d);
    q_all.insert(q_all.end(), q.begin(), q.end());
    const int width = align_up(O, kColAlign);
    w_inv_all.resize(static_cast<size_t>(dcoef_cols_ + width), 1.0f);
    std::copy(inv.begin(), inv.end(), w_inv_all.begin() + dcoef_cols_);
    layer_of_output.resize(static_cast<size_t>(dcoef_cols_ + width), c.demod_index);
    dcoef_cols_ += width;
    return c;
  };

  for (size_t bi = 0; bi < plan_.blocks.size(); ++bi) {
    const BlockPlan& b = plan_.blocks[bi];
    BlockData bd;
    bd.plan = &b;
    bd.recipe = recipes[bi];
    bd.dtype = bd.recipe.dtype;
    if (b.conv0) bd.conv0 = make_conv(*b.conv0, bd.recipe);  // in the order of `jobs`
    bd.conv1 = make_conv(b.conv1, bd.recipe);
    if (b.torgb) {
      TorgbLayer t;
      t.plan = &*b.torgb;
      t.weight_off = ar.add(model.at(b.torgb->name + ".weight").vec());  // [img_channels, C, 1, 1]
      t.bias_off = ar.add(model.at(b.torgb->name + ".bias").vec());
      t.s_col = add_style_columns(*b.torgb, b.torgb->in_channels);
      bd.torgb = t;
    }
    if (b.skip) {
      SkipLayer s;
      s.plan = &*b.skip;
      std::vector<float> w = model.at(b.skip->name + ".weight").vec();  // [Cout, Cin, 1, 1] == KRSC
      for (float& v : w) v = v * b.skip->weight_gain;
      s.weight_off = ar.add(w, bd.dtype);
      if (bd.recipe.skip.needs(ConvImpl::tensor_core)) {
        if (bd.recipe.math == ConvMath::fp16) {
          s.weight_hi_off = ar.add(w, DType::f16);
        } else {
          std::vector<float> hi(w.size()), lo(w.size());
          tf32x3_split_weights(w.data(), w.size(), hi.data(), lo.data());
          s.weight_hi_off = ar.add(hi);
          if (bd.recipe.math == ConvMath::fp32_strict) s.weight_lo_off = ar.add(lo);
        }
      }
      bd.skip = s;
    }
    blocks_.push_back(std::move(bd));
  }
  num_conv_ = static_cast<int>(demod.size());
  aff_w_off_ = ar.add(aff_w);
  aff_b_off_ = ar.add(aff_b);
  aff_rows_off_ = ar.add(aff_rows);
  aff_scale_off_ = ar.add(aff_scale);
  demod_layers_off_ = ar.add_bytes(demod.data(), demod.size() * sizeof(DemodLayer));
  layer_of_output_off_ = ar.add(layer_of_output);
  q_off_ = ar.add(q_all);
  w_inv_off_ = ar.add(w_inv_all);
  const_off_ = ar.add(model.at("synthesis.b4.const").vec());
  filter_off_ = ar.add(plan_.filter);
  filter1d_off_ = ar.add(plan_.filter1d);

  arena_ = DeviceBuffer(ar.size(), stats);
  ar.upload(arena_.get(), stream);
  SG2_CUDA_CHECK(cudaStreamSynchronize(stream));  // before the chunks go
}

bool DeviceModel::uses_cudnn() const {
  for (const BlockData& b : blocks_) {
    const BlockRecipe& r = b.recipe;
    if (!r.fused_conv1 && r.conv1.needs(ConvImpl::cudnn)) return true;
    if (b.conv0 && r.conv0.needs(ConvImpl::cudnn)) return true;
    if (b.skip && r.skip.needs(ConvImpl::cudnn)) return true;
  }
  return false;
}

}  // namespace sg2::cuda
