// sg2 CUDA backend: the plan executor for one batch size (executor.h).
#include "engine/cuda/executor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "kernels/conv_epilogue.h"
#include "kernels/demodulate.h"
#include "kernels/fully_connected.h"
#include "kernels/fused_conv_f16.h"
#include "kernels/modulate.h"
#include "kernels/upconv_epilogue.h"
#include "kernels/upfirdn2d.h"
#include "util/trace.h"

namespace sg2::cuda {

namespace {
float clamp_of(const LayerPlan& l) { return l.clamp ? *l.clamp : -1.0f; }
size_t sz(int64_t n, DType t) { return static_cast<size_t>(n) * dtype_size(t); }
}  // namespace

// --- mapping ------------------------------------------------------------------------------

MappingBuffers::MappingBuffers(const DeviceModel& m, int n, MemoryStats* stats) : N(n) {
  const ModelConfig& cfg = m.config();
  z = DeviceBuffer(sz(int64_t(N) * std::max(cfg.z_dim, 1), DType::f32), stats);
  c = DeviceBuffer(sz(int64_t(N) * std::max(cfg.c_dim, 1), DType::f32), stats);
  x0 = DeviceBuffer(sz(int64_t(N) * m.map_in_features(), DType::f32), stats);
  e = DeviceBuffer(sz(int64_t(N) * std::max(cfg.mapping.embed_features, 1), DType::f32), stats);
  a = DeviceBuffer(sz(int64_t(N) * m.map_max_features(), DType::f32), stats);
  b = DeviceBuffer(sz(int64_t(N) * m.map_max_features(), DType::f32), stats);
}

void run_mapping(const DeviceModel& m, MappingBuffers& b, float psi, int cutoff, float* ws, cudaStream_t s,
                 const std::function<void(int, const float*, int)>& after_fc) {
  const ModelConfig& cfg = m.config();
  const int N = b.N, F0 = m.map_in_features();
  if (cfg.z_dim > 0) normalize_2nd_moment(b.z.as<float>(), N, cfg.z_dim, b.x0.as<float>(), F0, 0, 1e-8f, s);
  if (cfg.c_dim > 0) {
    const auto& em = *m.embed();
    FcArgs e;
    e.N = N;
    e.in_features = em.in;
    e.out_features = em.out;
    e.x = b.c.as<float>();
    e.x_stride_n = cfg.c_dim;
    e.weight = m.at(em.weight_off);
    e.weight_gain = static_cast<float>(1.0 / std::sqrt(double(cfg.c_dim)));
    e.bias = m.at(em.bias_off);
    e.y = b.e.as<float>();
    fully_connected(e, s);
    normalize_2nd_moment(b.e.as<float>(), N, em.out, b.x0.as<float>(), F0, cfg.z_dim, 1e-8f, s);
  }
  FcAct act = FcAct::lrelu;
  float act_gain = static_cast<float>(std::sqrt(2.0));  // bias_act's def_gain of lrelu and relu
  switch (cfg.mapping.activation) {
    case Activation::linear:
      act = FcAct::linear;
      act_gain = 1.0f;
      break;
    case Activation::relu:
      act = FcAct::relu;
      break;
    case Activation::lrelu:
      break;
  }
  const float lr = cfg.mapping.lr_multiplier;
  const float* x = b.x0.as<float>();
  int width = F0;
  for (size_t i = 0; i < m.mapping_fc().size(); ++i) {
    const auto& fc = m.mapping_fc()[i];
    float* out = (i % 2 == 0 ? b.a : b.b).as<float>();
    FcArgs f;
    f.N = N;
    f.in_features = fc.in;
    f.out_features = fc.out;
    f.x = x;
    f.x_stride_n = width;
    f.weight = m.at(fc.weight_off);
    f.weight_gain = static_cast<float>(double(lr) / std::sqrt(double(fc.in)));
    f.bias = m.at(fc.bias_off);
    f.bias_gain = lr;
    f.act = act;
    f.act_gain = act_gain;
    f.y = out;
    fully_connected(f, s);
    x = out;
    width = fc.out;
    if (after_fc) after_fc(static_cast<int>(i), out, width);
  }
  truncate_broadcast(x, m.at(m.w_avg_off()), N, cfg.num_ws, cfg.w_dim, psi, cutoff, ws, s);
}

// --- executor -----------------------------------------------------------------------------

Executor::Executor(const DeviceModel& m, int N, cudnnHandle_t cudnn, const DeviceCaps& caps, MemoryStats* stats,
                   cudaStream_t stream, size_t workspace_limit)
    : m_(m), N_(N), caps_(caps), stats_(stats), mapping_(m, N, stats) {
  const ModelConfig& cfg = m.config();
  const auto& blocks = m.blocks();
  size_t act_bytes = 0, skip_in_bytes = 0, residual_bytes = 0, dump_bytes = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockData& bd = blocks[i];
    const BlockPlan& b = *bd.plan;
    const int64_t H = b.height, W = b.width, C = b.out_channels;  // H == W unless non-square
    const DType D = bd.dtype;
    act_bytes = std::max(act_bytes, sz(N * H * W * C, D));
    if (b.in_channels != 0) {
      const int64_t h = H / 2, w = W / 2, Cin = b.in_channels;
      act_bytes = std::max(act_bytes, sz(N * h * w * Cin, D));
      act_bytes = std::max(act_bytes, sz(N * (H + 1) * (W + 1) * C, D));  // the transposed conv's output
      if (bd.skip) {
        act_bytes = std::max(act_bytes, sz(N * h * w * C, D));  // the skip conv's output
        residual_bytes = std::max(residual_bytes, sz(N * H * W * C, DType::f32));
        skip_in_bytes = std::max(skip_in_bytes, sz(N * h * w * Cin, D));
      }
    }
    dump_bytes = std::max(dump_bytes, sz(N * H * W * C, DType::f32));
  }
  // The two activation buffers trade roles after a fused conv1: one size for both.
  const size_t img_bytes = sz(int64_t(N) * cfg.img_channels * cfg.height() * cfg.width(), DType::f32);
  ws_ = DeviceBuffer(sz(int64_t(N) * cfg.num_ws * cfg.w_dim, DType::f32), stats);
  styles_ = DeviceBuffer(sz(int64_t(N) * m.s_cols(), DType::f32), stats);
  input_scales_ = DeviceBuffer(sz(int64_t(N) * m.s_cols(), DType::f32), stats);
  style_max_ = DeviceBuffer(sz(int64_t(N) * std::max(m.num_conv_layers(), 1), DType::f32), stats);
  dcoefs_ = DeviceBuffer(sz(int64_t(N) * m.dcoef_cols(), DType::f32), stats);
  act_a_ = DeviceBuffer(act_bytes, stats);
  act_b_ = DeviceBuffer(act_bytes, stats);
  if (skip_in_bytes) skip_in_ = DeviceBuffer(skip_in_bytes, stats);
  if (residual_bytes) residual_ = DeviceBuffer(residual_bytes, stats);
  img_[0] = DeviceBuffer(img_bytes, stats);
  img_[1] = DeviceBuffer(img_bytes, stats);
  dump_bytes_ = dump_bytes;
  SG2_CUDA_CHECK(cudaMemsetAsync(input_scales_.get(), 0, input_scales_.bytes(), stream));
  SG2_CUDA_CHECK(cudaMemsetAsync(act_a_.get(), 0, act_a_.bytes(), stream));
  SG2_CUDA_CHECK(cudaMemsetAsync(act_b_.get(), 0, act_b_.bytes(), stream));
  if (skip_in_) SG2_CUDA_CHECK(cudaMemsetAsync(skip_in_.get(), 0, skip_in_.bytes(), stream));

