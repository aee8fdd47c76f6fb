// sg2 readers: stylegan2-ada-pytorch and stylegan3-repo StyleGAN2 generators (spec §7a).
//
// The generator is a tree of `torch_utils.persistence` objects (or, in re-pickled files, plain
// module objects) whose `state` is the module's __dict__. Tensor names are the official
// state-dict names already (flattened `_modules` paths + `_parameters` / `_buffers`), so the name
// map of this family is the identity, minus the `resample_filter` buffers (their taps go into the
// config). The configuration is derived from tensor shapes and the per-module attributes
// (`use_fp16` on each SynthesisBlock, `conv_clamp` on each layer, `bias_gain` / `weight_gain` of
// the mapping layers, ...), which every variant carries, and never from `_init_kwargs` alone
// (stylegan3-repo pickles leave conv_clamp and num_fp16_res out of them).
#include <cmath>
#include <map>
#include <unordered_map>

#include "readers/families.h"
#include "readers/numpy_decode.h"
#include "readers/pickle_access.h"
#include "sg2/error.h"

namespace sg2::readers {

using pickle::Node;

namespace {

/// One network module: its attribute dict and class name.
struct Mod {
  const Node* state = nullptr;
  std::string cls;
};

std::optional<Mod> as_module(const Node* n) {
  if (pickle::is_call(n, "torch_utils.persistence._reconstruct_persistent_obj")) {
    const auto& a = pickle::call_args(n);
    const Node* meta = a.empty() ? nullptr : a[0];
    const Node* state = pickle::dict_get(meta, "state");
    auto cls = pickle::as_str(pickle::dict_get(meta, "class_name"));
    if (state == nullptr || !cls || !pickle::is_dict_like(state)) return std::nullopt;
    return Mod{state, std::string(*cls)};
  }
  // A module pickled the plain way: NEWOBJ(cls) + BUILD(__dict__).
  if (n != nullptr && n->kind == pickle::Kind::object && n->state != nullptr &&
      pickle::dict_get(n->state, "_modules") != nullptr) {
    std::string cls = n->callable && n->callable->kind == pickle::Kind::global ? std::string(n->callable->s2) : "?";
    return Mod{n->state, cls};
  }
  return std::nullopt;
}

struct Flat {
  std::map<std::string, Mod> modules;                 // "" = the generator, "synthesis.b4", ...
  std::map<std::string, const Node*> tensors;         // official state-dict names
  std::unordered_map<const Node*, std::string> seen;  // module state -> its path (each visited once)
};

/// Walks the module tree once per module. A pickle's memo lets one module appear under many
/// names (and a tree of such references grows exponentially with depth: ten references per level,
/// five levels, 10^5 paths); a StyleGAN2 generator never shares a module, so a second visit is an
/// error, and every name is charged to the file's memory budget.
void flatten(const Mod& m, const std::string& prefix, int depth, Flat& flat, Checkpoint& ck, const std::string& what) {
  if (depth > 10) fail(ErrorKind::bad_file, what, ": network modules nested more than 10 deep at '", prefix, "'");
  if (flat.modules.size() > 100000) fail(ErrorKind::bad_file, what, ": more than 100000 network modules");
  const auto [first, fresh] = flat.seen.emplace(m.state, prefix);
  if (!fresh)
    fail(ErrorKind::bad_file, what, ": corrupt or hostile file: module '", prefix, "' is the same object as '",
         first->second, "' (a StyleGAN2 generator shares no modules)");
  ck.budget.charge(prefix.size() + 160, "network modules");
  flat.modules[prefix] = m;
  const std::string dot = prefix.empty() ? "" : prefix + ".";
  std::vector<std::pair<const Node*, const Node*>> items;
  for (const char* field : {"_parameters", "_buffers"}) {
    if (!pickle::dict_items(pickle::dict_get(m.state, field), &items)) continue;
    for (const auto& [k, v] : items) {
      auto name = pickle::as_str(k);
      if (!name || pickle::is_none(v)) continue;
      std::string full = dot + pickle::printable(*name, 80);
      ck.budget.charge(full.size() + 96, "tensor names");
      flat.tensors[std::move(full)] = v;
    }
  }
  if (!pickle::dict_items(pickle::dict_get(m.state, "_modules"), &items)) return;
  const auto children = items;
  for (const auto& [k, v] : children) {
    auto name = pickle::as_str(k);
    if (!name || pickle::is_none(v)) continue;
    auto child = as_module(v);
    if (!child)
      fail(ErrorKind::bad_file, what, ": module '", dot, pickle::printable(*name), "' is a ", pickle::describe(v));
    flatten(*child, dot + pickle::printable(*name, 80), depth + 1, flat, ck, what);
  }
}

class AdaConverter {
 public:
  AdaConverter(Checkpoint& ck, const std::string& where) : ck_(ck), what_(ck.what + " (" + where + ")") {}

