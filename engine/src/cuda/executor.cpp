// sg2 CUDA backend: the plan executor for one batch size (executor.h).
#include "executor.h"

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
  float act_gain = static_cast<float>(std::sqrt(2.0));
  if (cfg.mapping.activation == "linear") {
    act = FcAct::linear;
    act_gain = 1.0f;
  } else if (cfg.mapping.activation == "relu") {
    act = FcAct::relu;
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

Executor::Executor(const DeviceModel& m, int N, cudnnHandle_t cudnn, MemoryStats* stats, cudaStream_t stream,
                   size_t workspace_limit)
    : m_(m), N_(N), stats_(stats), mapping_(m, N, stats) {
  const ModelConfig& cfg = m.config();
  const auto& blocks = m.blocks();
  size_t xb = 0, yb = 0, rb = 0, sb = 0, db = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockData& bd = blocks[i];
    const BlockPlan& b = *bd.plan;
    const int64_t r = b.resolution, C = b.out_channels;
    const DType D = bd.dtype;
    if (b.in_channels == 0) {
      xb = std::max(xb, sz(N * r * r * C, D));
    } else {
      const int64_t h = r / 2, Cin = b.in_channels;
      xb = std::max(xb, sz(N * h * h * Cin, D));
      yb = std::max(yb, sz(N * (r + 1) * (r + 1) * C, D));
      xb = std::max(xb, sz(N * r * r * C, D));
      if (bd.skip) {
        yb = std::max(yb, sz(N * h * h * C, D));
        sb = std::max(sb, sz(N * r * r * C, DType::f32));
        rb = std::max(rb, sz(N * h * h * Cin, D));
      }
    }
    yb = std::max(yb, sz(N * r * r * C, D));
    db = std::max(db, sz(N * r * r * C, DType::f32));
  }
  // X and Y trade roles after a fused conv1 (the activation then lives in Y): one size for both
  xb = yb = std::max(xb, yb);
  const size_t ib = sz(int64_t(N) * cfg.img_channels * cfg.img_resolution * cfg.img_resolution, DType::f32);
  ws_ = DeviceBuffer(sz(int64_t(N) * cfg.num_ws * cfg.w_dim, DType::f32), stats);
  s_ = DeviceBuffer(sz(int64_t(N) * m.s_cols(), DType::f32), stats);
  s_in_ = DeviceBuffer(sz(int64_t(N) * m.s_cols(), DType::f32), stats);
  smax_ = DeviceBuffer(sz(int64_t(N) * std::max(m.num_conv_layers(), 1), DType::f32), stats);
  dd_ = DeviceBuffer(sz(int64_t(N) * m.d_cols(), DType::f32), stats);
  X_ = DeviceBuffer(xb, stats);
  Y_ = DeviceBuffer(yb, stats);
  if (rb) R_ = DeviceBuffer(rb, stats);
  if (sb) S_ = DeviceBuffer(sb, stats);
  img_[0] = DeviceBuffer(ib, stats);
  img_[1] = DeviceBuffer(ib, stats);
  dump_bytes_ = db;
  SG2_CUDA_CHECK(cudaMemsetAsync(s_in_.get(), 0, s_in_.bytes(), stream));
  SG2_CUDA_CHECK(cudaMemsetAsync(X_.get(), 0, X_.bytes(), stream));
  SG2_CUDA_CHECK(cudaMemsetAsync(Y_.get(), 0, Y_.bytes(), stream));
  if (R_) SG2_CUDA_CHECK(cudaMemsetAsync(R_.get(), 0, R_.bytes(), stream));

  // Convolutions: candidates, one workspace for all, then the algorithm of each.
  convs_.resize(blocks.size());
  size_t ws_need = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockData& bd = blocks[i];
    const BlockPlan& b = *bd.plan;
    const int r = b.resolution, C = b.out_channels;
    ConvShape c1;
    c1.N = N;
    c1.H = c1.W = r;
    c1.Cin = C;
    c1.Cout = C;
    c1.dtype = bd.dtype;
    convs_[i].conv1 = std::make_unique<CudnnConv>(cudnn, c1, bd.conv1.math, workspace_limit);
    ws_need = std::max(ws_need, convs_[i].conv1->max_candidate_workspace());
    if (bd.conv0) {
      ConvShape c0;
      c0.N = N;
      c0.H = c0.W = r / 2;
      c0.Cin = b.in_channels;
      c0.Cout = C;
      c0.transposed = true;
      c0.pad = 0;
      c0.dtype = bd.dtype;
      if (c0.out_h() != r + 1) fail(ErrorKind::internal, "transposed conv size");
      convs_[i].conv0 = std::make_unique<CudnnConv>(cudnn, c0, bd.conv0->math, workspace_limit);
      ws_need = std::max(ws_need, convs_[i].conv0->max_candidate_workspace());
    }
    if (bd.skip) {
      ConvShape sk;
      sk.N = N;
      sk.H = sk.W = r / 2;
      sk.Cin = b.in_channels;
      sk.Cout = C;
      sk.k = 1;
      sk.pad = 0;
      sk.dtype = bd.dtype;
      convs_[i].skip = std::make_unique<CudnnConv>(cudnn, sk, bd.conv1.math, workspace_limit);
      ws_need = std::max(ws_need, convs_[i].skip->max_candidate_workspace());
    }
  }
  workspace_ = DeviceBuffer(ws_need, stats);
  size_t ws_used = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockData& bd = blocks[i];
    auto sel = [&](CudnnConv* c, const void* x, size_t w_off, void* y, const ConvLayer* l = nullptr) {
      if (!c) return;
      if (l && l->weight_hi_off) c->set_split_weights(m.at(l->weight_hi_off), m.at(l->weight_lo_off));
      c->select(x, m.at<char>(w_off), y, workspace_.get(), workspace_.bytes(), stream);
      ws_used = std::max(ws_used, c->workspace());
    };
    sel(convs_[i].conv1.get(), X_.get(), bd.conv1.weight_off, Y_.get(), &bd.conv1);
    if (bd.conv0) sel(convs_[i].conv0.get(), X_.get(), bd.conv0->weight_off, Y_.get(), &*bd.conv0);
    if (bd.skip) sel(convs_[i].skip.get(), R_.get(), bd.skip->weight_off, Y_.get());
  }
  if (ws_used < workspace_.bytes()) {
    workspace_.release();
    workspace_ = DeviceBuffer(ws_used, stats);
  }
  SG2_CUDA_CHECK(cudaStreamSynchronize(stream));
}

