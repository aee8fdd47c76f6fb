// sg2 CPU backend on oneDNN (executor.h): the forward pass as phases of work units.
#include "engine/cpu/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <new>

#include <unistd.h>

#include "engine/cpu/layers.h"
#include "engine/cpu/onednn.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/thread_pool.h"
#include "kernels/ref/bias_act.h"
#include "sg2/error.h"
#include "sg2/npy.h"
#include "util/file_util.h"
#include "util/host_memory.h"

namespace sg2 {

namespace {

using cpu::Block;
using cpu::ConvLayer;
using cpu::Dense;

/// float storage aligned to 64 bytes (every sample's slice starts on a cache line, so all
/// samples are laid out alike).
class Floats {
 public:
  void resize(int64_t n) {
    if (n <= size_) return;
    const size_t bytes = (size_t(std::max<int64_t>(n, 16)) * sizeof(float) + 63) / 64 * 64;
    float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!p) throw std::bad_alloc();
    ptr_.reset(p);
    size_ = n;
  }
  float* data() const { return ptr_.get(); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> ptr_;
  int64_t size_ = 0;
};

int64_t round16(int64_t n) { return (std::max<int64_t>(n, 1) + 15) / 16 * 16; }

/// y[0, out) = act(x @ W^T + b) for one sample, as ref::fully_connected's bias_act.
void dense_row(const Dense& d, const float* x, float* y, ref::Activation act) {
  cpu::sgemm(true, 1, d.out, d.in, x, d.in, d.weight.data(), d.in, y, d.out);
  const float alpha = ref::default_alpha(act), gain = ref::default_gain(act);
  for (int o = 0; o < d.out; ++o) {
    float v = y[o] + d.bias[size_t(o)];
    v = ref::activate(act, v, alpha);
    if (gain != 1.0f) v = v * gain;
    y[o] = v;
  }
}

/// ref::normalize_2nd_moment of one row.
void normalize_row(float* x, int64_t F) {
  double sum = 0;
  for (int64_t j = 0; j < F; ++j) sum += double(x[j] * x[j]);
  const float mean = F > 0 ? static_cast<float>(sum / double(F)) : 0.0f;
  const float scale = 1.0f / std::sqrt(mean + 1e-8f);
  for (int64_t j = 0; j < F; ++j) x[j] = x[j] * scale;
}

class OnednnCpuBackend final : public Backend {
 public:
  OnednnCpuBackend(const Model& model, const CpuTuning& tuning)
      : model_(model),
        cfg_(model.config),
        tuning_(tuning),
        pool_(tuning.threads, [](int) { cpu::onednn_init_worker(); }),
        m_(model, pool_, tuning) {
    switch (cfg_.mapping.activation) {
      case Activation::linear:
        act_ = ref::Activation::linear;
        break;
      case Activation::relu:
        act_ = ref::Activation::relu;
        break;
      case Activation::lrelu:
        act_ = ref::Activation::lrelu;
        break;
    }
    scratch_.resize(size_t(pool_.size()));
    pads_.resize(size_t(pool_.size()));
    for (int w = 0; w < pool_.size(); ++w) {
      scratch_[size_t(w)].resize(round16(m_.scratch_floats));
      pads_[size_t(w)].resize(round16(int64_t(m_.scratchpad_bytes / sizeof(float)) + 1));
    }
    per_sample_bytes_ =
        4 * (round16(m_.xa_floats) + round16(m_.xb_floats) + round16(m_.raw_floats) + 2 * round16(m_.img_floats) +
             round16(m_.skip_r_floats) + round16(m_.skip_s_floats) + round16(m_.noise_floats));
  }

  std::string name() const override { return "cpu"; }

