// sg2 formats: network blending (sg2/blend.h).
#include "sg2/blend.h"

#include <cmath>

#include "sg2/error.h"

namespace sg2 {

namespace {

bool power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

int log2_int(int v) {
  int k = 0;
  while ((1 << k) < v) ++k;
  return k;
}

/// The block resolution and level of a synthesis tensor name ("synthesis.b8.conv0.weight"); false
/// for a name outside the synthesis blocks.
bool layer_of(const std::string& name, int* res, int* level, bool* noise_map) {
  const std::string prefix = "synthesis.b";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  size_t p = prefix.size();
  int r = 0;
  while (p < name.size() && name[p] >= '0' && name[p] <= '9' && r < (1 << 20)) r = r * 10 + (name[p++] - '0');
  if (p >= name.size() || name[p] != '.') return false;
  const std::string rest = name.substr(p + 1);
  auto starts = [&](const char* s) { return rest.compare(0, std::char_traits<char>::length(s), s) == 0; };
  if (starts("const") || starts("conv0.") || starts("skip.")) {
    *level = 0;
  } else if (starts("conv1.") || starts("torgb.")) {
    *level = 1;
  } else {
    return false;
  }
  *res = r;
  *noise_map = rest.size() >= 12 && rest.compare(rest.size() - 12, 12, ".noise_const") == 0;
  return true;
}

double share(const BlendOptions& o, int res, int level) {
  const int x = 2 * log2_int(res / 4) + level - 2 * log2_int(o.at / 4);
  if (!o.width) return x >= 0 ? 1.0 : 0.0;
  return 1.0 / (1.0 + std::exp(-double(x) / *o.width));
}

void check_options(const ModelConfig& cfg, const BlendOptions& o) {
  if (!power_of_two(o.at) || o.at < 4 || o.at > 2 * cfg.img_resolution)
    fail(ErrorKind::invalid_argument, "--at ", o.at, ": the switch resolution must be a power of two from 4 to ",
         2 * cfg.img_resolution, " (", cfg.img_resolution, " is these networks' top block; ", 2 * cfg.img_resolution,
         " takes every block from the low network)");
  if (o.width && !(std::isfinite(*o.width) && *o.width > 0))
    fail(ErrorKind::invalid_argument, "--blend-width ", *o.width, ": must be a positive finite number");
}

std::string floats(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + detail::concat(v[i]);
  return s + "]";
}

}  // namespace

std::vector<BlendLayer> blend_layers(const ModelConfig& config, const BlendOptions& options) {
  check_options(config, options);
  std::vector<BlendLayer> out;
  for (int r : config.block_resolutions())
    for (int level = 0; level < 2; ++level) out.push_back({r, level, share(options, r, level)});
  return out;
}

Model blend_models(const Model& low, const Model& high, const BlendOptions& options) {
  const ModelConfig& a = low.config;
  const ModelConfig& b = high.config;
  const std::string both = "cannot blend " + options.low_what + " (low) and " + options.high_what + " (high): ";
  auto differ = [&](const char* what, const std::string& va, const std::string& vb) {
    if (va != vb) fail(ErrorKind::invalid_argument, both, what, " ", va, " vs ", vb);
  };
  differ("z_dim", std::to_string(a.z_dim), std::to_string(b.z_dim));
  differ("w_dim", std::to_string(a.w_dim), std::to_string(b.w_dim));
  differ("img_resolution", std::to_string(a.img_resolution), std::to_string(b.img_resolution));
  auto image = [](const ModelConfig& c) {
    return std::to_string(c.width()) + "x" + std::to_string(c.height()) + (c.square() ? "" : " (non-square)");
  };
  differ("image size (width x height)", image(a), image(b));
  differ("num_ws", std::to_string(a.num_ws), std::to_string(b.num_ws));
  differ("img_channels", std::to_string(a.img_channels), std::to_string(b.img_channels));
  differ("architecture", to_string(a.synthesis.architecture), to_string(b.synthesis.architecture));
  for (int r : a.block_resolutions())
    if (a.channels_at(r) != b.channels_at(r))
      fail(ErrorKind::invalid_argument, both, "block ", r, "x", r, " has ", a.channels_at(r), " vs ", b.channels_at(r),
           " channels");
  differ("conv_clamp", a.synthesis.conv_clamp ? detail::concat(*a.synthesis.conv_clamp) : "none",
         b.synthesis.conv_clamp ? detail::concat(*b.synthesis.conv_clamp) : "none");
  differ("resample_filter", floats(a.synthesis.resample_filter), floats(b.synthesis.resample_filter));
  differ("use_noise", a.synthesis.use_noise ? "true" : "false", b.synthesis.use_noise ? "true" : "false");
  check_options(a, options);

  Model out;
  out.config = a;
  out.provenance = low.provenance;
  out.provenance.source_file = "blend of " + low.provenance.source_file + " (low) and " + high.provenance.source_file +
                               " (high) at " + std::to_string(options.at);
  out.provenance.source_sha256.clear();
  if (low.provenance.source_family != high.provenance.source_family) out.provenance.source_family.clear();
  out.config.noise_const_missing = a.noise_const_missing && b.noise_const_missing;
  // fp16 blocks (precision auto) follow the block's first layer
  out.config.synthesis.fp16_resolutions.clear();
  for (int r : a.block_resolutions()) {
    const ModelConfig& from = share(options, r, 0) >= 0.5 ? b : a;
    for (int f : from.synthesis.fp16_resolutions)
      if (f == r) out.config.synthesis.fp16_resolutions.push_back(r);
  }
  for (const auto& [name, ta] : low.tensors) {
    int res = 0, level = 0;
    bool noise_map = false;
    if (!layer_of(name, &res, &level, &noise_map)) {  // mapping, w_avg: the low network's
      out.tensors.emplace(name, ta);
      continue;
    }
    const Tensor& tb = high.at(name);
    if (tb.shape() != ta.shape())
      fail(ErrorKind::invalid_argument, both, "tensor ", name, " is ", ta.shape_str(), " vs ", tb.shape_str());
    const double y = share(options, res, level);
    if (y == 0.0 || (noise_map && y < 0.5)) {
      out.tensors.emplace(name, ta);
    } else if (y == 1.0 || noise_map) {
      out.tensors.emplace(name, tb);
    } else {
      const float yf = static_cast<float>(y);
      const float ya = 1.0f - yf;
      Tensor t(ta.shape());
      for (int64_t i = 0; i < t.numel(); ++i) {
        const float hb = tb[i] * yf;
        const float la = ta[i] * ya;
        t[i] = hb + la;
      }
      out.tensors.emplace(name, std::move(t));
    }
  }
  return out;
}

}  // namespace sg2
