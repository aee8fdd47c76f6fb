// sg2 readers: NVlabs StyleGAN2 and StyleGAN2-ADA TensorFlow pickles (spec §7b).
//
// A network is `dnnlib.tflib.network.Network` recorded as NEWOBJ + BUILD(state) with state keys
// version, name, static_kwargs, components, build_module_src, build_func_name, variables
// (+ input/output shapes and names in TF-ADA's version 5). Variables are (name, numpy array)
// pairs; component variables are prefixed with the component key ("mapping/", "synthesis/"),
// as stylegan2-ada-pytorch's legacy.py collects them. The name map follows legacy.py's
// `convert_tf_generator`: dense weights transposed, conv weights [kh, kw, I, O] permuted to
// [O, I, kh, kw] (Conv0_up additionally flipped in kh and kw, since TF correlates the upsampled
// signal), mod_weight transposed, mod_bias + 1, const[0], noise{j}[0, 0] with noise0 -> b4.conv1,
// noise{2k-5} -> b(2^k).conv0, noise{2k-4} -> b(2^k).conv1. No gain rescaling: TF stores raw
// values and applies the same runtime gains.
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "readers/families.h"
#include "readers/numpy_decode.h"
#include "readers/pickle_access.h"
#include "sg2/error.h"

namespace sg2::readers {

using pickle::Node;

namespace {

Tensor dense_from_tf(const Tensor& w) {  // [in, out] -> [out, in]
  const int64_t in = w.dim(0), out = w.dim(1);
  Tensor t({out, in});
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) t[o * in + i] = w[i * out + o];
  return t;
}

Tensor conv_from_tf(const Tensor& w, bool flip) {  // [kh, kw, I, O] -> [O, I, kh, kw]
  const int64_t kh = w.dim(0), kw = w.dim(1), I = w.dim(2), O = w.dim(3);
  Tensor t({O, I, kh, kw});
  for (int64_t y = 0; y < kh; ++y)
    for (int64_t x = 0; x < kw; ++x)
      for (int64_t i = 0; i < I; ++i)
        for (int64_t o = 0; o < O; ++o) {
          const int64_t sy = flip ? kh - 1 - y : y, sx = flip ? kw - 1 - x : x;
          t[((o * I + i) * kh + y) * kw + x] = w[((sy * kw + sx) * I + i) * O + o];
        }
  return t;
}

class TfConverter {
 public:
  TfConverter(Checkpoint& ck, const std::string& where) : ck_(ck), what_(ck.what + " (" + where + ")") {}
  Conversion run(const Node* gs);

 private:
  void collect(const std::string& prefix, const Node* net, int depth);
  void refuse_reshaping_forks();
  /// The [h, w] of a kwarg holding two whole numbers in [1, 2^20] (a list or a tuple), else nullopt.
  std::optional<std::pair<int64_t, int64_t>> kw_pair(const Node* v) {
    const auto* s = pickle::as_seq(v);
    if (s == nullptr || s->size() != 2) return std::nullopt;
    int64_t hw[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      auto n = as_number((*s)[size_t(i)], ck_.doc, what_);
      if (!n || !(*n >= 1 && *n <= (1 << 20)) || *n != std::floor(*n)) return std::nullopt;
      hw[i] = static_cast<int64_t>(*n);
    }
    return std::make_pair(hw[0], hw[1]);
  }
  const Node* kwarg(const char* key) const {
    for (const Node* net : nets_)
      if (const Node* v = pickle::dict_get(pickle::attr(net, "static_kwargs"), key)) return v;
    return nullptr;
  }
  bool has(const std::string& v) const { return vars_.count(v) != 0; }
  std::vector<int64_t> shape(const std::string& v) {
    auto it = vars_.find(v);
    if (it == vars_.end()) fail(ErrorKind::bad_file, what_, ": the TensorFlow generator has no variable '", v, "'");
    auto view = ck_.tensors->view(it->second, v);
    if (!view)
      fail(ErrorKind::bad_file, what_, ": variable '", v, "' is a ", pickle::describe(it->second), ", not an array");
    return view->shape;
  }
  Tensor read(const std::string& v, const std::vector<int64_t>& expect) {
    if (shape(v) != expect)
      fail(ErrorKind::bad_file, what_, ": variable '", v, "' has shape ", shape_to_string(shape(v)), ", expected ",
           shape_to_string(expect));
    auto view = ck_.tensors->view(vars_.at(v), v);
    dtypes_[dtype_name(view->dtype)]++;
    used_[v] = true;
    return to_float_tensor(*view, ck_.budget, ck_.what + ": variable '" + v + "'");
  }

