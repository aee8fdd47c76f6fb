// sg2: the CPU reference backend — the official generator in plain float32 C++
// (official training/networks_stylegan2.py Generator / MappingNetwork / SynthesisNetwork,
// run as its reference ops do; spec §1-§6).
#include <cmath>
#include <cstdlib>
#include <map>

#include "engine/backend.h"
#include "util/cpu_threads.h"
#include "util/file_util.h"
#include "util/host_memory.h"
#include "util/text_util.h"
#if SG2_WITH_ONEDNN
#include "engine/cpu/executor.h"
#endif
#include "engine/cpu_tuning.h"
#include "engine/plan.h"
#include "kernels/ref/bias_act.h"
#include "kernels/ref/fully_connected.h"
#include "kernels/ref/modulated_conv2d.h"
#include "kernels/ref/upfirdn2d.h"
#include "sg2/error.h"
#include "sg2/npy.h"

namespace sg2 {

int64_t reference_cpu_bytes_per_image(const ModelConfig& cfg) {
  // The reference backend's live buffers per sample at its peak, block by block: the block input,
  // the transposed convolution's output and the filtered result of conv0, the per-sample modulated
  // weights, and the image path (skip image, its upsampled copy, ToRGB output), float32; plus the
  // output image the caller keeps. Checked against the peak RSS of `sg2 generate --device cpu`
  // (batch 4 minus batch 1, per image): 512 px, channels 64..8: 31.5 MB measured, 36.8 MB
  // estimated; 256 px, channels 256..64: 47.0 MB measured, 46.5 MB estimated.
  int64_t peak = 0;
  for (int r : cfg.block_resolutions()) {
    const int64_t c = cfg.channels_at(r), cin = r == 4 ? c : cfg.channels_at(r / 2);
    const int64_t h = cfg.block_height(r), w = cfg.block_width(r);
    const int64_t rr = h * w, r1 = (h + 1) * (w + 1);
    const int64_t floats = cin * (rr / 4) + 2 * c * r1 + 9 * c * cin + 3 * int64_t(cfg.img_channels) * rr;
    peak = std::max(peak, floats);
  }
  const int64_t out = int64_t(cfg.img_channels) * cfg.height() * cfg.width();
  return 4 * (peak + 2 * out);
}

namespace {

using ref::Activation;

/// Rows [0, cutoff) of ws [N, num_ws, w_dim] lerped toward w_avg, as torch's lerp on CPU:
/// a + t*(b - a) when |t| < 0.5, else b - (b - a)*(1 - t), each one fused multiply-add.
void truncate_lerp(Tensor& ws, const Tensor& w_avg, const Truncation& t) {
  if (t.psi == 1.0f) return;
  const int64_t N = ws.dim(0), R = ws.dim(1), D = ws.dim(2);
  const int64_t rows = t.cutoff ? std::min<int64_t>(*t.cutoff, R) : R;
  const float psi = t.psi;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < D; ++j) {
        float& b = ws[(n * R + r) * D + j];
        const float a = w_avg[j];
        const float diff = b - a;
        b = std::fabs(psi) < 0.5f ? std::fma(psi, diff, a) : std::fma(-diff, 1.0f - psi, b);
      }
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Model& model, Precision precision) : model_(model), cfg_(model.config) {
    if (precision == Precision::tf32 || precision == Precision::fp16)
      fail_hint(ErrorKind::invalid_argument, "use precision fp32 or auto on the CPU",
                "the CPU backend computes in float32 only; precision '", to_string(precision),
                "' needs the CUDA backend");
    plan_ = make_synthesis_plan(cfg_);
    switch (cfg_.mapping.activation) {
      case sg2::Activation::linear:
        act_ = Activation::linear;
        break;
      case sg2::Activation::relu:
        act_ = Activation::relu;
        break;
      case sg2::Activation::lrelu:
        act_ = Activation::lrelu;
        break;
    }
  }

  std::string name() const override { return "cpu (reference ops)"; }
  std::unique_ptr<BatchPipe> make_pipe(int batch, PipeOutputs out, int slots) override {
    return make_host_pipe(*this, cfg_, batch, out, slots);
  }
  int preferred_batch() const override { return 8; }
  int64_t bytes_per_image() const override { return reference_cpu_bytes_per_image(cfg_); }
  int64_t memory_available() const override { return detail::host_memory_available(); }
  std::string memory_name() const override { return "host memory"; }