  int preferred_batch() const override {
    // about 1 GiB of activations per call, at most 64 images
    return static_cast<int>(std::clamp<int64_t>((int64_t(1) << 30) / std::max<int64_t>(per_sample_bytes_, 1), 1, 64));
  }
  int64_t bytes_per_image() const override {
    return per_sample_bytes_ + 4 * int64_t(cfg_.img_channels) * cfg_.height() * cfg_.width();
  }
  int64_t memory_available() const override { return detail::host_memory_available(); }
  std::string memory_name() const override { return "host memory"; }

  void set_progress(std::function<void(double)> cb) override { progress_ = std::move(cb); }

  std::unique_ptr<BatchPipe> make_pipe(int batch, PipeOutputs out, int slots) override {
    return make_host_pipe(*this, cfg_, batch, out, slots);
  }

  ~OnednnCpuBackend() override {
    if (profile_.empty()) return;
    std::fprintf(stderr,
                 "sg2 cpu profile (SG2_CPU_PROFILE): %d threads; per phase over all calls: wall ms, CPU ms of all "
                 "threads, share of the CPU time, GFLOP per CPU second\n",
                 pool_.size());
    double total = 0;
    for (const auto& p : profile_) total += p.second.cpu;
    for (const auto& p : profile_)
      std::fprintf(stderr, "  %-22s %9.1f %9.1f %5.1f%% %7.1f\n", p.first.c_str(), 1e3 * p.second.seconds,
                   1e3 * p.second.cpu, 100.0 * p.second.cpu / std::max(total, 1e-12),
                   p.second.macs > 0 ? 2e-9 * double(p.second.macs) / std::max(p.second.cpu, 1e-12) : 0.0);
  }

  Tensor map(const Tensor& z, const Tensor& c, const Truncation& trunc, const std::string& dump_dir) override;
  Tensor synthesize(const Tensor& ws, const NoiseSpec& noise, const std::string& dump_dir) override;
  Tensor styles(const Tensor& ws) override;

 private:
  struct Buffers {
    int capacity = 0;  // samples allocated
    int64_t xa_n = 0, xb_n = 0, raw_n = 0, img_n = 0, r_n = 0, s_n = 0, noise_n = 0;
    Floats xa, xb, raw, img[2], skip_r, skip_s, noise, styles, dcoefs, wmod;
  };
  void ensure(int N);
  void styles_phase(const Tensor& ws);
  void noise_phase(const NoiseSpec& noise);
  void conv_phase(const Block& b, const ConvLayer& c, const Block* next, const NoiseSpec& noise);
  void torgb_phase(const Block& b, int src_img, int dst_img);
  void skip_phase(const Block& b);
  const float* noise_of(const ConvLayer& c, const NoiseSpec& noise, int64_t n) const;
  void report(int64_t macs);
  void dump_block(const std::string& dir, const Block& b, int img_index) const;

