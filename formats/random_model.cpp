// sg2: seeded random models (random_model.h).
#include "sg2/random_model.h"

#include <cmath>

#include "sg2/error.h"

namespace sg2 {

ModelConfig make_config(int res, int channel_base, int channel_max, int z_dim, int w_dim, int c_dim, int img_channels,
                        int mapping_layers, Architecture architecture, std::optional<float> conv_clamp,
                        int num_fp16_res) {
  ModelConfig c;
  c.z_dim = z_dim;
  c.c_dim = c_dim;
  c.w_dim = w_dim;
  c.img_resolution = res;
  c.img_channels = img_channels;
  int log2r = 0;
  while ((1 << log2r) < res) ++log2r;
  c.num_ws = 2 * log2r - 2;
  c.mapping.num_layers = mapping_layers;
  c.mapping.embed_features = c_dim > 0 ? w_dim : 0;
  c.mapping.layer_features = w_dim;
  c.synthesis.architecture = architecture;
  c.synthesis.conv_clamp = conv_clamp;
  const int fp16_res = std::max(1 << std::max(log2r + 1 - num_fp16_res, 0), 8);
  for (int r : c.block_resolutions()) {
    c.synthesis.channels[r] = std::min(channel_base / r, channel_max);
    if (num_fp16_res > 0 && r >= fp16_res) c.synthesis.fp16_resolutions.push_back(r);
  }
  c.validate();
  return c;
}

ModelConfig named_config(const std::string& name) {
  if (name == "ffhq1024-f") return make_config(1024, 32768, 512, 512, 512, 0, 3, 8, Architecture::skip, 256.0f, 4);
  if (name == "paper512") return make_config(512, 32768, 512, 512, 512, 0, 3, 8, Architecture::skip, 256.0f, 4);
  if (name == "paper256") return make_config(256, 16384, 512, 512, 512, 0, 3, 8, Architecture::skip, 256.0f, 4);
  fail(ErrorKind::invalid_argument, "unknown config '", name, "' (expected ffhq1024-f, paper512 or paper256)");
}

namespace {
// Deterministic normal draws: splitmix64 stream + Box-Muller (portable across standard libraries).
struct Normal {
  uint64_t state;
  bool has = false;
  double cached = 0;
  explicit Normal(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ull + 0x1234567ull) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double operator()() {
    if (has) {
      has = false;
      return cached;
    }
    double u1 = (double(next() >> 11) + 1.0) / 9007199254740992.0;
    double u2 = double(next() >> 11) / 9007199254740992.0;
    double r = std::sqrt(-2.0 * std::log(u1));
    cached = r * std::sin(6.283185307179586 * u2);
    has = true;
    return r * std::cos(6.283185307179586 * u2);
  }
};

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}
}  // namespace

Model make_random_model(const ModelConfig& config, uint64_t seed) {
  config.validate();
  Model m;
  m.config = config;
  m.provenance.source_family = "random";
  m.provenance.source_file = "random seed " + std::to_string(seed);
  Normal rnd(seed);
  for (const auto& [name, shape] : expected_tensors(config)) {
    Tensor t(shape);
    const bool mapping_fc = name.rfind("mapping.fc", 0) == 0;
    const bool affine = name.find(".affine.") != std::string::npos;
    if (ends_with(name, ".weight")) {
      const double scale = mapping_fc ? 1.0 / config.mapping.lr_multiplier : 1.0;
      for (auto& v : t.vec()) v = static_cast<float>(rnd() * scale);
    } else if (ends_with(name, ".bias")) {
      for (auto& v : t.vec()) v = affine ? 1.0f : static_cast<float>(0.1 * rnd());
    } else if (ends_with(name, "noise_strength")) {
      t[0] = static_cast<float>(0.3 * rnd());
    } else if (ends_with(name, "w_avg")) {
      for (auto& v : t.vec()) v = static_cast<float>(0.5 * rnd());
    } else {  // const, noise_const
      for (auto& v : t.vec()) v = static_cast<float>(rnd());
    }
    m.tensors.emplace(name, std::move(t));
  }
  return m;
}

}  // namespace sg2