float* Executor::noise_maps() {
  if (!noise_) noise_ = DeviceBuffer(sz(int64_t(N_) * std::max(m_.noise_floats_per_sample(), 1), DType::f32), stats_);
  return noise_.as<float>();
}

size_t Executor::bytes() const {
  size_t t = ws_.bytes() + s_.bytes() + s_in_.bytes() + smax_.bytes() + dd_.bytes() + X_.bytes() + Y_.bytes() +
             R_.bytes() + S_.bytes() + img_[0].bytes() + img_[1].bytes() + noise_.bytes() + workspace_.bytes() +
             dump_.bytes();
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
    out.push_back(b + ".conv1: " + convs_[i].conv1->describe());
  }
  return out;
}

std::vector<Executor::Step> Executor::program(NoiseKind kind, bool with_mapping, bool for_dump) {
  const ModelConfig& cfg = m_.config();
  const DeviceModel& m = m_;
  const int N = N_;
  const int S = m.s_cols(), Dc = m.d_cols();
  float* s = s_.as<float>();
  float* s_in = s_in_.as<float>();
  float* dd = dd_.as<float>();
  std::vector<Step> steps;
  if (for_dump && !dump_) dump_ = DeviceBuffer(dump_bytes_, stats_);

  if (with_mapping) {
    steps.push_back({[this](cudaStream_t st) {
      run_mapping(m_, mapping_, 1.0f, m_.config().num_ws, ws_.as<float>(), st);
    }, "mapping"});
  }
  // styles of every layer, then the demodulation coefficients and input scales
  FcArgs aff;
  aff.N = N;
  aff.in_features = cfg.w_dim;
  aff.out_features = S;
  aff.x = ws_.as<float>();
  aff.x_stride_n = int64_t(cfg.num_ws) * cfg.w_dim;
  aff.rows = m.at<int>(m.affine_rows_off());
  aff.x_stride_row = cfg.w_dim;
  aff.weight = m.at(m.affine_weight_off());
  aff.weight_gain = static_cast<float>(1.0 / std::sqrt(double(cfg.w_dim)));
  aff.bias = m.at(m.affine_bias_off());
  aff.out_scale = m.at(m.affine_scale_off());
  aff.y = s;
  steps.push_back({[aff](cudaStream_t st) { fully_connected(aff, st); }, "affine (all layers)"});
  DemodArgs da;
  da.N = N;
  da.num_layers = m.num_conv_layers();
  da.layers = m.at<DemodLayer>(m.demod_layers_off());
  da.total_out = Dc;
  da.layer_of_output = m.at<int>(m.layer_of_output_off());
  da.s = s;
  da.s_stride = S;
  da.q = m.at(m.q_off());
  da.w_inv = m.at(m.w_inv_off());
  da.s_in = s_in;
  da.smax = smax_.as<float>();
  da.dd = dd;
  steps.push_back({[da](cudaStream_t st) { demodulate(da, st); }, "demodulate (all layers)"});

  auto noise_of = [&](const ConvLayer& c, const float** ptr, int64_t* stride, float* strength) {
    *ptr = nullptr;
    *stride = 0;
    *strength = c.noise_strength;
    if (c.plan->noise_index < 0 || kind == NoiseKind::none) return;
    if (kind == NoiseKind::constant) {
      *ptr = m.at(c.noise_const_off);
    } else {
      *ptr = noise_maps() + c.noise_offset;
      *stride = m.noise_floats_per_sample();
    }
  };
  const float* filter = m.at(m.filter_off());
  const int fsize = m.plan().filter_size;
  const bool skip_arch = m.plan().architecture == "skip";
  int img_cur = -1;  // index of the image buffer holding the current image
  const auto& blocks = m.blocks();
  void* X = X_.get();
  void* Y = Y_.get();
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockData& bd = blocks[i];
    const BlockPlan& b = *bd.plan;
    const BlockData* next = i + 1 < blocks.size() ? &blocks[i + 1] : nullptr;
    const int r = b.resolution, C = b.out_channels;
    const DType D = bd.dtype;
    Convs& cv = convs_[i];
    const std::string tag = "b" + std::to_string(r);
    if (b.in_channels == 0) {
      const float* k = m.at(m.const_off());
      const float* sc = s_in + bd.conv1.s_col;
      steps.push_back({[=](cudaStream_t st) { modulate_const(k, C, 4, 4, sc, S, N, D, X, st); }, tag + ".const"});
    } else {
      if (bd.skip) {
        CudnnConv* conv = cv.skip.get();
        const void* w = m.at<char>(bd.skip->weight_off);
        void* R = R_.get();
        float* Sb = S_.as<float>();
        const float g = bd.skip->plan->act_gain;
        const int Cout = C, h = r / 2;
        void* wsp = workspace_.get();
        const size_t wsb = workspace_.bytes();
        steps.push_back({[=](cudaStream_t st) {
          conv->run(R, w, Y, wsp, wsb, st);
          upsample2d_nhwc(Y, D, N, h, h, Cout, filter, fsize, g, Sb, st);
        }, tag + ".skip"});
      }
      // conv0: transposed conv, then FIR + epilogue, scaled for conv1
      const ConvLayer& c0 = *bd.conv0;
      {
        CudnnConv* conv = cv.conv0.get();
        const void* w = m.at<char>(c0.weight_off);
        void* wsp = workspace_.get();
        const size_t wsb = workspace_.bytes();
        steps.push_back({[=](cudaStream_t st) { conv->run(X, w, Y, wsp, wsb, st); }, tag + ".conv0"});
      }
      UpEpilogueArgs u;
      u.N = N;
      u.H = u.W = r;
      u.C = C;
      u.TH = u.TW = r + 1;
      u.pad0 = (fsize + 1) / 2 - 1;
      if (u.TH + u.pad0 + (fsize - 2) / 2 - fsize + 1 != r)
        fail(ErrorKind::unsupported, "a resample filter of ", fsize, " taps is not supported by the CUDA backend");
      u.t_dtype = D;
      u.t = Y;
      u.filter = filter;
      u.fsize = fsize;
      u.filter1d = m.at(m.filter1d_off());
      u.dd = dd + c0.d_col;
      u.dd_stride = Dc;
      noise_of(c0, &u.noise, &u.noise_stride_n, &u.noise_strength);
      u.bias = m.at(c0.bias_off);
      u.lrelu = true;
      u.gain = c0.plan->act_gain;
      u.clamp = clamp_of(*c0.plan);
      u.out_dtype = D;
      u.out = X;
      u.out_scale = s_in + bd.conv1.s_col;
      u.out_scale_stride = S;
      steps.push_back({[u](cudaStream_t st) { upconv_epilogue(u, st); }, tag + ".conv0.epilogue"});
    }
    EpilogueArgs e;
    e.N = N;
    e.H = e.W = r;
    e.C = C;
    e.y_dtype = D;
    e.y = Y;
    e.dd = dd + bd.conv1.d_col;
    e.dd_stride = Dc;
    noise_of(bd.conv1, &e.noise, &e.noise_stride_n, &e.noise_strength);
    e.bias = m.at(bd.conv1.bias_off);
    e.lrelu = true;
    e.gain = bd.conv1.plan->act_gain;
    e.clamp = clamp_of(*bd.conv1.plan);
    e.residual = bd.skip ? S_.as<float>() : nullptr;
    e.out_dtype = next ? next->dtype : D;
    if (next) {
      e.out = X;
      e.out_scale = s_in + next->conv0->s_col;
      e.out_scale_stride = S;
      if (next->skip) e.raw = R_.get();
    }
    if (for_dump && !e.raw) e.raw = dump_.get();
    if (bd.torgb) {
      const TorgbLayer& t = *bd.torgb;
      e.img_channels = cfg.img_channels;
      e.rgb_weight = m.at(t.weight_off);
      e.rgb_styles = s + t.s_col;
      e.rgb_styles_stride = S;
      e.rgb_bias = m.at(t.bias_off);
      e.rgb_clamp = clamp_of(*t.plan);
      const int dst = img_cur == 0 ? 1 : 0;
      e.img_prev = skip_arch && img_cur >= 0 ? img_[img_cur].as<float>() : nullptr;
      e.img = img_[dst].as<float>();
      e.filter = filter;
      e.fsize = fsize;
      img_cur = dst;
    }
    // fp16 blocks with few channels: conv1, its epilogue and ToRGB in one kernel (the conv output
    // never goes to memory); it writes into Y, which then holds the activation (X and Y swap).
    EpilogueArgs ef = e;
    if (ef.out) ef.out = Y;
    const bool fuse = D == DType::f16 && fused_conv_f16_supports(ef) &&
                      std::getenv("SG2_UNFUSED_CONV1") == nullptr;
    Step st;
    if (fuse) {
      const void* w = m.at<char>(bd.conv1.weight_off);
      const void* xin = X;
      st = Step{[ef, xin, w](cudaStream_t strm) { fused_conv_f16(xin, w, ef, strm); },
                tag + ".conv1+epilogue" + (bd.torgb ? "+torgb" : "") + " (fused)"};
      std::swap(X, Y);
      e = ef;
    } else {
      {
        CudnnConv* conv = cv.conv1.get();
        const void* w = m.at<char>(bd.conv1.weight_off);
        void* wsp = workspace_.get();
        const size_t wsb = workspace_.bytes();
        steps.push_back({[=](cudaStream_t st) { conv->run(X, w, Y, wsp, wsb, st); }, tag + ".conv1"});
      }
      st = Step{[e](cudaStream_t strm) { conv_epilogue(e, strm); }, tag + ".conv1.epilogue" + (bd.torgb ? "+torgb" : "")};
    }
    if (for_dump) {
      st.dump_block = static_cast<int>(i);
      dump_x_.resize(blocks.size());
      dump_x_[i] = {e.raw, e.out_dtype, bd.torgb ? e.img : (img_cur >= 0 ? img_[img_cur].as<float>() : nullptr)};
    }
    steps.push_back(std::move(st));
  }
  final_img_ = img_[img_cur < 0 ? 0 : img_cur].as<float>();
  return steps;
}

void Executor::run_steps(const std::vector<Step>& steps, cudaStream_t s, const BlockDumpFn* dump) {
  for (const Step& st : steps) {
    st.fn(s);
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

void Executor::replay(int key, NoiseKind kind, bool with_mapping, cudaStream_t s) {
  auto e = eager_.find(key);
  if (e != eager_.end()) {
    run_steps(e->second, s, nullptr);
    return;
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    std::vector<Step> steps = program(kind, with_mapping, false);
    try {
      it = graphs_.emplace(key, capture(steps, s)).first;
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
  replay(static_cast<int>(kind), kind, false, s);
  return final_img_;
}

const float* Executor::synthesize_eager(NoiseKind kind, cudaStream_t s, const BlockDumpFn& dump) {
  const auto steps = program(kind, false, true);
  run_steps(steps, s, &dump);
  return final_img_;
}

std::vector<std::pair<std::string, float>> Executor::profile(cudaStream_t s) {
  const auto steps = program(NoiseKind::constant, true, false);
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
  replay(100, NoiseKind::constant, true, s);
  return final_img_;
}

}  // namespace sg2::cuda