  // Convolutions: candidates, one workspace for all, then the implementation of each.
  convs_.resize(blocks.size());
  size_t workspace_need = 0;
  auto make = [&](const ConvShape& shape, ConvMath math, const ConvChoice& choice) {
    auto c = std::make_unique<Conv>(cudnn, shape, math, choice, caps, workspace_limit);
    workspace_need = std::max(workspace_need, c->max_candidate_workspace());
    return c;
  };
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockData& bd = blocks[i];
    const BlockPlan& b = *bd.plan;
    const int H = b.height, W = b.width, C = b.out_channels;
    ConvShape c1;
    c1.N = N;
    c1.H = H;
    c1.W = W;
    c1.Cin = C;
    c1.Cout = C;
    c1.dtype = bd.dtype;
    if (!bd.recipe.fused_conv1) convs_[i].conv1 = make(c1, bd.conv1.math, bd.recipe.conv1);
    if (bd.conv0) {
      ConvShape c0;
      c0.N = N;
      c0.H = H / 2;
      c0.W = W / 2;
      c0.Cin = b.in_channels;
      c0.Cout = C;
      c0.transposed = true;
      c0.pad = 0;
      c0.dtype = bd.dtype;
      if (c0.out_h() != H + 1 || c0.out_w() != W + 1) fail(ErrorKind::internal, "transposed conv size");
      convs_[i].conv0 = make(c0, bd.conv0->math, bd.recipe.conv0);
    }
    if (bd.skip) {
      ConvShape sk;
      sk.N = N;
      sk.H = H / 2;
      sk.W = W / 2;
      sk.Cin = b.in_channels;
      sk.Cout = C;
      sk.k = 1;
      sk.pad = 0;
      sk.dtype = bd.dtype;
      convs_[i].skip = make(sk, bd.conv1.math, bd.recipe.skip);
    }
  }
  workspace_ = DeviceBuffer(workspace_need, stats);
  size_t workspace_used = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockData& bd = blocks[i];
    auto select = [&](Conv* c, const void* x, size_t w_off, void* y, const ConvLayer* l = nullptr) {
      if (!c) return;
      if (l && l->weight_hi_off)
        c->set_packed_weights(m.at<char>(l->weight_hi_off), l->weight_lo_off ? m.at(l->weight_lo_off) : nullptr);
      if (l && l->weight_tconv_off)
        c->set_tconv_weights(m.at<char>(l->weight_tconv_off),
                             l->weight_tconv_lo_off ? m.at(l->weight_tconv_lo_off) : nullptr);
      c->select(x, m.at<char>(w_off), y, workspace_.get(), workspace_.bytes(), stream);
      workspace_used = std::max(workspace_used, c->workspace());
    };
    select(convs_[i].conv1.get(), act_a_.get(), bd.conv1.weight_off, act_b_.get(), &bd.conv1);
    if (bd.conv0) select(convs_[i].conv0.get(), act_a_.get(), bd.conv0->weight_off, act_b_.get(), &*bd.conv0);
    if (bd.skip) {
      if (bd.skip->weight_hi_off)
        convs_[i].skip->set_packed_weights(m.at<char>(bd.skip->weight_hi_off),
                                           bd.skip->weight_lo_off ? m.at(bd.skip->weight_lo_off) : nullptr);
      select(convs_[i].skip.get(), skip_in_.get(), bd.skip->weight_off, act_b_.get());
    }
  }
  if (workspace_used < workspace_.bytes()) {
    workspace_.release();
    workspace_ = DeviceBuffer(workspace_used, stats);
  }
  SG2_CUDA_CHECK(cudaStreamSynchronize(stream));
}