  Tensor map(const Tensor& z, const Tensor& c, const Truncation& trunc, const std::string& dump_dir) override {
    if (!dump_dir.empty()) detail::make_dirs(dump_dir);
    const int64_t N = z.dim(0);
    Tensor x;
    if (cfg_.z_dim > 0) x = ref::normalize_2nd_moment(z);
    if (cfg_.c_dim > 0) {
      const float gain = static_cast<float>(1.0 / std::sqrt(double(cfg_.c_dim)));
      Tensor e = ref::fully_connected(c, model_.at("mapping.embed.weight"), &model_.at("mapping.embed.bias"), gain,
                                      1.0f, Activation::linear);
      Tensor y = ref::normalize_2nd_moment(e);
      if (x.empty()) {
        x = y;
      } else {  // concat along features, z part first
        const int64_t A = x.dim(1), B = y.dim(1);
        Tensor cat({N, A + B});
        for (int64_t n = 0; n < N; ++n) {
          std::copy(x.data() + n * A, x.data() + (n + 1) * A, cat.data() + n * (A + B));
          std::copy(y.data() + n * B, y.data() + (n + 1) * B, cat.data() + n * (A + B) + A);
        }
        x = std::move(cat);
      }
    }
    const float lr = cfg_.mapping.lr_multiplier;
    for (int i = 0; i < cfg_.mapping.num_layers; ++i) {
      const std::string p = "mapping.fc" + std::to_string(i);
      const Tensor& w = model_.at(p + ".weight");
      const float weight_gain = static_cast<float>(double(lr) / std::sqrt(double(w.dim(1))));
      x = ref::fully_connected(x, w, &model_.at(p + ".bias"), weight_gain, lr, act_);
      if (!dump_dir.empty()) write_npy(dump_dir + "/mapping_fc" + std::to_string(i) + ".npy", x);
    }
    Tensor ws({N, cfg_.num_ws, cfg_.w_dim});
    for (int64_t n = 0; n < N; ++n)
      for (int k = 0; k < cfg_.num_ws; ++k)
        std::copy(x.data() + n * cfg_.w_dim, x.data() + (n + 1) * cfg_.w_dim,
                  ws.data() + (n * cfg_.num_ws + k) * cfg_.w_dim);
    truncate_lerp(ws, model_.at("mapping.w_avg"), trunc);
    return ws;
  }

  Tensor styles(const Tensor& ws) override {  // the layers' styles(), as layer() computes them
    const int64_t N = ws.dim(0);
    std::vector<Tensor> parts;
    int64_t total = 0;
    auto add = [&](const LayerPlan& l) {
      parts.push_back(styles(l, ws));
      total += parts.back().dim(1);
    };
    for (const BlockPlan& b : plan_.blocks) {
      if (b.conv0) add(*b.conv0);
      add(b.conv1);
      if (b.torgb) add(*b.torgb);
    }
    Tensor out({N, total});
    int64_t col = 0;
    for (const Tensor& p : parts) {
      const int64_t d = p.dim(1);
      for (int64_t n = 0; n < N; ++n) std::copy(p.data() + n * d, p.data() + (n + 1) * d, out.data() + n * total + col);
      col += d;
    }
    return out;
  }

  Tensor synthesize(const Tensor& ws, const NoiseSpec& noise, const std::string& dump_dir) override {
    const int64_t N = ws.dim(0);
    if (!dump_dir.empty()) detail::make_dirs(dump_dir);
    Tensor x, img;
    for (const BlockPlan& b : plan_.blocks) {
      const std::string tag = "b" + std::to_string(b.resolution);
      if (b.in_channels == 0) {  // const input repeated over the batch
        const Tensor& c = model_.at("synthesis.b4.const");
        x = Tensor({N, c.dim(0), c.dim(1), c.dim(2)});
        for (int64_t n = 0; n < N; ++n) std::copy(c.vec().begin(), c.vec().end(), x.data() + n * c.numel());
        x = layer(b.conv1, x, ws, noise);
      } else if (b.skip) {
        Tensor y = skip(*b.skip, x);
        x = layer(*b.conv0, x, ws, noise);
        x = layer(b.conv1, x, ws, noise);
        for (int64_t i = 0; i < x.numel(); ++i) x[i] = y[i] + x[i];
      } else {
        x = layer(*b.conv0, x, ws, noise);
        x = layer(b.conv1, x, ws, noise);
      }
      if (!img.empty()) img = ref::upsample2d(img, plan_.filter, plan_.filter_size);
      if (b.torgb) {
        Tensor y = layer(*b.torgb, x, ws, noise);
        if (img.empty()) {
          img = std::move(y);
        } else {
          for (int64_t i = 0; i < img.numel(); ++i) img[i] = img[i] + y[i];
        }
      }
      if (!dump_dir.empty()) {
        write_npy(dump_dir + "/" + tag + "_x.npy", x);
        if (!img.empty()) write_npy(dump_dir + "/" + tag + "_img.npy", img);
      }
    }
    return img;
  }