  Conversion run(const Node* g);

 private:
  const Node* get(const std::string& module, const char* key) const {
    auto it = flat_.modules.find(module);
    return it == flat_.modules.end() ? nullptr : pickle::dict_get(it->second.state, key);
  }
  std::optional<int64_t> get_int(const std::string& module, const char* key) const {
    return pickle::as_int(get(module, key));
  }
  std::optional<double> get_num(const std::string& module, const char* key) {
    return as_number(get(module, key), ck_.doc, what_);
  }
  bool has_module(const std::string& m) const { return flat_.modules.count(m) != 0; }
  /// A constructor kwarg of the generator: ada nests synthesis / mapping options, sg3 keeps them
  /// flat. Only a fallback for attributes a (re-pickled or stand-in) module lacks.
  const Node* init_kw(const char* group, const char* key) const {
    const Node* init = get("", "_init_kwargs");
    if (const Node* v = pickle::dict_get(pickle::dict_get(init, group), key)) return v;
    return pickle::dict_get(init, key);
  }
  bool has_tensor(const std::string& t) const { return flat_.tensors.count(t) != 0; }
  std::vector<int64_t> shape(const std::string& name) {
    auto it = flat_.tensors.find(name);
    if (it == flat_.tensors.end()) fail(ErrorKind::bad_file, what_, ": the generator has no tensor '", name, "'");
    auto v = ck_.tensors->view(it->second, name);
    if (!v) fail(ErrorKind::bad_file, what_, ": '", name, "' is a ", pickle::describe(it->second), ", not a tensor");
    return v->shape;
  }
  /// Dimension k of tensor `name`, which must have exactly `ndim` dimensions.
  int64_t dim(const std::string& name, size_t ndim, size_t k) {
    auto s = shape(name);
    if (s.size() != ndim)
      fail(ErrorKind::bad_file, what_, ": tensor '", name, "' has shape ", shape_to_string(s), ", not ", ndim, "-d");
    return s[k];
  }
  void expect_attr(const std::string& module, const char* key, int64_t derived) {
    auto v = get_int(module, key);
    if (v && *v != derived)
      fail(ErrorKind::bad_file, what_, ": attribute ", module.empty() ? "" : module + ".", key, " = ", *v,
           " contradicts the tensor shapes (", derived, ")");
  }
  void derive_mapping(ModelConfig& cfg, Conversion& out);
  void derive_synthesis(ModelConfig& cfg, Conversion& out);