float* Executor::noise_maps() {
  if (!noise_) noise_ = DeviceBuffer(sz(int64_t(N_) * std::max(m_.noise_floats_per_sample(), 1), DType::f32), stats_);
  return noise_.as<float>();
}

size_t Executor::bytes() const {
  size_t t = ws_.bytes() + styles_.bytes() + input_scales_.bytes() + style_max_.bytes() + dcoefs_.bytes() +
             act_a_.bytes() + act_b_.bytes() + skip_in_.bytes() + residual_.bytes() + img_[0].bytes() +
             img_[1].bytes() + noise_.bytes() + workspace_.bytes() + dump_.bytes();
  t += mapping_.z.bytes() + mapping_.c.bytes() + mapping_.x0.bytes() + mapping_.e.bytes() + mapping_.a.bytes() +
       mapping_.b.bytes();
  return t;
}

std::vector<std::string> Executor::conv_descriptions() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < convs_.size(); ++i) {
    const std::string b = "b" + std::to_string(m_.blocks()[i].plan->resolution);
    if (convs_[i].skip) out.push_back(b + ".skip: " + convs_[i].skip->describe());
    if (convs_[i].conv0) out.push_back(b + ".conv0: " + convs_[i].conv0->describe());
    const std::string c1 =
        m_.blocks()[i].recipe.fused_conv1 ? "fused fp16 conv1 + epilogue kernel" : convs_[i].conv1->describe();
    out.push_back(b + ".conv1: " + c1);
  }
  return out;
}

