// sg2: model configuration, expected tensors and validation (model.h; design.md §5).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "formats/json_util.h"
#include "sg2/error.h"
#include "sg2/model.h"
#include "util/text_util.h"

namespace sg2 {

using json = nlohmann::json;

const char* to_string(Activation a) {
  switch (a) {
    case Activation::linear:
      return "linear";
    case Activation::relu:
      return "relu";
    case Activation::lrelu:
      return "lrelu";
  }
  return "?";
}

const char* to_string(Architecture a) {
  switch (a) {
    case Architecture::orig:
      return "orig";
    case Architecture::skip:
      return "skip";
    case Architecture::resnet:
      return "resnet";
  }
  return "?";
}

bool parse_activation(const std::string& name, Activation* out) {
  for (Activation a : {Activation::linear, Activation::relu, Activation::lrelu})
    if (name == to_string(a)) {
      *out = a;
      return true;
    }
  return false;
}

bool parse_architecture(const std::string& name, Architecture* out) {
  for (Architecture a : {Architecture::orig, Architecture::skip, Architecture::resnet})
    if (name == to_string(a)) {
      *out = a;
      return true;
    }
  return false;
}

const char* version() { return "0.1.0"; }

std::vector<int> ModelConfig::block_resolutions() const {
  std::vector<int> r;
  for (int res = 4; res <= img_resolution && res > 0; res *= 2) r.push_back(res);
  return r;
}

int ModelConfig::block_height(int res) const {
  return static_cast<int>(int64_t(res) * height() / std::max(img_resolution, 1));
}
int ModelConfig::block_width(int res) const {
  return static_cast<int>(int64_t(res) * width() / std::max(img_resolution, 1));
}

int ModelConfig::channels_at(int res) const {
  auto it = synthesis.channels.find(res);
  if (it == synthesis.channels.end())
    fail(ErrorKind::invalid_argument, "no block of resolution ", res, " in this network");
  return it->second;
}

void ModelConfig::validate() const {
  auto bad = [](auto&&... a) { fail(ErrorKind::bad_file, "invalid model config: ", a...); };
  if (img_resolution < 4 || img_resolution > 4096 || (img_resolution & (img_resolution - 1)) != 0)
    bad("img_resolution ", img_resolution, " is not a power of two in [4, 4096]");
  if (img_height != 0 || img_width != 0) {
    const int h = height(), w = width();
    if (h < 1 || w < 1 || std::max(h, w) != img_resolution)
      bad("non-square image ", h, "x", w, ": its larger side must be img_resolution ", img_resolution);
    const int small = std::min(h, w);
    if (small * 2 != img_resolution && small * 4 != img_resolution && small != img_resolution)
      bad("non-square image ", h, "x", w,
          ": the smaller side must be img_resolution / 2 or / 4 (a const of 4x2, "
          "4x1, 2x4 or 1x4)");
  }
  int log2r = 0;
  while ((1 << log2r) < img_resolution) ++log2r;
  if (num_ws != 2 * log2r - 2)
    bad("num_ws ", num_ws, " does not match img_resolution ", img_resolution, " (expected ", 2 * log2r - 2, ")");
  if (z_dim < 0 || z_dim > 65536) bad("z_dim ", z_dim);
  if (c_dim < 0 || c_dim > 1 << 20) bad("c_dim ", c_dim);
  if (z_dim == 0 && c_dim == 0) bad("z_dim and c_dim are both 0");
  if (w_dim <= 0 || w_dim > 65536) bad("w_dim ", w_dim);
  if (img_channels < 1 || img_channels > 64) bad("img_channels ", img_channels);
  if (mapping.num_layers < 1 || mapping.num_layers > 64) bad("mapping.num_layers ", mapping.num_layers);
  if (!std::isfinite(mapping.lr_multiplier) || mapping.lr_multiplier <= 0)
    bad("mapping.lr_multiplier ", mapping.lr_multiplier);
  if (c_dim > 0 && (mapping.embed_features <= 0 || mapping.embed_features > 65536))
    bad("mapping.embed_features ", mapping.embed_features, " for c_dim ", c_dim);
  if (mapping.num_layers > 1 && (mapping.layer_features <= 0 || mapping.layer_features > 65536))
    bad("mapping.layer_features ", mapping.layer_features);
  for (int r : block_resolutions()) {
    auto it = synthesis.channels.find(r);
    if (it == synthesis.channels.end()) bad("no channel count for resolution ", r);
    if (it->second <= 0 || it->second > 65536) bad("channels ", it->second, " at resolution ", r);
  }
  if (synthesis.channels.size() != block_resolutions().size()) bad("channels lists resolutions that are not blocks");
  if (synthesis.conv_clamp && !(*synthesis.conv_clamp > 0 && std::isfinite(*synthesis.conv_clamp)))
    bad("conv_clamp ", *synthesis.conv_clamp, " must be positive");
  for (int r : synthesis.fp16_resolutions)
    if (!synthesis.channels.count(r)) bad("fp16 resolution ", r, " is not a block");
  if (synthesis.resample_filter.empty() || synthesis.resample_filter.size() > 64)
    bad("resample_filter has ", synthesis.resample_filter.size(), " taps");
  double sum = 0;
  for (float t : synthesis.resample_filter) {
    if (!std::isfinite(t)) bad("resample_filter has a non-finite tap");
    sum += t;
  }
  if (sum == 0) bad("resample_filter sums to 0");
}

const Tensor& Model::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) fail(ErrorKind::bad_file, "model has no tensor '", name, "'");
  return it->second;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(const ModelConfig& cfg) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> t;
  const int L = cfg.mapping.num_layers;
  const int64_t E = cfg.c_dim > 0 ? cfg.mapping.embed_features : 0;
  if (cfg.c_dim > 0) {
    t.push_back({"mapping.embed.weight", {E, cfg.c_dim}});
    t.push_back({"mapping.embed.bias", {E}});
  }
  for (int i = 0; i < L; ++i) {
    int64_t in = i == 0 ? cfg.z_dim + E : cfg.mapping.layer_features;
    int64_t out = i == L - 1 ? cfg.w_dim : cfg.mapping.layer_features;
    t.push_back({"mapping.fc" + std::to_string(i) + ".weight", {out, in}});
    t.push_back({"mapping.fc" + std::to_string(i) + ".bias", {out}});
  }
  t.push_back({"mapping.w_avg", {cfg.w_dim}});
  const auto blocks = cfg.block_resolutions();
  const bool skip = cfg.synthesis.architecture == Architecture::skip;
  const bool resnet = cfg.synthesis.architecture == Architecture::resnet;
  for (int r : blocks) {
    const std::string b = "synthesis.b" + std::to_string(r) + ".";
    const int64_t C = cfg.channels_at(r);
    const int64_t Cin = r == 4 ? 0 : cfg.channels_at(r / 2);
    const int64_t H = cfg.block_height(r), W = cfg.block_width(r);
    if (r == 4) t.push_back({b + "const", {C, H, W}});
    auto layer = [&](const std::string& name, int64_t ci) {
      t.push_back({b + name + ".weight", {C, ci, 3, 3}});
      t.push_back({b + name + ".bias", {C}});
      if (cfg.synthesis.use_noise) {
        t.push_back({b + name + ".noise_strength", {}});
        t.push_back({b + name + ".noise_const", {H, W}});
      }
      t.push_back({b + name + ".affine.weight", {ci, cfg.w_dim}});
      t.push_back({b + name + ".affine.bias", {ci}});
    };
    if (r > 4) layer("conv0", Cin);
    layer("conv1", C);
    if (skip || r == cfg.img_resolution) {
      t.push_back({b + "torgb.weight", {cfg.img_channels, C, 1, 1}});
      t.push_back({b + "torgb.bias", {cfg.img_channels}});
      t.push_back({b + "torgb.affine.weight", {C, cfg.w_dim}});
      t.push_back({b + "torgb.affine.bias", {C}});
    }
    if (resnet && r > 4) t.push_back({b + "skip.weight", {C, Cin, 1, 1}});
  }
  return t;
}