  Checkpoint& ck_;
  std::string what_;
  Flat flat_;
  bool sg3_ = false;
};

void AdaConverter::derive_mapping(ModelConfig& cfg, Conversion& out) {
  int L = 0;
  while (has_module("mapping.fc" + std::to_string(L))) ++L;
  if (L == 0) fail(ErrorKind::unsupported, what_, ": unsupported: the mapping network has no fc0 layer");
  cfg.mapping.num_layers = L;
  expect_attr("mapping", "num_layers", L);
  const bool conditional = has_tensor("mapping.embed.weight");
  int64_t E = 0;
  if (conditional) {
    auto es = shape("mapping.embed.weight");
    if (es.size() != 2) fail(ErrorKind::bad_file, what_, ": mapping.embed.weight is not 2-d");
    E = es[0];
    cfg.c_dim = dim_int(es[1], what_, "mapping.embed.weight");
    cfg.mapping.embed_features = dim_int(E, what_, "mapping.embed.weight");
    if (auto bg = get_num("mapping.embed", "bias_gain"); bg && std::fabs(*bg - 1.0) > 1e-6)
      fail(ErrorKind::unsupported, what_, ": unsupported: label embedding with lr_multiplier ", *bg);
  }
  expect_attr("", "c_dim", cfg.c_dim);
  auto s0 = shape("mapping.fc0.weight");
  auto sl = shape("mapping.fc" + std::to_string(L - 1) + ".weight");
  if (s0.size() != 2 || sl.size() != 2) fail(ErrorKind::bad_file, what_, ": mapping fc weights are not 2-d");
  cfg.z_dim = dim_int(s0[1] - E, what_, "mapping.fc0.weight");
  cfg.w_dim = dim_int(sl[0], what_, "the last mapping layer's weight");
  cfg.mapping.layer_features = L > 1 ? dim_int(s0[0], what_, "mapping.fc0.weight") : cfg.w_dim;
  expect_attr("", "z_dim", cfg.z_dim);
  expect_attr("", "w_dim", cfg.w_dim);
  // Learning-rate multiplier from FullyConnectedLayer: bias_gain = lr, weight_gain = lr / sqrt(in).
  std::optional<double> lr;
  for (int i = 0; i < L; ++i) {
    const std::string m = "mapping.fc" + std::to_string(i);
    const double in = static_cast<double>(dim(m + ".weight", 2, 1));
    auto bg = get_num(m, "bias_gain");
    auto wg = get_num(m, "weight_gain");
    std::optional<double> li = bg ? bg : wg ? std::optional<double>(*wg * std::sqrt(in)) : std::nullopt;
    if (!li) continue;
    if (wg && std::fabs(*wg - *li / std::sqrt(in)) > 1e-5 * std::fabs(*wg))
      fail(ErrorKind::unsupported, what_, ": unsupported: ", m, " has weight_gain ", *wg, " and bias_gain ", *li,
           ", which no lr_multiplier explains");
    if (lr && std::fabs(*lr - *li) > 1e-6 * std::fabs(*lr))
      fail(ErrorKind::unsupported, what_, ": unsupported: mapping layers with different lr_multipliers (", *lr, ", ",
           *li, ")");
    lr = li;
    auto act = pickle::as_str(get(m, "activation"));
    if (act && !parse_activation(std::string(*act), &cfg.mapping.activation))
      fail(ErrorKind::unsupported, what_, ": unsupported: mapping activation '", pickle::printable(*act), "'");
  }
  if (!lr) {
    lr = as_number(init_kw("mapping_kwargs", "lr_multiplier"), ck_.doc, what_);
    if (!lr) lr = 0.01;
    out.notes.push_back(detail::concat("the mapping layers carry no gains: lr_multiplier ", *lr,
                                       " from the constructor kwargs or the default"));
  }
  if (!(*lr > 0) || !std::isfinite(*lr)) fail(ErrorKind::bad_file, what_, ": mapping lr_multiplier ", *lr);
  cfg.mapping.lr_multiplier = static_cast<float>(*lr);
}

void AdaConverter::derive_synthesis(ModelConfig& cfg, Conversion& out) {
  if (has_module("synthesis.input"))
    fail(ErrorKind::unsupported, what_,
         ": unsupported: a StyleGAN3 (alias-free) generator; sg2 runs StyleGAN2 networks");
  std::vector<int> blocks;
  for (int r = 4; r <= (1 << 14) && has_module("synthesis.b" + std::to_string(r)); r *= 2) blocks.push_back(r);
  if (blocks.empty()) {
    for (const auto& [path, m] : flat_.modules)
      if (m.cls == "SynthesisInput" || path.rfind("synthesis.L0_", 0) == 0)
        fail(ErrorKind::unsupported, what_,
             ": unsupported: a StyleGAN3 (alias-free) generator; sg2 runs StyleGAN2 networks");
    fail(ErrorKind::unsupported, what_, ": unsupported: the synthesis network has no block b4");
  }
  cfg.img_resolution = blocks.back();
  expect_attr("", "img_resolution", cfg.img_resolution);
  cfg.num_ws = 2 * log2_exact(cfg.img_resolution) - 2;
  auto cs = shape("synthesis.b4.const");
  if (cs.size() != 3)
    fail(ErrorKind::unsupported, what_, ": unsupported: synthesis.b4.const has shape ", shape_to_string(cs),
         " (a custom input, not [C, H, W])");
  // Non-square networks (StyleGAN-Human: `square=False`, a [C, 4, 2] const, 1024x512 images)
  // are told by the const's shape; the `square` attribute, where present, must agree.
  set_const_shape(cfg, cs[1], cs[2], what_, "synthesis.b4.const");
  if (auto sq = pickle::as_bool(get("synthesis", "square")); sq && *sq != cfg.square())
    fail(ErrorKind::bad_file, what_, ": attribute synthesis.square = ", *sq ? "True" : "False",
         " contradicts the const's shape ", shape_to_string(cs));
  // Channels, image channels, architecture.
  bool all_torgb = true, any_skip = false, fp16_attr = false;
  for (int r : blocks) {
    const std::string b = "synthesis.b" + std::to_string(r);
    cfg.synthesis.channels[r] = dim_int(dim(b + ".conv1.weight", 4, 0), what_, "a conv1.weight");
    if (!has_module(b + ".torgb")) all_torgb = false;
    if (has_module(b + ".skip")) any_skip = true;
    auto fp16 = pickle::as_bool(get(b, "use_fp16"));
    fp16_attr = fp16_attr || fp16.has_value();
    if (fp16 && *fp16) cfg.synthesis.fp16_resolutions.push_back(r);
  }
  if (cs[0] != cfg.synthesis.channels[4])
    fail(ErrorKind::unsupported, what_, ": unsupported: the const has ", cs[0], " channels but b4.conv1 outputs ",
         cfg.synthesis.channels[4]);
  const std::string last = "synthesis.b" + std::to_string(cfg.img_resolution);
  if (!has_module(last + ".torgb"))
    fail(ErrorKind::unsupported, what_, ": unsupported: the last block has no torgb layer");
  cfg.img_channels = dim_int(dim(last + ".torgb.weight", 4, 0), what_, "the last torgb.weight");
  expect_attr("", "img_channels", cfg.img_channels);
  const Architecture inferred = all_torgb && blocks.size() > 1 ? Architecture::skip
                                : any_skip                     ? Architecture::resnet
                                : all_torgb                    ? Architecture::skip
                                                               : Architecture::orig;
  auto arch = pickle::as_str(get("synthesis.b4", "architecture"));
  cfg.synthesis.architecture = inferred;
  if (arch && !parse_architecture(std::string(*arch), &cfg.synthesis.architecture))
    fail(ErrorKind::unsupported, what_, ": unsupported: the blocks say architecture '", pickle::printable(*arch), "'");
  if (arch && cfg.synthesis.architecture != inferred && !(blocks.size() == 1))
    fail(ErrorKind::unsupported, what_, ": unsupported: the blocks say architecture '", pickle::printable(*arch),
         "' but their layers form '", to_string(inferred), "'");
  // Per-layer attributes: conv_clamp, use_noise, activation.
  std::optional<std::optional<double>> clamp;
  bool clamp_attr = false;
  std::optional<bool> noise;
  for (int r : blocks) {
    const std::string b = "synthesis.b" + std::to_string(r);
    for (const char* layer : {"conv0", "conv1", "torgb"}) {
      const std::string m = b + "." + layer;
      if (!has_module(m)) continue;
      const Node* c = get(m, "conv_clamp");
      clamp_attr = clamp_attr || c != nullptr;
      std::optional<double> v;
      if (c != nullptr && !pickle::is_none(c)) {
        v = as_number(c, ck_.doc, what_);
        if (!v || !(*v > 0)) fail(ErrorKind::bad_file, what_, ": ", m, ".conv_clamp is ", pickle::describe(c));
      }
      if (clamp && *clamp != v)
        fail(ErrorKind::unsupported, what_, ": unsupported: layers with different conv_clamp values (", m, ")");
      clamp = v;
      if (std::string(layer) == "torgb") continue;
      auto act = pickle::as_str(get(m, "activation"));
      if (act && *act != "lrelu")
        fail(ErrorKind::unsupported, what_, ": unsupported: synthesis activation '", pickle::printable(*act), "'");
      auto un = pickle::as_bool(get(m, "use_noise"));
      const bool has = un ? *un : has_tensor(m + ".noise_const");
      if (noise && *noise != has)
        fail(ErrorKind::unsupported, what_, ": unsupported: noise inputs in some layers only (", m, ")");
      noise = has;
    }
  }
  if (clamp && *clamp) cfg.synthesis.conv_clamp = static_cast<float>(**clamp);
  // Modules without these attributes: the constructor kwargs, else the repository's defaults
  // (stylegan3: conv_clamp 256, num_fp16_res 4; stylegan2-ada-pytorch: None, 0).
  if (!clamp_attr) {
    const Node* c = init_kw("synthesis_kwargs", "conv_clamp");
    auto v = c != nullptr && !pickle::is_none(c) ? as_number(c, ck_.doc, what_) : std::nullopt;
    if (c == nullptr && sg3_) v = 256.0;
    if (v && !(*v > 0)) fail(ErrorKind::bad_file, what_, ": conv_clamp kwarg ", *v);
    if (v) cfg.synthesis.conv_clamp = static_cast<float>(*v);
    out.notes.push_back("the layers carry no conv_clamp attribute: taken from the constructor kwargs or the default");
  }
  if (!fp16_attr) {
    auto n = as_number(init_kw("synthesis_kwargs", "num_fp16_res"), ck_.doc, what_);
    cfg.synthesis.fp16_resolutions = fp16_resolutions(cfg.img_resolution, n ? whole_number(*n, what_, "num_fp16_res")
                                                                          : sg3_ ? 4
                                                                                 : 0);
    out.notes.push_back(
        "the blocks carry no use_fp16 attribute: fp16 blocks from the constructor kwargs or the default");
  }
  cfg.synthesis.use_noise = noise.value_or(true);
  // The resample filter: every buffer that is used (upsampling blocks r >= 8, their conv0 and
  // skip layers) must hold the same separable filter. Layers with up = 1 (conv1) keep the
  // default filter of their constructor, which they never use, so they are not compared.
  std::optional<Tensor> filter;
  std::vector<std::string> used_filters;
  for (int r : blocks) {
    const std::string b = "synthesis.b" + std::to_string(r);
    if (r == 4 && blocks.size() > 1) continue;
    for (const char* m : {"", ".conv0", ".skip"}) used_filters.push_back(b + m + ".resample_filter");
  }
  for (const std::string& name : used_filters) {
    auto it = flat_.tensors.find(name);
    if (it == flat_.tensors.end()) continue;
    Tensor f = ck_.tensors->read(it->second, name);
    if (!filter)
      filter = f;
    else if (f.shape() != filter->shape() || f.vec() != filter->vec())
      fail(ErrorKind::unsupported, what_, ": unsupported: layers use different resample filters (", name, ")");
  }
  if (filter) {
    cfg.synthesis.resample_filter = filter_taps(*filter, what_);
  } else if (const auto* taps = pickle::as_seq(init_kw("synthesis_kwargs", "resample_filter"))) {
    std::vector<double> t;
    for (const Node* x : *taps) {
      auto v = as_number(x, ck_.doc, what_);
      if (!v) fail(ErrorKind::unsupported, what_, ": unsupported resample_filter kwarg ", pickle::describe(x));
      t.push_back(*v);
    }
    cfg.synthesis.resample_filter = pretty_taps(t, what_);
  }
}

Conversion AdaConverter::run(const Node* g) {
  auto G = as_module(g);
  if (!G) fail(ErrorKind::bad_file, what_, ": the generator is a ", pickle::describe(g), ", not a network module");
  flatten(*G, "", 0, flat_, ck_, what_);
  if (!has_module("mapping") || !has_module("synthesis"))
    fail(ErrorKind::unsupported, what_, ": unsupported: a '", pickle::printable(G->cls),
         "' without mapping and synthesis networks");
  // stylegan3-repo StyleGAN2 (training/networks_stylegan2.py) vs stylegan2-ada-pytorch.
  const Node* init = get("", "_init_kwargs");
  sg3_ = get("synthesis.b4", "fused_modconv_default") != nullptr || get("synthesis", "num_fp16_res") != nullptr ||
         pickle::dict_get(init, "channel_base") != nullptr ||
         pickle::dict_get(init, "fused_modconv_default") != nullptr;
  Conversion out;
  out.family = sg3_ ? "stylegan3" : "stylegan2-ada-pytorch";
  ModelConfig& cfg = out.model.config;
  cfg.synthesis.channels.clear();
  derive_mapping(cfg, out);
  derive_synthesis(cfg, out);
  check_config(cfg, what_);
  // Tensors: exactly the expected names; resample filters dropped.
  std::map<std::string, bool> used;
  for (const auto& [name, expect_shape] : expected_tensors(cfg)) {
    if (name == "mapping.w_avg" && !has_tensor(name)) {
      out.w_avg_missing = true;
      out.model.tensors[name] = Tensor({cfg.w_dim});
      continue;
    }
    auto it = flat_.tensors.find(name);
    if (it == flat_.tensors.end()) fail(ErrorKind::bad_file, what_, ": the generator has no tensor '", name, "'");
    auto v = ck_.tensors->view(it->second, name);
    if (!v) fail(ErrorKind::bad_file, what_, ": '", name, "' is a ", pickle::describe(it->second), ", not a tensor");
    if (v->shape != expect_shape)
      fail(ErrorKind::bad_file, what_, ": tensor '", name, "' has shape ", shape_to_string(v->shape), ", expected ",
           shape_to_string(expect_shape));
    out.stored_dtypes[dtype_name(v->dtype)]++;
    out.model.tensors[name] = to_float_tensor(*v, ck_.budget, ck_.what + ": tensor '" + name + "'");
    used[name] = true;
  }
  for (const auto& [name, node] : flat_.tensors) {
    (void)node;
    if (used.count(name) || (name.size() >= 15 && name.compare(name.size() - 15, 15, "resample_filter") == 0)) continue;
    fail(ErrorKind::unsupported, what_, ": unsupported: unexpected tensor '", name, "' (a modified network?)");
  }
  return out;
}

}  // namespace

Conversion convert_ada_generator(Checkpoint& ck, const Node* g, const std::string& where) {
  AdaConverter c(ck, where);
  Conversion out = c.run(g);
  out.generator = where;
  return out;
}

}  // namespace sg2::readers