// --- the program, emitted block by block ---------------------------------------------------

void Executor::noise_of(const Emit& e, const ConvLayer& c, const float** ptr, int64_t* stride, float* strength) {
  *ptr = nullptr;
  *stride = 0;
  *strength = c.noise_strength;
  if (c.plan->noise_index < 0 || e.noise == NoiseKind::none) return;
  if (e.noise == NoiseKind::constant) {
    *ptr = m_.at(c.noise_const_off);
  } else {
    *ptr = noise_maps() + c.noise_offset;
    *stride = m_.noise_floats_per_sample();
  }
}

/// The styles of every modulated layer (one launch), then their demodulation coefficients and
/// input scales (kernels/demodulate.h).
void Executor::emit_styles(Emit& e) {
  const ModelConfig& cfg = m_.config();
  FcArgs aff;
  aff.N = N_;
  aff.in_features = cfg.w_dim;
  aff.out_features = m_.s_cols();
  aff.x = ws_.as<float>();
  aff.x_stride_n = int64_t(cfg.num_ws) * cfg.w_dim;
  aff.rows = m_.at<int>(m_.affine_rows_off());
  aff.x_stride_row = cfg.w_dim;
  aff.weight = m_.at(m_.affine_weight_off());
  aff.weight_gain = static_cast<float>(1.0 / std::sqrt(double(cfg.w_dim)));
  aff.bias = m_.at(m_.affine_bias_off());
  aff.out_scale = m_.at(m_.affine_scale_off());
  aff.y = styles_.as<float>();
  e.steps.push_back({[aff](cudaStream_t st) { fully_connected(aff, st); }, "affine (all layers)"});
  DemodArgs da;
  da.N = N_;
  da.num_layers = m_.num_conv_layers();
  da.layers = m_.at<DemodLayer>(m_.demod_layers_off());
  da.total_out = m_.dcoef_cols();
  da.layer_of_output = m_.at<int>(m_.layer_of_output_off());
  da.s = styles_.as<float>();
  da.s_stride = m_.s_cols();
  da.q = m_.at(m_.q_off());
  da.w_inv = m_.at(m_.w_inv_off());
  da.s_in = input_scales_.as<float>();
  da.smax = style_max_.as<float>();
  da.dcoefs = dcoefs_.as<float>();
  e.steps.push_back({[da](cudaStream_t st) { demodulate(da, st); }, "demodulate (all layers)"});
}

/// b4: the const input, scaled by conv1's input scales.
void Executor::emit_const(Emit& e, size_t block) {
  const BlockData& bd = m_.blocks()[block];
  const float* k = m_.at(m_.const_off());
  const float* scales = input_scales_.as<float>() + bd.conv1.s_col;
  const int C = bd.plan->out_channels, S = m_.s_cols(), N = N_, H = bd.plan->height, W = bd.plan->width;
  const DType D = bd.dtype;
  void* out = e.act;
  e.steps.push_back({[=](cudaStream_t st) { modulate_const(k, C, H, W, scales, S, N, D, out, st); },
                     "b" + std::to_string(bd.plan->resolution) + ".const"});
}

