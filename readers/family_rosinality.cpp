// sg2 readers: rosinality/stylegan2-pytorch checkpoints (spec §7c).
//
// `g_ema` is a state dict of rosinality's `Generator` (model.py). Its name map to the official
// names (no flips or transposes; both keep conv0 weights in the same orientation):
//   style.{i+1}.weight/bias              -> mapping.fc{i}.weight/bias
//   input.input[0]                       -> synthesis.b4.const
//   conv1.* / convs.{2k}.* / convs.{2k+1}.*  -> synthesis.b4.conv1.* / b{2^(k+3)}.conv0.* / .conv1.*
//   X.conv.weight[0]                     -> X.weight
//   X.conv.modulation.weight/bias        -> X.affine.weight/bias (bias already includes the +1)
//   X.noise.weight[0]                    -> X.noise_strength
//   X.activate.bias                      -> X.bias
//   to_rgb1.* / to_rgbs.{k}.*            -> synthesis.b4.torgb.* / b{2^(k+3)}.torgb.* (bias [1,C,1,1] -> [C])
//   noises.noise_0 / noise_{2k+1} / noise_{2k+2} [1,1,r,r] -> b4.conv1 / b{2^(k+3)}.conv0 / .conv1 noise_const
//   latent_avg (convert_weight.py checkpoints only) -> mapping.w_avg
// Non-square: StyleGAN-Human's fork (torch_utils/models.py) has input.input [1,C,4,2] and noise
// buffers [1,1,r,r/2] (r the block's larger side: 1024x512 people); its mirror [1,C,2,4] with
// [1,1,r/2,r] buffers is the same code with the axes swapped, so it is read too. Any other
// non-square const is refused: no fork ships one to check it against.
// The blur / upsample `kernel` buffers hold the resample filter times up^2; its taps go into the
// config. rosinality networks are always 'skip', unconditional, z_dim = w_dim = style_dim, no
// conv_clamp, no fp16, mapping lr_multiplier 0.01 (`lr_mlp`, which train.py does not expose).
#include <map>

#include "readers/families.h"
#include "readers/numpy_decode.h"
#include "readers/pickle_access.h"
#include "sg2/error.h"

namespace sg2::readers {

using pickle::Node;

namespace {

class RosinalityConverter {
 public:
  RosinalityConverter(Checkpoint& ck, const std::string& where) : ck_(ck), what_(ck.what + " (" + where + ")") {}
  Conversion run(const Node* top, const Node* g_ema);

 private:
  bool has(const std::string& n) const { return sd_.count(n) != 0; }
  std::vector<int64_t> shape(const std::string& n) {
    auto it = sd_.find(n);
    if (it == sd_.end()) fail(ErrorKind::bad_file, what_, ": the state dict has no '", n, "'");
    auto v = ck_.tensors->view(it->second, n);
    if (!v) fail(ErrorKind::bad_file, what_, ": '", n, "' is a ", pickle::describe(it->second), ", not a tensor");
    return v->shape;
  }
  Tensor read(const std::string& n, const std::vector<int64_t>& expect, const std::vector<int64_t>& out_shape) {
    auto it = sd_.find(n);
    if (it == sd_.end()) fail(ErrorKind::bad_file, what_, ": the state dict has no '", n, "'");
    auto v = ck_.tensors->view(it->second, n);
    if (!v) fail(ErrorKind::bad_file, what_, ": '", n, "' is a ", pickle::describe(it->second), ", not a tensor");
    if (v->shape != expect)
      fail(ErrorKind::bad_file, what_, ": '", n, "' has shape ", shape_to_string(v->shape), ", expected ",
           shape_to_string(expect));
    used_[n] = true;
    dtypes_[dtype_name(v->dtype)]++;
    return to_float_tensor(*v, ck_.budget, ck_.what + ": tensor '" + n + "'").reshaped(out_shape);
  }