namespace detail {

std::vector<ModelProblem> shape_problems(const ModelConfig& config,
                                         const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::vector<ModelProblem> problems;
  std::vector<std::pair<std::string, std::vector<int64_t>>> expected;
  try {
    config.validate();
    expected = expected_tensors(config);
  } catch (const Error& e) {
    problems.push_back({ModelProblem::Kind::bad_shape, "config", e.what()});
    return problems;
  }
  std::set<std::string> names;
  for (const auto& [name, shape] : expected) {
    names.insert(name);
    auto it = shapes.find(name);
    if (it == shapes.end())
      problems.push_back({ModelProblem::Kind::missing, name, "missing, expected " + shape_to_string(shape)});
    else if (it->second != shape)
      problems.push_back({ModelProblem::Kind::bad_shape, name,
                          "expected " + shape_to_string(shape) + ", got " + shape_to_string(it->second)});
  }
  for (const auto& [name, shape] : shapes)
    if (!names.count(name))
      problems.push_back({ModelProblem::Kind::unexpected, name, "unexpected tensor " + shape_to_string(shape)});
  return problems;
}

void throw_model_problems(const std::vector<ModelProblem>& problems, const std::string& what) {
  if (problems.empty()) return;
  constexpr size_t kShown = 8;  // one line, however many problems a file has
  std::ostringstream os;
  os << what << ": " << problems.size() << " problem" << (problems.size() > 1 ? "s" : "") << " with the tensors: ";
  for (size_t i = 0; i < problems.size() && i < kShown; ++i)
    os << (i ? "; " : "") << detail::printable(problems[i].name, 80) << ": " << problems[i].detail;
  if (problems.size() > kShown) os << "; ... (" << problems.size() - kShown << " more)";
  throw Error(ErrorKind::bad_file, os.str());
}

}  // namespace detail