/// resnet: the skip branch — 1x1 conv of the unscaled block input, FIR up-sampling, gain — into
/// residual_ (added by conv1's epilogue).
void Executor::emit_skip(Emit& e, size_t block) {
  const BlockData& bd = m_.blocks()[block];
  const Conv* conv = convs_[block].skip.get();
  const void* w = m_.at<char>(bd.skip->weight_off);
  const void* in = skip_in_.get();
  void* tmp = e.conv_out;
  float* out = residual_.as<float>();
  const float* filter = m_.at(m_.filter_off());
  const int fsize = m_.plan().filter_size, N = N_, C = bd.plan->out_channels, h = bd.plan->height / 2,
            w2 = bd.plan->width / 2;
  const float gain = bd.skip->plan->act_gain;
  const DType D = bd.dtype;
  void* wsp = workspace_.get();
  const size_t wsb = workspace_.bytes();
  e.steps.push_back({[=](cudaStream_t st) {
                       conv->run(in, w, tmp, wsp, wsb, st);
                       upsample2d_nhwc(tmp, D, N, h, w2, C, filter, fsize, gain, out, st);
                     },
                     "b" + std::to_string(bd.plan->resolution) + ".skip"});
}

/// conv0: the stride-2 transposed conv, then the FIR + noise + bias + act epilogue, which writes
/// the activation scaled for conv1 (kernels/upconv_epilogue.h).
void Executor::emit_conv0(Emit& e, size_t block) {
  const BlockData& bd = m_.blocks()[block];
  const BlockPlan& b = *bd.plan;
  const ConvLayer& c0 = *bd.conv0;
  const std::string tag = "b" + std::to_string(b.resolution);
  {
    const Conv* conv = convs_[block].conv0.get();
    const void* w = m_.at<char>(c0.weight_off);
    const void* x = e.act;
    void* y = e.conv_out;
    void* wsp = workspace_.get();
    const size_t wsb = workspace_.bytes();
    e.steps.push_back({[=](cudaStream_t st) { conv->run(x, w, y, wsp, wsb, st); }, tag + ".conv0"});
  }
  const int fsize = m_.plan().filter_size;
  UpEpilogueArgs u;
  u.N = N_;
  u.H = b.height;
  u.W = b.width;
  u.C = b.out_channels;
  u.TH = b.height + 1;
  u.TW = b.width + 1;
  u.pad0 = (fsize + 1) / 2 - 1;
  if (u.TH + u.pad0 + (fsize - 2) / 2 - fsize + 1 != b.height)
    fail(ErrorKind::unsupported, "a resample filter of ", fsize, " taps is not supported by the CUDA backend");
  u.t_dtype = bd.dtype;
  u.t = e.conv_out;
  u.filter = m_.at(m_.filter_off());
  u.fsize = fsize;
  u.filter1d = bd.recipe.separable_upconv ? m_.at(m_.filter1d_off()) : nullptr;
  u.dcoefs = dcoefs_.as<float>() + c0.dcoef_col;
  u.dcoefs_stride = m_.dcoef_cols();
  noise_of(e, c0, &u.noise, &u.noise_stride_n, &u.noise_strength);
  u.bias = m_.at(c0.bias_off);
  u.lrelu = true;
  u.gain = c0.plan->act_gain;
  u.clamp = clamp_of(*c0.plan);
  u.out_dtype = bd.dtype;
  u.out = e.act;
  u.out_scale = input_scales_.as<float>() + bd.conv1.s_col;
  u.out_scale_stride = m_.s_cols();
  u.num_sms = caps_.sm_count;
  e.steps.push_back({[u](cudaStream_t st) { upconv_epilogue(u, st); }, tag + ".conv0.epilogue"});
}