 private:
  /// Styles [N, in] = affine(ws[:, row]) (FullyConnectedLayer, linear, bias_init 1) * style_gain.
  Tensor styles(const LayerPlan& l, const Tensor& ws) const {
    const int64_t N = ws.dim(0), R = ws.dim(1), D = ws.dim(2);
    Tensor w({N, D});
    for (int64_t n = 0; n < N; ++n)
      std::copy(ws.data() + (n * R + l.w_index) * D, ws.data() + (n * R + l.w_index + 1) * D, w.data() + n * D);
    const Tensor& aw = model_.at(l.name + ".affine.weight");
    const float gain = static_cast<float>(1.0 / std::sqrt(double(aw.dim(1))));
    Tensor s = ref::fully_connected(w, aw, &model_.at(l.name + ".affine.bias"), gain, 1.0f, Activation::linear);
    if (l.style_gain != 1.0f)
      for (auto& v : s.vec()) v = v * l.style_gain;
    return s;
  }

  /// One SynthesisLayer (conv0 / conv1) or ToRGBLayer.
  Tensor layer(const LayerPlan& l, const Tensor& x, const Tensor& ws, const NoiseSpec& noise) const {
    Tensor s = styles(l, ws);
    ref::ModConvArgs a;
    a.up = l.up;
    a.demodulate = l.demodulate;
    a.padding = l.kind == LayerPlan::Kind::torgb ? 0 : 1;
    a.flip_weight = l.up == 1;
    Tensor y = ref::modulated_conv2d(x, model_.at(l.name + ".weight"), s, plan_.filter, plan_.filter_size, a);
    if (l.noise_index >= 0 && noise.mode != NoiseMode::none) add_noise(l, y, noise);
    const Activation act = l.kind == LayerPlan::Kind::torgb ? Activation::linear : Activation::lrelu;
    return ref::bias_act(y, &model_.at(l.name + ".bias"), 1, act, {}, l.act_gain, l.clamp);
  }

  /// y += noise_strength * noise, broadcast over channels (const map, given map, or random).
  void add_noise(const LayerPlan& l, Tensor& y, const NoiseSpec& noise) const {
    const int64_t N = y.dim(0), C = y.dim(1), HW = y.dim(2) * y.dim(3);
    const float strength = model_.at(l.name + ".noise_strength")[0];
    for (int64_t n = 0; n < N; ++n) {
      Tensor map_n;
      const Tensor* m = nullptr;
      if (noise.mode == NoiseMode::random) {
        map_n = random_noise_map(noise.seed, noise.keys[static_cast<size_t>(n)], l.noise_index, l.height, l.width);
        m = &map_n;
      } else if (!noise.maps.empty()) {
        m = &noise.maps[static_cast<size_t>(n)][static_cast<size_t>(l.noise_index)];
      } else {
        m = &model_.at(l.name + ".noise_const");
      }
      // The official code multiplies the map by noise_strength first, then adds.
      std::vector<float> scaled(static_cast<size_t>(HW));
      for (int64_t i = 0; i < HW; ++i) scaled[static_cast<size_t>(i)] = (*m)[i] * strength;
      for (int64_t c = 0; c < C; ++c) {
        float* p = y.data() + (n * C + c) * HW;
        for (int64_t i = 0; i < HW; ++i) p[i] = p[i] + scaled[static_cast<size_t>(i)];
      }
    }
  }

  /// resnet skip: 1x1 conv with weight * weight_gain, FIR upsample (pad 2,1; gain 4), * sqrt(1/2).
  Tensor skip(const LayerPlan& l, const Tensor& x) const {
    Tensor w = model_.at(l.name + ".weight");
    for (auto& v : w.vec()) v = v * l.weight_gain;
    Tensor y = ref::conv2d(x, w, 0, true);
    y = ref::upsample2d(y, plan_.filter, plan_.filter_size);
    return ref::bias_act(y, nullptr, 1, Activation::linear, {}, l.act_gain, l.clamp);
  }

  const Model& model_;
  const ModelConfig& cfg_;
  SynthesisPlan plan_;
  Activation act_;
};

}  // namespace

namespace {
bool env_switch(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0' || std::string(v) == "0") return false;
  if (std::string(v) == "1") return true;
  fail(ErrorKind::invalid_argument, name, "='", detail::printable(v),
       "' is not a switch: set it to 1 or 0 (or unset it)");
}
}  // namespace

CpuTuning CpuTuning::resolve(int requested_threads, bool reference) {
  CpuTuning t;
  t.threads = detail::cpu_thread_count(requested_threads);
  t.reference = reference || env_switch("SG2_CPU_REFERENCE");
  t.profile = env_switch("SG2_CPU_PROFILE");
  return t;
}

std::unique_ptr<Backend> make_cpu_backend(const Model& model, Precision precision, int threads, bool reference) {
  [[maybe_unused]] const CpuTuning tuning =
      CpuTuning::resolve(threads, reference);  // validates the environment in every build
#if SG2_WITH_ONEDNN
  if (!tuning.reference) return make_onednn_cpu_backend(model, precision, tuning);
#endif
  return std::make_unique<CpuBackend>(model, precision);
}

}  // namespace sg2