bool w_avg_finite(const Model& model) {
  auto it = model.tensors.find("mapping.w_avg");
  if (it == model.tensors.end()) return false;
  for (float v : it->second.vec())
    if (!std::isfinite(v)) return false;
  return true;
}

void require_finite_w_avg(const Model& model, float psi) {
  if (psi == 1.0f || w_avg_finite(model)) return;
  std::ostringstream p;
  p << psi;
  fail(ErrorKind::invalid_argument, "truncation psi ", p.str(),
       " needs w_avg, and this model's w_avg contains NaN or infinite values (the checkpoint's tracked average "
       "diverged?): use truncation psi 1, which never reads it, or store another w_avg with sg2 convert CHECKPOINT "
       "OUT.safetensors --w-avg W_AVG.npy");
}

std::vector<ModelProblem> validate_model(const Model& model) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, t] : model.tensors) shapes.emplace(name, t.shape());
  std::vector<ModelProblem> problems = detail::shape_problems(model.config, shapes);
  if (!problems.empty() && problems.front().name == "config") return problems;
  for (const auto& [name, shape] : expected_tensors(model.config)) {
    auto it = model.tensors.find(name);
    if (it == model.tensors.end() || it->second.shape() != shape) continue;
    if (name == "mapping.w_avg") continue;  // require_finite_w_avg checks it where truncation reads it
    for (float v : it->second.vec())
      if (!std::isfinite(v)) {
        problems.push_back({ModelProblem::Kind::bad_shape, name, "contains NaN or infinite values"});
        break;
      }
  }
  return problems;
}

void check_model(const Model& model, const std::string& what) {
  detail::throw_model_problems(validate_model(model), what);
}

int64_t parameter_count(const Model& model) {
  int64_t n = 0;
  for (const auto& entry : model.tensors) {  // (no lambda capture of a structured binding: clang < 16)
    const std::string& name = entry.first;
    auto ends_with = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends_with("w_avg") || ends_with("noise_const")) continue;
    n += entry.second.numel();
  }
  return n;
}