/// conv1 and its epilogue (demodulation, noise, bias, act, the residual, the next layer's input
/// scales) with the block's ToRGB and skip image riding on it: one fused kernel where the recipe
/// says so (the output then lives in the other activation buffer), else the convolution and
/// kernels/conv_epilogue.h.
void Executor::emit_conv1(Emit& e, size_t block) {
  const ModelConfig& cfg = m_.config();
  const auto& blocks = m_.blocks();
  const BlockData& bd = blocks[block];
  const BlockPlan& b = *bd.plan;
  const BlockData* next = block + 1 < blocks.size() ? &blocks[block + 1] : nullptr;
  const std::string tag = "b" + std::to_string(b.resolution);
  EpilogueArgs ep;
  ep.N = N_;
  ep.H = b.height;
  ep.W = b.width;
  ep.C = b.out_channels;
  ep.num_sms = caps_.sm_count;
  ep.y_dtype = bd.dtype;
  ep.y = e.conv_out;
  ep.dcoefs = dcoefs_.as<float>() + bd.conv1.dcoef_col;
  ep.dcoefs_stride = m_.dcoef_cols();
  noise_of(e, bd.conv1, &ep.noise, &ep.noise_stride_n, &ep.noise_strength);
  ep.bias = m_.at(bd.conv1.bias_off);
  ep.lrelu = true;
  ep.gain = bd.conv1.plan->act_gain;
  ep.clamp = clamp_of(*bd.conv1.plan);
  ep.residual = bd.skip ? residual_.as<float>() : nullptr;
  ep.out_dtype = bd.recipe.out_dtype;
  if (next) {
    ep.out = bd.recipe.fused_conv1 ? e.conv_out : e.act;
    ep.out_scale = input_scales_.as<float>() + next->conv0->s_col;
    ep.out_scale_stride = m_.s_cols();
    if (next->skip) ep.raw = skip_in_.get();
  }
  if (e.for_dump && !ep.raw) ep.raw = dump_.get();
  if (bd.torgb) {
    const TorgbLayer& t = *bd.torgb;
    ep.img_channels = cfg.img_channels;
    ep.rgb_weight = m_.at(t.weight_off);
    ep.rgb_styles = styles_.as<float>() + t.s_col;
    ep.rgb_styles_stride = m_.s_cols();
    ep.rgb_bias = m_.at(t.bias_off);
    ep.rgb_clamp = clamp_of(*t.plan);
    const int dst = e.img_cur == 0 ? 1 : 0;
    ep.img_prev =
        m_.plan().architecture == Architecture::skip && e.img_cur >= 0 ? img_[e.img_cur].as<float>() : nullptr;
    ep.img = img_[dst].as<float>();
    ep.filter = m_.at(m_.filter_off());
    ep.fsize = m_.plan().filter_size;
    e.img_cur = dst;
  }
  Step st;
  if (bd.recipe.fused_conv1) {
    // conv1, its epilogue and ToRGB in one kernel: the conv output never goes to memory; the
    // activation lands in the other buffer, so the two trade roles.
    if (!fused_conv_f16_supports(ep, caps_.smem_per_block_optin))
      fail(ErrorKind::internal, tag, ": the recipe fuses conv1, but the fused kernel refuses its arguments");
    const void* w = m_.at<char>(bd.conv1.weight_off);
    const void* x = e.act;
    const size_t smem = caps_.smem_per_block_optin;
    st = Step{[ep, x, w, smem](cudaStream_t s) { fused_conv_f16(x, w, ep, smem, s); },
              tag + ".conv1+epilogue" + (bd.torgb ? "+torgb" : "") + " (fused)"};
    std::swap(e.act, e.conv_out);
  } else {
    const Conv* conv = convs_[block].conv1.get();
    const void* w = m_.at<char>(bd.conv1.weight_off);
    const void* x = e.act;
    void* y = e.conv_out;
    void* wsp = workspace_.get();
    const size_t wsb = workspace_.bytes();
    e.steps.push_back({[=](cudaStream_t s) { conv->run(x, w, y, wsp, wsb, s); }, tag + ".conv1"});
    st = Step{[ep](cudaStream_t s) { conv_epilogue(ep, s); }, tag + ".conv1.epilogue" + (bd.torgb ? "+torgb" : "")};
  }
  if (e.for_dump) {
    st.dump_block = static_cast<int>(block);
    dump_x_.resize(blocks.size());
    dump_x_[block] = {ep.raw, ep.out_dtype,
                      bd.torgb ? ep.img : (e.img_cur >= 0 ? img_[e.img_cur].as<float>() : nullptr)};
  }
  e.steps.push_back(std::move(st));
}