  const Model& model_;
  const ModelConfig& cfg_;
  CpuTuning tuning_;
  cpu::ThreadPool pool_;
  cpu::CpuModel m_;
  ref::Activation act_ = ref::Activation::lrelu;
  std::vector<Floats> scratch_, pads_;
  Buffers buf_;
  int64_t per_sample_bytes_ = 0;
  std::function<void(double)> progress_;
  struct PhaseTime {
    double seconds = 0, cpu = 0;
    int64_t macs = 0;
  };
  static double process_cpu() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  double phase_cpu_ = 0;
  std::map<std::string, PhaseTime> profile_;  // env SG2_CPU_PROFILE=1: per-phase wall time, printed at the end
  const bool profiling_ = tuning_.profile;
  std::chrono::steady_clock::time_point phase_start_;
  void phase_begin() {
    if (!profiling_) return;
    phase_start_ = std::chrono::steady_clock::now();
    phase_cpu_ = process_cpu();
  }
  void phase_end(const std::string& name, int64_t macs) {
    if (!profiling_) return;
    PhaseTime& p = profile_[name];
    p.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - phase_start_).count();
    p.cpu += process_cpu() - phase_cpu_;
    p.macs += macs * batch_;
  }
  int batch_ = 0;  // samples of the synthesize call in progress
  int64_t done_macs_ = 0, batch_macs_ = 1;
};

void OnednnCpuBackend::ensure(int N) {
  Buffers& b = buf_;
  b.xa_n = round16(m_.xa_floats);
  b.xb_n = round16(m_.xb_floats);
  b.raw_n = round16(m_.raw_floats);
  b.img_n = round16(m_.img_floats);
  b.r_n = round16(m_.skip_r_floats);
  b.s_n = round16(m_.skip_s_floats);
  b.noise_n = round16(m_.noise_floats);
  if (N <= b.capacity) return;
  // refuse what the machine cannot hold (overcommitted pages would fail only when first touched)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0 && double(per_sample_bytes_) * N > 0.8 * double(pages) * double(page))
    fail_hint(ErrorKind::out_of_memory, "use a smaller batch (max_batch)", "out of host memory for a batch of ", N,
              " images (", (per_sample_bytes_ * N) >> 20, " MiB of activations, the machine has ",
              (int64_t(pages) * page) >> 20, " MiB)");
  try {
    b.xa.resize(N * b.xa_n);
    b.xb.resize(N * b.xb_n);
    b.raw.resize(N * b.raw_n);
    b.img[0].resize(N * b.img_n);
    b.img[1].resize(N * b.img_n);
    if (m_.skip_r_floats) b.skip_r.resize(N * b.r_n);
    if (m_.skip_s_floats) b.skip_s.resize(N * b.s_n);
    b.styles.resize(N * round16(m_.s_cols));
    b.dcoefs.resize(N * round16(m_.d_cols));
    b.wmod.resize(N * round16(m_.wmod_floats));
    b.noise.resize(N * b.noise_n);
  } catch (const std::bad_alloc&) {
    b.capacity = 0;
    fail_hint(ErrorKind::out_of_memory, "use a smaller batch (max_batch)", "out of host memory for a batch of ", N,
              " images (", (per_sample_bytes_ * N) >> 20, " MiB)");
  }
  b.capacity = N;
}

void OnednnCpuBackend::report(int64_t macs) {
  done_macs_ += macs;
  if (progress_) progress_(std::min(1.0, double(done_macs_) / double(batch_macs_)));
}

Tensor OnednnCpuBackend::map(const Tensor& z, const Tensor& c, const Truncation& trunc, const std::string& dump_dir) {
  if (!dump_dir.empty()) detail::make_dirs(dump_dir);
  const int64_t N = z.dim(0);
  const int64_t width = std::max<int64_t>({int64_t(cfg_.z_dim) + (m_.embed ? m_.embed->out : 0), cfg_.w_dim, 1});
  std::vector<int64_t> widths;
  for (const Dense& d : m_.mapping) widths.push_back(d.out);
  const int L = static_cast<int>(m_.mapping.size());
  std::vector<Tensor> dumps;
  if (!dump_dir.empty())
    for (int i = 0; i < L; ++i) dumps.emplace_back(std::vector<int64_t>{N, widths[size_t(i)]});
  int64_t max_w = width;
  for (int64_t w : widths) max_w = std::max(max_w, w);
  Tensor ws({N, cfg_.num_ws, cfg_.w_dim});
  pool_.run(N, [&](int64_t n, int) {
    std::vector<float> a(static_cast<size_t>(max_w)), b(static_cast<size_t>(max_w));
    int64_t F = 0;
    if (cfg_.z_dim > 0) {
      std::copy(z.data() + n * cfg_.z_dim, z.data() + (n + 1) * cfg_.z_dim, a.begin());
      normalize_row(a.data(), cfg_.z_dim);
      F = cfg_.z_dim;
    }
    if (m_.embed) {
      dense_row(*m_.embed, c.data() + n * cfg_.c_dim, b.data(), ref::Activation::linear);
      normalize_row(b.data(), m_.embed->out);
      std::copy(b.begin(), b.begin() + m_.embed->out, a.begin() + F);
      F += m_.embed->out;
    }
    for (int i = 0; i < L; ++i) {
      const Dense& d = m_.mapping[size_t(i)];
      if (d.in != F) fail(ErrorKind::internal, "mapping.fc", i, " expects ", d.in, " features, got ", F);
      dense_row(d, a.data(), b.data(), act_);
      std::swap(a, b);
      F = d.out;
      if (!dumps.empty()) std::copy(a.begin(), a.begin() + F, dumps[size_t(i)].data() + n * F);
    }
    if (F != cfg_.w_dim) fail(ErrorKind::internal, "mapping output has ", F, " features, w_dim is ", cfg_.w_dim);
    const Tensor& w_avg = model_.at("mapping.w_avg");
    const int R = cfg_.num_ws, D = cfg_.w_dim;
    const int rows = trunc.cutoff ? std::min(*trunc.cutoff, R) : R;
    const float psi = trunc.psi;
    for (int r = 0; r < R; ++r) {
      float* row = ws.data() + (n * R + r) * D;
      for (int j = 0; j < D; ++j) {
        float v = a[size_t(j)];
        if (psi != 1.0f && r < rows) {  // torch.lerp on CPU, as the reference backend
          const float avg = w_avg[j], diff = v - avg;
          v = std::fabs(psi) < 0.5f ? std::fma(psi, diff, avg) : std::fma(-diff, 1.0f - psi, v);
        }
        row[j] = v;
      }
    }
  });
  for (int i = 0; i < static_cast<int>(dumps.size()); ++i)
    write_npy(dump_dir + "/mapping_fc" + std::to_string(i) + ".npy", dumps[size_t(i)]);
  return ws;
}

void OnednnCpuBackend::styles_phase(const Tensor& ws) {
  phase_begin();
  const int R = cfg_.num_ws, D = cfg_.w_dim;
  const int64_t sc = round16(m_.s_cols), dc = round16(m_.d_cols), wc = round16(m_.wmod_floats);
  pool_.run(batch_, [&](int64_t n, int) {
    float* s = buf_.styles.data() + n * sc;
    float* d = buf_.dcoefs.data() + n * dc;
    float* wm = buf_.wmod.data() + n * wc;
    std::vector<float> s2;
    auto conv = [&](const ConvLayer& c) {
      float* sl = s + c.s_col;
      dense_row(c.affine, ws.data() + (n * R + c.plan->w_index) * D, sl, ref::Activation::linear);
      s2.resize(size_t(c.cin));
      for (int i = 0; i < c.cin; ++i) s2[size_t(i)] = sl[i] * sl[i];
      float* dl = d + c.d_col;
      cpu::sgemm(true, 1, c.cout, c.cin, s2.data(), c.cin, c.q.data(), c.cin, dl, c.cout);
      for (int o = 0; o < c.cout; ++o) dl[o] = 1.0f / std::sqrt(dl[o] + 1e-8f);
    };
    for (const Block& b : m_.blocks) {
      if (b.conv0) conv(*b.conv0);
      conv(b.conv1);
      if (b.torgb) {
        const cpu::TorgbLayer& t = *b.torgb;
        std::vector<float> st(size_t(t.cin));
        dense_row(t.affine, ws.data() + (n * R + t.plan->w_index) * D, st.data(), ref::Activation::linear);
        if (t.style_gain != 1.0f)
          for (float& v : st) v = v * t.style_gain;
        float* w = wm + t.wmod_off;
        for (int o = 0; o < t.out; ++o)
          for (int i = 0; i < t.cin; ++i) w[o * t.cin + i] = t.weight[o * t.cin + i] * st[size_t(i)];
      }
    }
  });
  phase_end("styles + dcoefs", 0);
}

Tensor OnednnCpuBackend::styles(const Tensor& ws) {
  // dense_row of every layer's affine, as styles_phase (the torgb ones times style_gain)
  const int64_t N = ws.dim(0);
  const int R = cfg_.num_ws, D = cfg_.w_dim;
  int64_t total = 0;
  for (const Block& b : m_.blocks) total += (b.conv0 ? b.conv0->cin : 0) + b.conv1.cin + (b.torgb ? b.torgb->cin : 0);
  Tensor out({N, total});
  pool_.run(N, [&](int64_t n, int) {
    float* s = out.data() + n * total;
    for (const Block& b : m_.blocks) {
      if (b.conv0) {
        dense_row(b.conv0->affine, ws.data() + (n * R + b.conv0->plan->w_index) * D, s, ref::Activation::linear);
        s += b.conv0->cin;
      }
      dense_row(b.conv1.affine, ws.data() + (n * R + b.conv1.plan->w_index) * D, s, ref::Activation::linear);
      s += b.conv1.cin;
      if (b.torgb) {
        const cpu::TorgbLayer& t = *b.torgb;
        dense_row(t.affine, ws.data() + (n * R + t.plan->w_index) * D, s, ref::Activation::linear);
        if (t.style_gain != 1.0f)
          for (int i = 0; i < t.cin; ++i) s[i] = s[i] * t.style_gain;
        s += t.cin;
      }
    }
  });
  return out;
}

void OnednnCpuBackend::noise_phase(const NoiseSpec& noise) {
  const bool random = noise.mode == NoiseMode::random, given = !noise.maps.empty();
  if (!random && !given) return;
  std::vector<const ConvLayer*> layers;
  for (const Block& b : m_.blocks) {
    if (b.conv0 && b.conv0->noise_off >= 0) layers.push_back(&*b.conv0);
    if (b.conv1.noise_off >= 0) layers.push_back(&b.conv1);
  }
  const int64_t L = static_cast<int64_t>(layers.size());
  phase_begin();
  pool_.run(batch_ * L, [&](int64_t u, int) {
    const int64_t n = u / L;
    const ConvLayer& c = *layers[size_t(u % L)];
    const int idx = c.plan->noise_index;
    const float strength = model_.at(c.plan->name + ".noise_strength")[0];
    Tensor map_n;
    const Tensor* mp;
    if (random) {
      map_n = random_noise_map(noise.seed, noise.keys[size_t(n)], idx, c.h, c.w);
      mp = &map_n;
    } else {
      mp = &noise.maps[size_t(n)][size_t(idx)];
    }
    float* dst = buf_.noise.data() + n * buf_.noise_n + c.noise_off;
    for (int64_t i = 0; i < int64_t(c.h) * c.w; ++i) dst[i] = (*mp)[i] * strength;
  });
  phase_end("noise maps", 0);
}

const float* OnednnCpuBackend::noise_of(const ConvLayer& c, const NoiseSpec& noise, int64_t n) const {
  if (c.plan->noise_index < 0 || noise.mode == NoiseMode::none) return nullptr;
  if (noise.mode == NoiseMode::random || !noise.maps.empty()) return buf_.noise.data() + n * buf_.noise_n + c.noise_off;
  return c.noise_const.data();
}

void OnednnCpuBackend::conv_phase(const Block& b, const ConvLayer& c, const Block* next, const NoiseSpec& noise) {
  const int B = m_.border, H = c.h, W = c.w;
  const cpu::Split& sp = c.split;
  const int cb = sp.oc_block;
  const int64_t sc = round16(m_.s_cols), dc = round16(m_.d_cols);
  float* in_buf = c.up ? buf_.xa.data() : buf_.xb.data();
  phase_begin();
  const int64_t in_n = c.up ? buf_.xa_n : buf_.xb_n;
  pool_.run(int64_t(batch_) * sp.units(), [&](int64_t u, int w) {
    const int64_t n = u / sp.units();
    const int k = static_cast<int>(u % sp.units()) / sp.bands, band = static_cast<int>(u % sp.units()) % sp.bands;
    const int y0 = band * sp.band_rows, y1 = y0 + sp.band_rows;
    const float* s = buf_.styles.data() + n * sc;
    cpu::Epilogue e;
    e.C = c.cout;
    e.c0 = k * cb;
    e.cb = cb;
    e.dcoef = buf_.dcoefs.data() + n * dc + c.d_col;
    e.noise = noise_of(c, noise, n);
    e.bias = c.bias;
    e.gain = c.plan->act_gain;
    e.clamp = c.plan->clamp;
    e.H = H;
    e.W = W;
    e.B = B;
    float* zero_target = nullptr;
    if (c.up) {  // conv0 -> conv1's input, modulated by conv1's styles
      e.modulated = buf_.xb.data() + n * buf_.xb_n;
      e.out_scale = s + b.conv1.s_col;
      zero_target = e.modulated;
    } else {
      if (b.skip) e.residual = buf_.skip_s.data() + n * buf_.s_n;
      e.raw = buf_.raw.data() + n * buf_.raw_n;
      if (next) {  // conv1 -> the next block's conv0 input, modulated by its styles
        e.modulated = buf_.xa.data() + n * buf_.xa_n;
        e.out_scale = s + next->conv0->s_col;
        zero_target = e.modulated;
      }
    }
    float* scratch = scratch_[size_t(w)].data();
    void* pad = pads_[size_t(w)].data();
    const int wp_in = c.in_w + 2 * B;
    if (c.up) {
      // the four phases of the transposed conv, then the band of its output the FIR reads
      const int y0h = y0 / 2, t_lo = y0 - m_.fir_pad0, pad0 = m_.fir_pad0;
      float* t = scratch + c.t_off;
      for (const cpu::ConvPart& p : c.parts) {
        float* out = scratch + p.scratch_off;
        p.band->run(in_buf + n * in_n + int64_t(y0h + p.in_row0) * wp_in * c.cin, p.weights[size_t(k)].data(), out,
                    pad);
        const int orows = p.band->out_rows(), ocols = p.band->out_cols();
        for (int rr = 0; rr < orows; ++rr) {
          const int rho = 2 * (y0h + p.i0 + rr) + p.a - t_lo;
          if (rho < 0 || rho >= c.t_rows) continue;
          float* trow = t + int64_t(rho) * c.t_cols * cb;
          const float* orow = out + int64_t(rr) * ocols * cb;
          for (int cc = 0; cc < ocols; ++cc) {
            const int kappa = 2 * (cc + p.j0) + p.b + pad0;
            if (kappa < 0 || kappa >= c.t_cols) continue;
            std::memcpy(trow + int64_t(kappa) * cb, orow + int64_t(cc) * cb, sizeof(float) * size_t(cb));
          }
        }
      }
      float* tmp = scratch + c.tmp_off;
      float* urow = scratch + c.u_off;
      for (int y = y0; y < y1; ++y) {
        cpu::fir_row(t, c.t_cols, cb, pad0, pad0, m_.fir_v, m_.fir_h, pad0, y - y0, W, tmp, urow);
        cpu::epilogue_row(e, y, urow, cb);
      }
    } else {
      const cpu::ConvPart& p = c.parts[0];
      p.band->run(in_buf + n * in_n + int64_t(y0 + p.in_row0) * wp_in * c.cin, p.weights[size_t(k)].data(), scratch,
                  pad);
      const int oc = p.band->out_cols();
      for (int y = y0; y < y1; ++y) cpu::epilogue_row(e, y, scratch + (int64_t(y - y0) * oc + (B - 1)) * cb, cb);
    }
    if (zero_target) {
      cpu::zero_border_rows(zero_target, H, W, B, c.cout, e.c0, cb, y0, y1);
      if (band == 0) cpu::zero_border_rows(zero_target, H, W, B, c.cout, e.c0, cb, -B, 0);
      if (band == sp.bands - 1) cpu::zero_border_rows(zero_target, H, W, B, c.cout, e.c0, cb, H, H + B);
    }
  });
  phase_end(c.plan->name.substr(10), c.macs);  // "b64.conv1"
  report(c.macs);
}

void OnednnCpuBackend::skip_phase(const Block& b) {
  const cpu::SkipLayer& s = *b.skip;
  const int ih = s.h / 2, iw = s.w / 2, W = s.w, f = m_.plan.filter_size;
  phase_begin();
  pool_.run(int64_t(batch_) * s.bands, [&](int64_t u, int) {
    const int64_t n = u / s.bands;
    const int y0 = static_cast<int>(u % s.bands) * s.band_rows;
    const int64_t P = int64_t(s.band_rows) * iw;
    cpu::sgemm(true, P, s.cout, s.cin, buf_.raw.data() + n * buf_.raw_n + int64_t(y0) * iw * s.cin, s.cin,
               s.weight.data(), s.cin, buf_.skip_r.data() + n * buf_.r_n + int64_t(y0) * iw * s.cout, s.cout);
  });
  const float g = s.plan->act_gain;
  pool_.run(int64_t(batch_) * s.up_bands, [&](int64_t u, int) {
    const int64_t n = u / s.up_bands;
    const int y0 = static_cast<int>(u % s.up_bands) * s.up_band_rows, y1 = y0 + s.up_band_rows;
    float* out = buf_.skip_s.data() + n * buf_.s_n;
    cpu::upsample2d_rows(buf_.skip_r.data() + n * buf_.r_n, ih, iw, s.cout, m_.up_g, f, y0, y1, out);
    if (g != 1.0f)
      for (int64_t i = int64_t(y0) * W * s.cout; i < int64_t(y1) * W * s.cout; ++i) out[i] = out[i] * g;
  });
  phase_end(s.plan->name.substr(10), int64_t(ih) * iw * s.cin * s.cout);
  report(int64_t(ih) * iw * s.cin * s.cout);
}

void OnednnCpuBackend::torgb_phase(const Block& b, int src_img, int dst_img) {
  const cpu::TorgbLayer& t = *b.torgb;
  const int H = t.h, W = t.w, ih = H / 2, iw = W / 2, f = m_.plan.filter_size, O = t.out;
  const int64_t wc = round16(m_.wmod_floats);
  phase_begin();
  pool_.run(int64_t(batch_) * t.bands, [&](int64_t u, int w) {
    const int64_t n = u / t.bands;
    const int y0 = static_cast<int>(u % t.bands) * t.band_rows, y1 = y0 + t.band_rows;
    const int64_t P = int64_t(t.band_rows) * W, plane = int64_t(H) * W;
    float* y = scratch_[size_t(w)].data();
    cpu::sgemm(true, O, P, t.cin, buf_.wmod.data() + n * wc + t.wmod_off, t.cin,
               buf_.raw.data() + n * buf_.raw_n + int64_t(y0) * W * t.cin, t.cin, y, P);
    float* img = buf_.img[dst_img].data() + n * buf_.img_n;
    const float* prev = src_img >= 0 ? buf_.img[src_img].data() + n * buf_.img_n : nullptr;
    const bool clamp = t.clamp && *t.clamp >= 0.0f;
    const float cl = clamp ? *t.clamp : 0.0f;
    for (int o = 0; o < O; ++o) {
      float* dst = img + o * plane;
      if (prev) cpu::upsample2d_rows(prev + int64_t(o) * ih * iw, ih, iw, 1, m_.up_g, f, y0, y1, dst);
      float* d = dst + int64_t(y0) * W;
      const float* yo = y + o * P;
      const float bias = t.bias[o];
      for (int64_t p = 0; p < P; ++p) {
        float v = yo[p] + bias;
        if (clamp) v = std::min(std::max(v, -cl), cl);
        d[p] = prev ? d[p] + v : v;
      }
    }
  });
  phase_end(t.plan->name.substr(10), int64_t(H) * W * t.cin * t.out);
  report(int64_t(H) * W * t.cin * t.out);
}

void OnednnCpuBackend::dump_block(const std::string& dir, const Block& b, int img_index) const {
  const int H = b.plan->height, W = b.plan->width, C = b.plan->out_channels, N = batch_;
  const int64_t HW = int64_t(H) * W;
  const std::string tag = dir + "/b" + std::to_string(b.plan->resolution);
  Tensor x({N, C, H, W});
  for (int n = 0; n < N; ++n)
    for (int64_t p = 0; p < HW; ++p)
      for (int c = 0; c < C; ++c) x[(int64_t(n) * C + c) * HW + p] = buf_.raw.data()[n * buf_.raw_n + p * C + c];
  write_npy(tag + "_x.npy", x);
  if (img_index >= 0) {
    const int ic = cfg_.img_channels;
    Tensor img({N, ic, H, W});
    for (int n = 0; n < N; ++n)
      std::copy(buf_.img[img_index].data() + n * buf_.img_n, buf_.img[img_index].data() + n * buf_.img_n + ic * HW,
                img.data() + int64_t(n) * ic * HW);
    write_npy(tag + "_img.npy", img);
  }
}

Tensor OnednnCpuBackend::synthesize(const Tensor& ws, const NoiseSpec& noise, const std::string& dump_dir) {
  if (!dump_dir.empty()) detail::make_dirs(dump_dir);
  const int N = static_cast<int>(ws.dim(0));
  ensure(N);
  batch_ = N;  // the phases run over the N samples of this call
  done_macs_ = 0;
  batch_macs_ = std::max<int64_t>(m_.total_macs, 1);
  {
    styles_phase(ws);
    noise_phase(noise);
    int img = -1;
    for (size_t i = 0; i < m_.blocks.size(); ++i) {
      const Block& b = m_.blocks[i];
      const Block* next = i + 1 < m_.blocks.size() ? &m_.blocks[i + 1] : nullptr;
      if (!b.conv0) {  // b4: the const input, modulated by conv1's styles
        const Tensor& k = model_.at("synthesis.b4.const");
        const int C = static_cast<int>(k.dim(0));
        pool_.run(N, [&](int64_t n, int) {
          cpu::modulate_const(k.data(), C, static_cast<int>(k.dim(1)), static_cast<int>(k.dim(2)),
                              buf_.styles.data() + n * round16(m_.s_cols) + b.conv1.s_col, m_.border,
                              buf_.xb.data() + n * buf_.xb_n);
        });
      } else {
        if (b.skip) skip_phase(b);
        conv_phase(b, *b.conv0, next, noise);
      }
      conv_phase(b, b.conv1, next, noise);
      if (b.torgb) {
        const int dst = img == 0 ? 1 : 0;
        torgb_phase(b, img, dst);
        img = dst;
      }
      if (!dump_dir.empty()) dump_block(dump_dir, b, img);
    }
    const int64_t ic = cfg_.img_channels, HW = int64_t(cfg_.height()) * cfg_.width();
    Tensor out({N, ic, cfg_.height(), cfg_.width()});
    if (img < 0) fail(ErrorKind::internal, "the plan has no ToRGB layer");
    for (int n = 0; n < N; ++n)
      std::copy(buf_.img[img].data() + n * buf_.img_n, buf_.img[img].data() + n * buf_.img_n + ic * HW,
                out.data() + int64_t(n) * ic * HW);
    return out;
  }
}

}  // namespace

std::unique_ptr<Backend> make_onednn_cpu_backend(const Model& model, Precision precision, const CpuTuning& tuning) {
  if (precision == Precision::tf32 || precision == Precision::fp16)
    fail_hint(ErrorKind::invalid_argument, "use precision fp32 or auto on the CPU",
              "the CPU backend computes in float32 only; precision '", to_string(precision),
              "' needs the CUDA backend");
  return std::make_unique<OnednnCpuBackend>(model, tuning);
}

}  // namespace sg2