std::vector<NoiseLayer> noise_layers(const ModelConfig& cfg) {
  std::vector<NoiseLayer> v;
  for (int r : cfg.block_resolutions()) {
    const int h = cfg.block_height(r), w = cfg.block_width(r);
    if (r > 4) v.push_back({"synthesis.b" + std::to_string(r) + ".conv0", r, h, w});
    v.push_back({"synthesis.b" + std::to_string(r) + ".conv1", r, h, w});
  }
  return v;
}

// --- JSON ---------------------------------------------------------------------------------

namespace {
/// A float as the shortest decimal that reads back to it (0.01f -> 0.01, not 0.009999999776...).
double short_decimal(float v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}
}  // namespace

std::string config_to_json(const ModelConfig& c, int indent) {
  std::vector<double> taps;
  for (float t : c.synthesis.resample_filter) taps.push_back(short_decimal(t));
  json channels = json::object();
  for (const auto& [r, ch] : c.synthesis.channels) channels[std::to_string(r)] = ch;
  json j = {
      {"z_dim", c.z_dim},
      {"c_dim", c.c_dim},
      {"w_dim", c.w_dim},
      {"num_ws", c.num_ws},
      {"img_resolution", c.img_resolution},
      {"img_channels", c.img_channels},
      {"mapping",
       {{"num_layers", c.mapping.num_layers},
        {"lr_multiplier", short_decimal(c.mapping.lr_multiplier)},
        {"embed_features", c.mapping.embed_features},
        {"layer_features", c.mapping.layer_features},
        {"activation", to_string(c.mapping.activation)}}},
      {"synthesis",
       {{"architecture", to_string(c.synthesis.architecture)},
        {"channels", channels},
        {"conv_clamp", c.synthesis.conv_clamp ? json(short_decimal(*c.synthesis.conv_clamp)) : json(nullptr)},
        {"fp16_resolutions", c.synthesis.fp16_resolutions},
        {"resample_filter", taps},
        {"use_noise", c.synthesis.use_noise}}},
      {"w_avg_estimated", c.w_avg_estimated},
      {"noise_const_missing", c.noise_const_missing},
  };
  if (!c.square()) {  // square configs keep their format_version 1 text exactly
    j["img_height"] = c.height();
    j["img_width"] = c.width();
  }
  return detail::json_dump(j, indent);
}

namespace {
const json& field(const json& j, const char* key, const std::string& what, const char* where) {
  if (!j.is_object() || !j.contains(key)) fail(ErrorKind::bad_file, what, ": model config has no '", where, key, "'");
  return j.at(key);
}

/// An integer field; every one is range-checked (no silent wrap-around: 4294967298 is not 2,
/// 2^64-1 is not -1). validate() applies each field's own range afterwards.
int int_field(const json& j, const char* key, const std::string& what, const char* where) {
  const json& v = field(j, key, what, where);
  const auto i = detail::json_int(v, -(int64_t(1) << 30), int64_t(1) << 30);
  if (!i)
    fail(ErrorKind::bad_file, what, ": model config field '", where, key,
         "' is not an integer in range: ", detail::json_brief(v));
  return static_cast<int>(*i);
}

template <typename T>
T get_field(const json& j, const char* key, const std::string& what, const char* where) {
  const json& v = field(j, key, what, where);
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    fail(ErrorKind::bad_file, what, ": model config field '", where, key,
         "' has the wrong type: ", detail::json_brief(v));
  }
}
}  // namespace