  Checkpoint& ck_;
  std::string what_;
  std::vector<const Node*> nets_;            // Gs first, then its components
  std::map<const Node*, std::string> seen_;  // network -> its prefix (each visited once)
  std::map<std::string, const Node*> vars_;  // "mapping/Dense0/weight", "dlatent_avg", ...
  std::map<std::string, bool> top_level_;    // variables of a network's own scope (no '/' in the local name)
  std::map<std::string, bool> used_;
  std::map<std::string, int> dtypes_;
};

void TfConverter::collect(const std::string& prefix, const Node* net, int depth) {
  if (depth > 4) fail(ErrorKind::bad_file, what_, ": TensorFlow networks nested too deeply");
  if (!pickle::is_call(net, "dnnlib.tflib.network.Network"))
    fail(ErrorKind::bad_file, what_, ": component '", prefix, "' is a ", pickle::describe(net),
         ", not a TensorFlow network");
  // Each network once: the memo lets `components` name one child many times, and a tree of such
  // references grows exponentially with depth (200 per level, 4 levels: 1.6e9 visits). A StyleGAN2
  // generator shares no component.
  const auto [first, fresh] = seen_.emplace(net, prefix);
  if (!fresh)
    fail(ErrorKind::bad_file, what_, ": corrupt or hostile file: component '", prefix, "' is the same network as '",
         first->second, "' (a StyleGAN2 generator shares no components)");
  nets_.push_back(net);
  const auto* vars = pickle::as_seq(pickle::attr(net, "variables"));
  if (vars == nullptr) fail(ErrorKind::bad_file, what_, ": network '", prefix, "' has no variable list");
  for (const Node* pair : *vars) {
    const auto* kv = pickle::as_seq(pair);
    auto name = kv && kv->size() == 2 ? pickle::as_str((*kv)[0]) : std::nullopt;
    if (!name) fail(ErrorKind::bad_file, what_, ": a variable entry is a ", pickle::describe(pair));
    const std::string full = prefix + pickle::printable(*name, 100);
    ck_.budget.charge(full.size() + 96, "variable names");
    vars_[full] = (*kv)[1];
    top_level_[full] = name->find('/') == std::string_view::npos;
  }
  std::vector<std::pair<const Node*, const Node*>> comps;
  if (pickle::dict_items(pickle::attr(net, "components"), &comps)) {
    const auto children = comps;
    for (const auto& [k, v] : children) {
      auto key = pickle::as_str(k);
      if (key) collect(prefix + pickle::printable(*key, 40) + "/", v, depth + 1);
    }
  }
}

// Forks of the TensorFlow code that draw another shape than the square img_resolution: the
// rectangular ones (static kwargs resolution_w / resolution_h; eps696/stylegan2's init_res = [h, w],
// an h x w const with noise variables [h, w] * 2^k, images resolution * [h, w] / 4) and eps696's
// size / scale_type, which pad or scale the feature maps to another output size. Such a pickle would
// load as a plain square network, or fail on a shape as if corrupt: it is refused, saying what it is
// and why sg2 does not read it (the forks run on TensorFlow 1.x only, so there are no goldens from
// their own code to check an implementation against).
void TfConverter::refuse_reshaping_forks() {
  std::vector<std::string> found;
  auto pair_text = [](std::pair<int64_t, int64_t> p) {
    return "[" + std::to_string(p.first) + ", " + std::to_string(p.second) + "]";
  };
  auto given = [&](const char* k) {
    const Node* v = kwarg(k);
    return v != nullptr && !pickle::is_none(v) ? v : nullptr;
  };
  for (const char* k : {"resolution_w", "resolution_h"})
    if (given(k)) found.push_back(std::string("static kwarg ") + k);
  // The image size the fork's G_synthesis_stylegan2 draws: resolution * init_res / 4, or `size`.
  int R = 4;
  while (R < (1 << 14) && has("synthesis/" + std::to_string(R * 2) + "x" + std::to_string(R * 2) + "/Conv1/weight"))
    R *= 2;
  std::optional<std::pair<int64_t, int64_t>> init = std::make_pair(int64_t(4), int64_t(4));
  // the output size, when known (a plain pair and a flag: GCC 12 -O2 warns that an optional pair's members
  // may be read uninitialized where they cannot be)
  std::pair<int64_t, int64_t> out{0, 0};
  bool out_known = false;
  bool shape_kwargs = false;
  if (const Node* v = given("init_res")) {
    shape_kwargs = true;
    init = kw_pair(v);
    if (!init)
      found.push_back("static kwarg init_res " + pickle::describe(v));
    else if (*init != std::make_pair(int64_t(4), int64_t(4)))
      found.push_back("static kwarg init_res " + pair_text(*init));
  }
  if (has("synthesis/4x4/Const/const")) {
    auto cs = shape("synthesis/4x4/Const/const");
    if (cs.size() == 4 && cs[2] != cs[3])
      found.push_back("a " + std::to_string(cs[2]) + "x" + std::to_string(cs[3]) + " const");
  }
  if (init) {
    out = std::make_pair(R * init->first / 4, R * init->second / 4);
    out_known = true;
  }
  if (const Node* v = given("size")) {
    shape_kwargs = true;
    const auto size = kw_pair(v);
    const Node* st = given("scale_type");
    const std::string scale =
        st == nullptr ? std::string()
                      : ", scale_type " + (pickle::as_str(st) ? "'" + pickle::printable(*pickle::as_str(st), 20) + "'"
                                                              : pickle::describe(st));
    if (!size || !out_known || *size != out)
      found.push_back("static kwarg" + std::string(st ? "s" : "") + " size " +
                      (size ? pair_text(*size) : pickle::describe(v)) + scale);
    out_known = size.has_value();
    if (size) out = *size;
  }
  if (found.empty()) return;
  std::string list;
  for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
  std::string what = "a rectangular (non-square) generator from a StyleGAN2 fork (" + list;
  if (shape_kwargs && out_known) {
    const std::string hw = std::to_string(out.first) + "x" + std::to_string(out.second);
    if (out.first == out.second)
      what = "a StyleGAN2 fork's generator of another image size (" + list + ": " + hw + " images, not " +
             std::to_string(R) + "x" + std::to_string(R);
    else
      what += ": " + hw + " images, height x width";
  }
  fail(ErrorKind::unsupported, what_, ": unsupported: ", what,
       "); such forks (eps696/stylegan2 with init_res, size or scale_type; resolution_w / resolution_h) run on "
       "TensorFlow 1.x only, which cannot be run here, so there are no goldens from the fork's own code to check an "
       "implementation against, and sg2 does not read them (it runs StyleGAN-Human's non-square networks: its ADA "
       "pickles and rosinality-fork checkpoints)");
}

Conversion TfConverter::run(const Node* gs) {
  auto version = pickle::as_int(pickle::attr(gs, "version"));
  if (version && *version < 4)
    fail(ErrorKind::unsupported, what_, ": unsupported: a StyleGAN (v1) era TensorFlow pickle (network version ",
         *version, "); sg2 reads StyleGAN2 pickles (versions 4 and 5)");
  collect("", gs, 0);
  for (const auto& [name, node] : vars_) {
    (void)node;
    if (name.find("ToRGB_lod") != std::string::npos)
      fail(ErrorKind::unsupported, what_, ": unsupported: a progressive-growing generator (", name,
           "; StyleGAN2 configs a-d or StyleGAN v1)");
    if (name.find("StyleMod") != std::string::npos || name.find("Const/Noise") != std::string::npos)
      fail(ErrorKind::unsupported, what_, ": unsupported: a StyleGAN (v1) generator (", name, ")");
    if (name.find("LabelConcat") != std::string::npos)
      fail(ErrorKind::unsupported, what_, ": unsupported: original-StyleGAN2 label concatenation (", name, ")");
  }
  refuse_reshaping_forks();
  if (!has("synthesis/4x4/Conv/mod_weight"))
    fail(ErrorKind::unsupported, what_, ": unsupported: the TensorFlow network '",
         pickle::printable(pickle::as_str(pickle::attr(gs, "name")).value_or("?")),
         "' is not a StyleGAN2 generator (no synthesis/4x4/Conv/mod_weight)");
  Conversion out;
  ModelConfig& cfg = out.model.config;
  cfg.synthesis.channels.clear();
  std::optional<std::string_view> synth_func;
  for (const Node* n : nets_) {
    auto f = pickle::as_str(pickle::attr(n, "build_func_name"));
    if (f && (*f == "G_synthesis" || *f == "G_synthesis_stylegan2")) synth_func = f;
  }
  const bool ada = (version && *version >= 5) || (synth_func && *synth_func == "G_synthesis") || kwarg("conv_clamp") ||
                   kwarg("num_fp16_res");
  out.family = ada ? "stylegan2-ada-tf" : "stylegan2-tf";
  auto kw_num = [&](const char* key) -> std::optional<double> {
    const Node* v = kwarg(key);
    if (v == nullptr || pickle::is_none(v)) return std::nullopt;
    auto n = as_number(v, ck_.doc, what_);
    if (!n) fail(ErrorKind::bad_file, what_, ": static kwarg ", key, " is a ", pickle::describe(v));
    return n;
  };
  auto kw_str = [&](const char* key, const char* def) -> std::string {
    const Node* v = kwarg(key);
    if (v == nullptr || pickle::is_none(v)) return def;
    auto s = pickle::as_str(v);
    if (!s) fail(ErrorKind::bad_file, what_, ": static kwarg ", key, " is a ", pickle::describe(v));
    return std::string(*s);
  };
  // Mapping: Dense{i} layers, optional LabelEmbed.
  int L = 0;
  while (has("mapping/Dense" + std::to_string(L) + "/weight")) ++L;
  if (L == 0) fail(ErrorKind::unsupported, what_, ": unsupported: no mapping/Dense0 layer");
  int64_t E = 0;
  if (has("mapping/LabelEmbed/weight")) {
    auto s = shape("mapping/LabelEmbed/weight");
    if (s.size() != 2) fail(ErrorKind::bad_file, what_, ": LabelEmbed/weight is not 2-d");
    cfg.c_dim = dim_int(s[0], what_, "mapping/LabelEmbed/weight");
    E = s[1];
    cfg.mapping.embed_features = dim_int(E, what_, "mapping/LabelEmbed/weight");
  }
  auto d0 = shape("mapping/Dense0/weight"), dl = shape("mapping/Dense" + std::to_string(L - 1) + "/weight");
  if (d0.size() != 2 || dl.size() != 2) fail(ErrorKind::bad_file, what_, ": mapping Dense weights are not 2-d");
  cfg.z_dim = dim_int(d0[0] - E, what_, "mapping/Dense0/weight");
  cfg.w_dim = dim_int(dl[1], what_, "the last mapping Dense weight");
  cfg.mapping.num_layers = L;
  cfg.mapping.layer_features = L > 1 ? dim_int(d0[1], what_, "mapping/Dense0/weight") : cfg.w_dim;
  cfg.mapping.lr_multiplier = static_cast<float>(kw_num("mapping_lrmul").value_or(0.01));
  if (!kwarg("mapping_lrmul")) out.notes.push_back("mapping_lrmul not in static_kwargs: TensorFlow default 0.01");
  {
    const std::string nl = kw_str("mapping_nonlinearity", "lrelu");
    if (!parse_activation(nl, &cfg.mapping.activation))
      fail(ErrorKind::unsupported, what_, ": unsupported: mapping nonlinearity '", pickle::printable(nl), "'");
  }
  if (auto nl = pickle::as_bool(kwarg("normalize_latents")); nl && !*nl)
    fail(ErrorKind::unsupported, what_, ": unsupported: normalize_latents=False");
  if (kw_str("nonlinearity", "lrelu") != "lrelu")
    fail(ErrorKind::unsupported, what_, ": unsupported: synthesis nonlinearity");
  // Synthesis: blocks, channels, architecture.
  int R = 4;
  while (R < (1 << 14) && has("synthesis/" + std::to_string(R * 2) + "x" + std::to_string(R * 2) + "/Conv1/weight"))
    R *= 2;
  cfg.img_resolution = R;
  cfg.num_ws = 2 * log2_exact(R) - 2;
  if (auto res = kw_num("resolution"); res && whole_number(*res, what_, "resolution") != R)
    fail(ErrorKind::bad_file, what_, ": static kwarg resolution ", *res, " contradicts the variables (", R, ")");
  auto block = [](int r) { return "synthesis/" + std::to_string(r) + "x" + std::to_string(r) + "/"; };
  bool all_torgb = true, any_skip = false;
  for (int r = 4; r <= R; r *= 2) {
    auto w = shape(block(r) + (r == 4 ? "Conv/weight" : "Conv1/weight"));
    if (w.size() != 4) fail(ErrorKind::bad_file, what_, ": ", block(r), " conv weight is not 4-d");
    cfg.synthesis.channels[r] = dim_int(w[3], what_, "a synthesis conv weight");
    if (!has(block(r) + "ToRGB/weight")) all_torgb = false;
    if (has(block(r) + "Skip/weight")) any_skip = true;
  }
  if (!has(block(R) + "ToRGB/weight")) fail(ErrorKind::unsupported, what_, ": unsupported: no ToRGB in the last block");
  auto rgb = shape(block(R) + "ToRGB/weight");
  if (rgb.size() != 4) fail(ErrorKind::bad_file, what_, ": ", block(R), "ToRGB/weight is not 4-d");
  cfg.img_channels = dim_int(rgb[3], what_, "ToRGB/weight");
  const Architecture inferred = all_torgb ? Architecture::skip : any_skip ? Architecture::resnet : Architecture::orig;
  // The kwarg when given (TF's default is 'skip'), else what the variables form.
  const std::string arch = kw_str("architecture", to_string(inferred));
  const bool known = parse_architecture(arch, &cfg.synthesis.architecture);
  if (!known || (cfg.synthesis.architecture != inferred && R > 4))
    fail(ErrorKind::unsupported, what_, ": unsupported: architecture kwarg '", pickle::printable(arch),
         "' but the variables form '", to_string(inferred), "'");
  if (auto c = kw_num("conv_clamp")) cfg.synthesis.conv_clamp = static_cast<float>(*c);
  cfg.synthesis.fp16_resolutions =
      fp16_resolutions(R, whole_number(kw_num("num_fp16_res").value_or(0), what_, "num_fp16_res"));
  cfg.synthesis.use_noise = has("synthesis/noise0");
  if (auto un = pickle::as_bool(kwarg("use_noise")); un && *un != cfg.synthesis.use_noise)
    fail(ErrorKind::bad_file, what_, ": use_noise kwarg contradicts the noise variables");
  // resample_kernel: default [1,3,3,1]; None means a box filter [1, 1].
  const Node* rk = kwarg("resample_kernel");
  if (rk != nullptr && pickle::is_none(rk)) {
    cfg.synthesis.resample_filter = {1, 1};
  } else if (rk != nullptr) {
    const auto* taps = pickle::as_seq(rk);
    if (taps == nullptr) fail(ErrorKind::unsupported, what_, ": unsupported resample_kernel ", pickle::describe(rk));
    std::vector<double> t;
    for (const Node* x : *taps) {
      auto v = as_number(x, ck_.doc, what_);
      if (!v) fail(ErrorKind::unsupported, what_, ": unsupported resample_kernel tap ", pickle::describe(x));
      t.push_back(*v);
    }
    cfg.synthesis.resample_filter = pretty_taps(t, what_);
  }
  check_config(cfg, what_);
  // Tensors.
  auto& T = out.model.tensors;
  const int64_t W = cfg.w_dim;
  if (cfg.c_dim > 0) {
    T["mapping.embed.weight"] = dense_from_tf(read("mapping/LabelEmbed/weight", {cfg.c_dim, E}));
    T["mapping.embed.bias"] = read("mapping/LabelEmbed/bias", {E});
  }
  for (int i = 0; i < L; ++i) {
    const int64_t in = i == 0 ? cfg.z_dim + E : cfg.mapping.layer_features,
                  o = i == L - 1 ? W : cfg.mapping.layer_features;
    const std::string d = "mapping/Dense" + std::to_string(i) + "/";
    T["mapping.fc" + std::to_string(i) + ".weight"] = dense_from_tf(read(d + "weight", {in, o}));
    T["mapping.fc" + std::to_string(i) + ".bias"] = read(d + "bias", {o});
  }
  if (has("dlatent_avg")) {
    T["mapping.w_avg"] = read("dlatent_avg", {W});
  } else {
    out.w_avg_missing = true;
    T["mapping.w_avg"] = Tensor({W});
  }
  const int64_t C4 = cfg.synthesis.channels[4];
  T["synthesis.b4.const"] = read("synthesis/4x4/Const/const", {1, C4, 4, 4}).reshaped({C4, 4, 4});
  auto layer = [&](const std::string& tf, const std::string& pt, int64_t ci, int64_t co, int64_t k, bool flip,
                   int noise, int res) {
    Tensor mb = read(tf + "mod_bias", {ci});
    for (float& v : mb.vec()) v += 1.0f;
    T[pt + "weight"] = conv_from_tf(read(tf + "weight", {k, k, ci, co}), flip);
    T[pt + "bias"] = read(tf + "bias", {co});
    T[pt + "affine.weight"] = dense_from_tf(read(tf + "mod_weight", {W, ci}));
    T[pt + "affine.bias"] = std::move(mb);
    if (noise >= 0 && cfg.synthesis.use_noise) {
      T[pt + "noise_strength"] = read(tf + "noise_strength", {});
      T[pt + "noise_const"] = read("synthesis/noise" + std::to_string(noise), {1, 1, res, res}).reshaped({res, res});
    }
  };
  const bool skip = cfg.synthesis.architecture == Architecture::skip;
  for (int r = 4; r <= R; r *= 2) {
    const std::string tb = block(r), pb = "synthesis.b" + std::to_string(r) + ".";
    const int64_t C = cfg.synthesis.channels[r], Cin = r == 4 ? C : cfg.synthesis.channels[r / 2];
    const int k = log2_exact(r);
    if (r == 4) {
      layer(tb + "Conv/", pb + "conv1.", C, C, 3, false, 0, r);
    } else {
      layer(tb + "Conv0_up/", pb + "conv0.", Cin, C, 3, true, 2 * k - 5, r);
      layer(tb + "Conv1/", pb + "conv1.", C, C, 3, false, 2 * k - 4, r);
      if (cfg.synthesis.architecture == Architecture::resnet)
        T[pb + "skip.weight"] = conv_from_tf(read(tb + "Skip/weight", {1, 1, Cin, C}), true);
    }
    if (skip || r == R) layer(tb + "ToRGB/", pb + "torgb.", C, cfg.img_channels, 1, false, -1, r);
  }
  // Variables the generator does not use. Scalars in a network's own scope (not inside a layer),
  // such as the `epochs`, `epochs_1` counters some forks keep in Gs, are training state: ignored
  // with a notice (legacy.py ignores them too). Anything else may be something the network needs:
  // refused.
  std::vector<std::string> ignored;
  for (const auto& [name, node] : vars_) {
    if (used_.count(name) || name == "lod") continue;
    auto view = ck_.tensors->view(node, name);
    if (view && view->shape.empty() && top_level_[name]) {
      ignored.push_back(name);
      continue;
    }
    fail(ErrorKind::unsupported, what_, ": unsupported: unexpected TensorFlow variable '", name, "'",
         view ? " of shape " + shape_to_string(view->shape) : std::string(), " (a modified network?)");
  }
  if (!ignored.empty())
    out.warnings.push_back("ignored " +
                           std::string(ignored.size() == 1 ? "a TensorFlow variable" : "TensorFlow variables") +
                           " the generator does not use: " + name_list(ignored, 4) +
                           " (scalars outside its layers, training state; the official legacy.py "
                           "ignores them too)");
  out.stored_dtypes = dtypes_;
  return out;
}

}  // namespace

Conversion convert_tf_generator(Checkpoint& ck, const Node* gs, const std::string& where) {
  TfConverter c(ck, where);
  Conversion out = c.run(gs);
  out.generator = where;
  return out;
}

}  // namespace sg2::readers
