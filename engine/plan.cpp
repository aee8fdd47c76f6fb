// sg2: the synthesis plan (plan.h).
#include "engine/plan.h"

#include <cmath>

#include "sg2/error.h"

namespace sg2 {

std::vector<float> make_filter2d(const std::vector<float>& taps) {
  const size_t n = taps.size();
  std::vector<float> f(n * n);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      f[i * n + j] = taps[i] * taps[j];
    }
  double s = 0;
  for (float v : f) s += v;
  sum = static_cast<float>(s);
  if (sum == 0.0f) fail(ErrorKind::invalid_argument, "resample filter sums to 0");
  for (float& v : f) v /= sum;
  return f;
}

SynthesisPlan make_synthesis_plan(const ModelConfig& cfg) {
  cfg.validate();
  SynthesisPlan plan;
  plan.architecture = cfg.synthesis.architecture;
  plan.filter = make_filter2d(cfg.synthesis.resample_filter);
  plan.filter_size = static_cast<int>(cfg.synthesis.resample_filter.size());
  {
    double s1 = 0;
    for (float t : cfg.synthesis.resample_filter) s1 += t;
    for (float t : cfg.synthesis.resample_filter) plan.filter1d.push_back(static_cast<float>(t / s1));
  }
  const bool skip_arch = plan.architecture == Architecture::skip;
  const bool resnet = plan.architecture == Architecture::resnet;
  const float sqrt_half = static_cast<float>(std::sqrt(0.5));
  int w_idx = 0;
  int noise_idx = 0;
  for (int r : cfg.block_resolutions()) {
    BlockPlan b;
    b.resolution = r;
    b.height = cfg.block_height(r);
    b.width = cfg.block_width(r);
    b.in_channels = r == 4 ? 0 : cfg.channels_at(r / 2);
    b.out_channels = cfg.channels_at(r);
    b.is_last = r == cfg.img_resolution;
    for (int f : cfg.synthesis.fp16_resolutions) b.fp16 |= f == r;
    const std::string prefix = "synthesis.b" + std::to_string(r) + ".";
    int row = w_idx;
    auto conv = [&](const std::string& nm, int cin, int up, float gain) {
      LayerPlan l;
      l.kind = LayerPlan::Kind::conv;
      l.name = prefix + nm;
      l.resolution = r;
      l.height = b.height;
      l.width = b.width;
      l.in_channels = cin;
      l.out_channels = b.out_channels;
      l.up = up;
      l.w_index = row++;
      l.demodulate = true;
      // official: act_gain = def_gain(lrelu) * gain, computed in float64, applied as float32
      l.act_gain = static_cast<float>(std::sqrt(2.0) * (gain == 1.0f ? 1.0 : std::sqrt(0.5)));
      if (cfg.synthesis.conv_clamp)
        l.clamp = static_cast<float>(double(*cfg.synthesis.conv_clamp) * (gain == 1.0f ? 1.0 : std::sqrt(0.5)));
      if (cfg.synthesis.use_noise) l.noise_index = noise_idx++;
      return l;
    };
    if (r > 4) b.conv0 = conv("conv0", b.in_channels, 2, 1.0f);
    b.conv1 = conv("conv1", b.out_channels, 1, resnet && r > 4 ? sqrt_half : 1.0f);
    const int num_conv = r > 4 ? 2 : 1;
    if (skip_arch || b.is_last) {
      LayerPlan t;
      t.kind = LayerPlan::Kind::torgb;
      t.name = prefix + "torgb";
      t.resolution = r;
      t.height = b.height;
      t.width = b.width;
      t.in_channels = b.out_channels;
      t.out_channels = cfg.img_channels;
      t.w_index = w_idx + num_conv;
      t.demodulate = false;
      t.act_gain = 1.0f;
      t.clamp = cfg.synthesis.conv_clamp;
      t.style_gain = static_cast<float>(1.0 / std::sqrt(double(b.out_channels)));
      b.torgb = t;
    }
    if (resnet && r > 4) {
      LayerPlan s;
      s.kind = LayerPlan::Kind::skip;
      s.name = prefix + "skip";
      s.resolution = r;
      s.height = b.height;
      s.width = b.width;
      s.in_channels = b.in_channels;
      s.out_channels = b.out_channels;
      s.up = 2;
      s.demodulate = false;
      s.act_gain = sqrt_half;
      s.weight_gain = static_cast<float>(1.0 / std::sqrt(double(b.in_channels)));
      b.skip = s;
    }
    w_idx += num_conv;
    plan.blocks.push_back(std::move(b));
  }
  if (w_idx + 1 != cfg.num_ws) fail(ErrorKind::internal, "plan uses ", w_idx + 1, " ws rows, config says ", cfg.num_ws);
  return plan;
}

}  // namespace sg2