ModelConfig config_from_json(const std::string& text, const std::string& what) {
  const json j = detail::parse_json_bounded(text, what + ": model config");
  if (!j.is_object()) fail(ErrorKind::bad_file, what, ": model config is not a JSON object");
  ModelConfig c;
  c.z_dim = int_field(j, "z_dim", what, "");
  c.c_dim = int_field(j, "c_dim", what, "");
  c.w_dim = int_field(j, "w_dim", what, "");
  c.num_ws = int_field(j, "num_ws", what, "");
  c.img_resolution = int_field(j, "img_resolution", what, "");
  c.img_channels = int_field(j, "img_channels", what, "");
  if (j.contains("img_height") || j.contains("img_width")) {
    c.img_height = int_field(j, "img_height", what, "");
    c.img_width = int_field(j, "img_width", what, "");
    if (c.img_height < 1 || c.img_width < 1)
      fail(ErrorKind::bad_file, what, ": model config: img_height ", c.img_height, " / img_width ", c.img_width,
           " must both be positive");
    if (c.img_height == c.img_width) c.img_height = c.img_width = 0;  // square: the plain form
  }
  const json& m = field(j, "mapping", what, "");
  c.mapping.num_layers = int_field(m, "num_layers", what, "mapping.");
  c.mapping.lr_multiplier = get_field<float>(m, "lr_multiplier", what, "mapping.");
  c.mapping.embed_features = int_field(m, "embed_features", what, "mapping.");
  c.mapping.layer_features = int_field(m, "layer_features", what, "mapping.");
  const std::string activation = get_field<std::string>(m, "activation", what, "mapping.");
  if (!parse_activation(activation, &c.mapping.activation))
    fail(ErrorKind::bad_file, what, ": model config: unsupported mapping activation '",
         detail::printable(activation, 24), "'");
  const json& s = field(j, "synthesis", what, "");
  const std::string architecture = get_field<std::string>(s, "architecture", what, "synthesis.");
  if (!parse_architecture(architecture, &c.synthesis.architecture))
    fail(ErrorKind::bad_file, what, ": model config: unknown architecture '", detail::printable(architecture, 24), "'");
  const json& ch = field(s, "channels", what, "synthesis.");
  if (!ch.is_object())
    fail(ErrorKind::bad_file, what, ": synthesis.channels is not an object but ", detail::json_brief(ch));
  for (auto it = ch.begin(); it != ch.end(); ++it) {
    const std::string& key = it.key();
    int r = 0;
    const auto res = std::from_chars(key.data(), key.data() + key.size(), r);
    if (key.empty() || res.ec != std::errc() || res.ptr != key.data() + key.size() || r < 1 || r > (1 << 30))
      fail(ErrorKind::bad_file, what, ": synthesis.channels key '", detail::printable(key, 24),
           "' is not a resolution");
    const auto n = detail::json_int(it.value(), -(int64_t(1) << 30), int64_t(1) << 30);
    if (!n)
      fail(ErrorKind::bad_file, what, ": synthesis.channels[", r,
           "] is not an integer in range: ", detail::json_brief(it.value()));
    c.synthesis.channels[r] = static_cast<int>(*n);
  }
  const json& clamp = field(s, "conv_clamp", what, "synthesis.");
  if (clamp.is_null())
    c.synthesis.conv_clamp.reset();
  else if (clamp.is_number())
    c.synthesis.conv_clamp = clamp.get<float>();
  else
    fail(ErrorKind::bad_file, what, ": synthesis.conv_clamp must be a number or null, not ", detail::json_brief(clamp));
  const json& fp16 = field(s, "fp16_resolutions", what, "synthesis.");
  if (!fp16.is_array())
    fail(ErrorKind::bad_file, what, ": synthesis.fp16_resolutions is not a list but ", detail::json_brief(fp16));
  for (const json& v : fp16) {
    const auto r = detail::json_int(v, 1, int64_t(1) << 30);
    if (!r)
      fail(ErrorKind::bad_file, what, ": synthesis.fp16_resolutions holds ", detail::json_brief(v),
           ", not a resolution");
    c.synthesis.fp16_resolutions.push_back(static_cast<int>(*r));
  }
  c.synthesis.resample_filter = get_field<std::vector<float>>(s, "resample_filter", what, "synthesis.");
  c.synthesis.use_noise = get_field<bool>(s, "use_noise", what, "synthesis.");
  c.w_avg_estimated = j.contains("w_avg_estimated") ? get_field<bool>(j, "w_avg_estimated", what, "") : false;
  c.noise_const_missing =
      j.contains("noise_const_missing") ? get_field<bool>(j, "noise_const_missing", what, "") : false;
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(ErrorKind::bad_file, what + ": " + e.message(), e.hint());
  }
  return c;
}

}  // namespace sg2