std::vector<Executor::Step> Executor::program(const ProgramKey& key, bool for_dump) {
  if (for_dump && !dump_) dump_ = DeviceBuffer(dump_bytes_, stats_);
  Emit e{key.noise, for_dump, {}, act_a_.get(), act_b_.get(), -1};
  if (key.with_mapping)
    e.steps.push_back(
        {[this](cudaStream_t st) { run_mapping(m_, mapping_, 1.0f, m_.config().num_ws, ws_.as<float>(), st); },
         "mapping"});
  emit_styles(e);
  for (size_t i = 0; i < m_.blocks().size(); ++i) {
    const BlockData& bd = m_.blocks()[i];
    if (bd.plan->in_channels == 0) {
      emit_const(e, i);
    } else {
      if (bd.skip) emit_skip(e, i);
      emit_conv0(e, i);
    }
    emit_conv1(e, i);
  }
  final_img_ = img_[e.img_cur < 0 ? 0 : e.img_cur].as<float>();
  return std::move(e.steps);
}

void Executor::run_steps(const std::vector<Step>& steps, cudaStream_t s, const BlockDumpFn* dump) {
  for (const Step& st : steps) {
    try {
      st.fn(s);
    } catch (const Error& e) {  // a launch failure or out of memory: name the device and the layer (same kind)
      fail(e.kind(), "cuda:", caps_.index, ", ", st.name, " (batch ", N_, "): ", e.what());
    }
    if (dump && *dump && st.dump_block >= 0) {
      SG2_CUDA_CHECK(cudaStreamSynchronize(s));
      const BlockData& bd = m_.blocks()[static_cast<size_t>(st.dump_block)];
      const DumpTarget& t = dump_x_[static_cast<size_t>(st.dump_block)];
      (*dump)(bd.plan->resolution, t.x, t.dtype, bd.plan->out_channels, t.img);
    }
  }
}

GraphExec Executor::capture(const std::vector<Step>& steps, cudaStream_t s) {
  run_steps(steps, s, nullptr);  // warm-up: module loading and library initialization stay out of the graph
  SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  SG2_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    run_steps(steps, s, nullptr);
  } catch (...) {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(s, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t g = nullptr;
  SG2_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  return GraphExec(g);
}

void Executor::replay(const ProgramKey& key, cudaStream_t s) {
  auto e = eager_.find(key);
  if (e != eager_.end()) {
    run_steps(e->second, s, nullptr);
    return;
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    std::vector<Step> steps = program(key, false);
    try {
      it = graphs_.emplace(key, capture(steps, s)).first;
      if (detail::trace_enabled()) {
        SG2_CUDA_CHECK(cudaStreamSynchronize(s));
        detail::trace_step("executor: a program's warm-up run and graph capture done");
      }
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::device) throw;
      // Some library call refused stream capture: keep correctness, run the launches eagerly.
      cudaGetLastError();
      graph_failed_ = true;
      capture_error_ = err.what();
      SG2_CUDA_CHECK(cudaStreamSynchronize(s));
      run_steps(steps, s, nullptr);
      eager_.emplace(key, std::move(steps));
      return;
    }
  }
  it->second.launch(s);
}

const float* Executor::synthesize(NoiseKind kind, cudaStream_t s) {
  replay(ProgramKey{kind, false}, s);
  return final_img_;
}

const float* Executor::synthesize_eager(NoiseKind kind, cudaStream_t s, const BlockDumpFn& dump) {
  const auto steps = program(ProgramKey{kind, false}, true);
  run_steps(steps, s, &dump);
  return final_img_;
}

std::vector<std::pair<std::string, float>> Executor::profile(cudaStream_t s) {
  const auto steps = program(ProgramKey{NoiseKind::constant, true}, false);
  run_steps(steps, s, nullptr);  // warm-up
  std::vector<Event> ev(steps.size() + 1);
  ev[0].record(s);
  for (size_t i = 0; i < steps.size(); ++i) {
    steps[i].fn(s);
    ev[i + 1].record(s);
  }
  SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<std::pair<std::string, float>> out;
  for (size_t i = 0; i < steps.size(); ++i) out.emplace_back(steps[i].name, ev[i + 1].since(ev[i]));
  return out;
}

const float* Executor::generate(cudaStream_t s) {
  replay(ProgramKey{NoiseKind::constant, true}, s);
  return final_img_;
}

}  // namespace sg2::cuda