  Checkpoint& ck_;
  std::string what_;
  std::map<std::string, const Node*> sd_;
  std::map<std::string, bool> used_;
  std::map<std::string, int> dtypes_;
};

Conversion RosinalityConverter::run(const Node* top, const Node* g_ema) {
  std::vector<std::pair<const Node*, const Node*>> items;
  if (!pickle::dict_items(g_ema, &items))
    fail(ErrorKind::bad_file, what_, ": g_ema is a ", pickle::describe(g_ema), ", not a state dict");
  for (const auto& [k, v] : items) {
    auto name = pickle::as_str(k);
    if (!name) fail(ErrorKind::bad_file, what_, ": a state dict key is a ", pickle::describe(k));
    sd_[pickle::printable(*name, 200)] = v;  // escaped once: every message may quote it
  }
  for (const auto& [name, node] : sd_) {
    (void)node;
    if (name.find(".iwt.") != std::string::npos || name.find(".dwt.") != std::string::npos)
      fail(ErrorKind::unsupported, what_, ": unsupported: a SWAGAN (wavelet) generator (", name, ")");
  }
  if (!has("style.1.weight") || !has("input.input") || !has("conv1.conv.weight"))
    fail(ErrorKind::unsupported, what_, ": unsupported: not a rosinality StyleGAN2 generator state dict (keys ",
         pickle::key_list(g_ema), ")");
  Conversion out;
  out.family = "rosinality";
  ModelConfig& cfg = out.model.config;
  cfg.synthesis.channels.clear();
  int M = 0;
  while (has("style." + std::to_string(M + 1) + ".weight")) ++M;
  auto s1 = shape("style.1.weight");
  if (s1.size() != 2 || s1[0] != s1[1])
    fail(ErrorKind::unsupported, what_, ": unsupported: style.1.weight of shape ", shape_to_string(s1));
  const int64_t D = s1[0];
  cfg.z_dim = cfg.w_dim = dim_int(D, what_, "style.1.weight");
  cfg.mapping.num_layers = M;
  cfg.mapping.layer_features = cfg.w_dim;
  cfg.mapping.lr_multiplier = 0.01f;
  out.notes.push_back("mapping lr_multiplier 0.01 (rosinality's lr_mlp default; not stored in checkpoints)");
  int n_convs = 0;
  while (has("convs." + std::to_string(n_convs) + ".conv.weight")) ++n_convs;
  const int log2s = n_convs / 2 + 2;
  if (n_convs % 2 != 0 || log2s > 14)
    fail(ErrorKind::bad_file, what_, ": ", n_convs, " convs layers cannot form a generator");
  cfg.img_resolution = 1 << log2s;
  cfg.num_ws = 2 * log2s - 2;
  // The const's shape tells a non-square fork: every block's maps have its aspect ratio.
  const auto is = shape("input.input");
  if (is.size() != 4 || is[0] != 1)
    fail(ErrorKind::unsupported, what_, ": unsupported: input.input has shape ", shape_to_string(is),
         " (a custom input, not [1, C, H, W])");
  const bool fork = (is[2] == 4 && is[3] == 2) || (is[2] == 2 && is[3] == 4);
  if (is[2] != is[3] && !fork)
    fail(ErrorKind::unsupported, what_, ": unsupported non-square network: input.input is ", is[2], "x", is[3],
         " pixels (height x width); sg2 reads the rosinality fork of StyleGAN-Human (a 4x2 const, its noise maps "
         "[r, r/2]) and its 2x4 mirror, and no fork with this shape is known to check its layout against");
  const int64_t ch = fork ? is[2] : 4, cw = fork ? is[3] : 4;  // a square const other than 4x4: refused below
  set_const_shape(cfg, ch, cw, what_, "input.input");
  const std::string dims = std::to_string(cfg.width()) + "x" + std::to_string(cfg.height());
  // Block r's maps: [r, r] when square, else [r * ch / 4, r * cw / 4] (the const's aspect ratio).
  auto map_h = [&](int64_t r) { return r * ch / 4; };
  auto map_w = [&](int64_t r) { return r * cw / 4; };
  // The noise buffers noises.noise_0 ... noise_{num_ws-2}: all of them, or none at all (state dicts
  // saved without buffers). A partial set is a damaged file: name what is missing.
  std::vector<std::string> missing_noise;
  int n_noise = 0;
  for (int j = 0; j < cfg.num_ws - 1; ++j) {
    if (has("noises.noise_" + std::to_string(j)))
      ++n_noise;
    else
      missing_noise.push_back("noises.noise_" + std::to_string(j));
  }
  if (n_noise > 0 && !missing_noise.empty())
    fail(ErrorKind::bad_file, what_, ": the state dict lacks ", name_list(missing_noise, 4), " (", n_noise, " of the ",
         cfg.num_ws - 1, " noise buffers of a ", dims, " generator are present)");
  if (n_noise == 0) {
    cfg.noise_const_missing = true;
    out.config_warnings.push_back(
        "the state dict has no noises.* buffers: noise_const is zeros, so noise mode const adds no "
        "noise (the same as none); rosinality's generate.py draws random noise (noise mode random)");
  }
  cfg.synthesis.use_noise = true;
  cfg.synthesis.architecture = Architecture::skip;
  auto c1 = shape("conv1.conv.weight");
  if (c1.size() != 5 || c1[0] != 1)
    fail(ErrorKind::bad_file, what_, ": conv1.conv.weight has shape ", shape_to_string(c1));
  cfg.synthesis.channels[4] = dim_int(c1[1], what_, "conv1.conv.weight");
  for (int k = 0; k < n_convs / 2; ++k) {
    auto w = shape("convs." + std::to_string(2 * k) + ".conv.weight");
    if (w.size() != 5) fail(ErrorKind::bad_file, what_, ": convs.", 2 * k, ".conv.weight is not 5-d");
    cfg.synthesis.channels[1 << (k + 3)] = dim_int(w[1], what_, "a convs weight");
  }
  auto rgb = shape("to_rgb1.conv.weight");
  if (rgb.size() != 5) fail(ErrorKind::bad_file, what_, ": to_rgb1.conv.weight is not 5-d");
  if (rgb[1] == 12)
    fail(ErrorKind::unsupported, what_, ": unsupported: a SWAGAN (wavelet) generator (12-channel to_rgb)");
  cfg.img_channels = dim_int(rgb[1], what_, "to_rgb1.conv.weight");
  // Resample filter from the blur / upsample kernels (outer(k, k) / sum * up^2).
  std::optional<Tensor> filter;
  for (const auto& [name, node] : sd_) {
    const bool blur = name.size() > 12 && name.compare(name.size() - 12, 12, ".blur.kernel") == 0;
    const bool up = name.size() > 16 && name.compare(name.size() - 16, 16, ".upsample.kernel") == 0;
    if (!blur && !up) continue;
    used_[name] = true;
    Tensor f = ck_.tensors->read(node, name);
    double sum = 0;
    for (float v : f.vec()) sum += v;
    for (float& v : f.vec()) v = static_cast<float>(v / sum);
    if (!filter)
      filter = f;
    else if (f.shape() != filter->shape() || f.vec() != filter->vec())
      fail(ErrorKind::unsupported, what_, ": unsupported: different blur kernels (", name, ")");
  }
  if (filter) cfg.synthesis.resample_filter = filter_taps(*filter, what_);
  check_config(cfg, what_);
  // Tensors.
  auto& T = out.model.tensors;
  for (int i = 0; i < M; ++i) {
    const std::string s = "style." + std::to_string(i + 1) + ".";
    T["mapping.fc" + std::to_string(i) + ".weight"] = read(s + "weight", {D, D}, {D, D});
    T["mapping.fc" + std::to_string(i) + ".bias"] = read(s + "bias", {D}, {D});
  }
  const Node* avg = top ? pickle::dict_get(top, "latent_avg") : nullptr;
  if (avg != nullptr && !pickle::is_none(avg)) {
    sd_["latent_avg"] = avg;
    auto s = shape("latent_avg");
    if (s != std::vector<int64_t>{D} && s != std::vector<int64_t>{1, D})
      fail(ErrorKind::bad_file, what_, ": latent_avg has shape ", shape_to_string(s), ", expected [", D, "]");
    T["mapping.w_avg"] = read("latent_avg", s, {D});
  } else {
    out.w_avg_missing = true;
    T["mapping.w_avg"] = Tensor({D});
  }
  const int64_t C4 = cfg.synthesis.channels[4];
  T["synthesis.b4.const"] = read("input.input", {1, C4, ch, cw}, {C4, ch, cw});
  auto layer = [&](const std::string& src, const std::string& dst, int64_t ci, int64_t co, int noise, int64_t r) {
    T[dst + "weight"] = read(src + "conv.weight", {1, co, ci, 3, 3}, {co, ci, 3, 3});
    T[dst + "bias"] = read(src + "activate.bias", {co}, {co});
    T[dst + "affine.weight"] = read(src + "conv.modulation.weight", {ci, D}, {ci, D});
    T[dst + "affine.bias"] = read(src + "conv.modulation.bias", {ci}, {ci});
    T[dst + "noise_strength"] = read(src + "noise.weight", {1}, {});
    const int64_t h = map_h(r), w = map_w(r);
    if (n_noise > 0) {
      const std::string n = "noises.noise_" + std::to_string(noise);
      if (auto s = shape(n); s != std::vector<int64_t>{1, 1, h, w})
        fail(ErrorKind::bad_file, what_, ": '", n, "' has shape ", shape_to_string(s), ", expected [1, 1, ", h, ", ", w,
             "]: inconsistent with input.input's ", ch, "x", cw, " (height x width), which makes block ", r, "'s maps ",
             h, "x", w);
      T[dst + "noise_const"] = read(n, {1, 1, h, w}, {h, w});
    } else {
      T[dst + "noise_const"] = Tensor({h, w});
    }
  };
  auto torgb = [&](const std::string& src, const std::string& dst, int64_t c) {
    const int64_t I = cfg.img_channels;
    T[dst + "weight"] = read(src + "conv.weight", {1, I, c, 1, 1}, {I, c, 1, 1});
    T[dst + "bias"] = read(src + "bias", {1, I, 1, 1}, {I});
    T[dst + "affine.weight"] = read(src + "conv.modulation.weight", {c, D}, {c, D});
    T[dst + "affine.bias"] = read(src + "conv.modulation.bias", {c}, {c});
  };
  layer("conv1.", "synthesis.b4.conv1.", C4, C4, 0, 4);
  torgb("to_rgb1.", "synthesis.b4.torgb.", C4);
  for (int k = 0; k < n_convs / 2; ++k) {
    const int64_t r = int64_t(1) << (k + 3);
    const int64_t C = cfg.synthesis.channels[static_cast<int>(r)],
                  Cin = cfg.synthesis.channels[static_cast<int>(r / 2)];
    const std::string b = "synthesis.b" + std::to_string(r) + ".";
    layer("convs." + std::to_string(2 * k) + ".", b + "conv0.", Cin, C, 2 * k + 1, r);
    layer("convs." + std::to_string(2 * k + 1) + ".", b + "conv1.", C, C, 2 * k + 2, r);
    torgb("to_rgbs." + std::to_string(k) + ".", b + "torgb.", C);
  }
  for (const auto& [name, node] : sd_) {
    (void)node;
    if (!used_.count(name))
      fail(ErrorKind::unsupported, what_, ": unsupported: unexpected tensor '", name, "' (a modified network?)");
  }
  out.stored_dtypes = dtypes_;
  return out;
}

}  // namespace

Conversion convert_rosinality(Checkpoint& ck, const Node* top, const Node* g_ema, const std::string& where) {
  RosinalityConverter c(ck, where);
  Conversion out = c.run(top, g_ema);
  out.generator = where;
  return out;
}

}  // namespace sg2::readers
