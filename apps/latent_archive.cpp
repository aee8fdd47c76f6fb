// sg2 CLI: the latent archives of sg2 generate (latent_archive.h).
#include "latent_archive.h"

#include <algorithm>
#include <cstring>

#include "cli_util.h"
#include "sg2/error.h"
#include "sg2/styles.h"

namespace sg2::cli {

namespace {

std::vector<NpzMember> members(const ModelConfig& cfg, int64_t n, bool from_seeds, bool styles,
                               const std::vector<StyleLayer>& layers, int64_t style_dims, size_t name_width) {
  std::vector<NpzMember> m;
  if (from_seeds) {
    m.push_back({"seeds", "<u4", {n}});
    if (cfg.z_dim > 0) m.push_back({"z", "<f4", {n, cfg.z_dim}});
    if (cfg.c_dim > 0) m.push_back({"c", "<f4", {n, cfg.c_dim}});
  }
  m.push_back({"w", "<f4", {n, cfg.num_ws, cfg.w_dim}});
  if (styles) {
    m.push_back({"s", "<f4", {n, style_dims}});
    m.push_back({"s_offsets", "<i8", {int64_t(layers.size()) + 1}});
    m.push_back({"s_layers", "<U" + std::to_string(name_width), {int64_t(layers.size())}});
  }
  return m;
}

size_t longest_name(const std::vector<StyleLayer>& layers) {
  size_t k = 1;
  for (const StyleLayer& l : layers) k = std::max(k, l.name.size());
  return k;
}

}  // namespace

LatentArchive::LatentArchive(const std::string& path, const ModelConfig& cfg, int64_t rows, bool from_seeds,
                             int class_idx, bool styles)
    : npz_(path, members(cfg, rows, from_seeds, styles, styles ? style_layers(cfg) : std::vector<StyleLayer>(),
                         styles ? style_dims(cfg) : 0, styles ? longest_name(style_layers(cfg)) : 1)),
      cfg_(cfg),
      from_seeds_(from_seeds),
      styles_(styles) {
  int next = 0;
  if (from_seeds) {
    m_seeds_ = next++;
    if (cfg.z_dim > 0) m_z_ = next++;
    if (cfg.c_dim > 0) m_c_ = next++;
  }
  m_w_ = next++;
  if (styles) {
    m_s_ = next++;
    const std::vector<StyleLayer> layers = style_layers(cfg);
    style_dims_ = style_dims(cfg);
    std::vector<int64_t> offsets;
    for (const StyleLayer& l : layers) offsets.push_back(l.offset);
    offsets.push_back(style_dims_);
    npz_.append(size_t(next++), offsets.data(), offsets.size() * sizeof(int64_t));
    // numpy '<U' strings: UTF-32LE code points, zero-padded to the width (names are ASCII)
    const size_t width = longest_name(layers);
    std::vector<uint8_t> names(layers.size() * width * 4, 0);
    for (size_t i = 0; i < layers.size(); ++i)
      for (size_t k = 0; k < layers[i].name.size(); ++k)
        names[(i * width + k) * 4] = static_cast<uint8_t>(layers[i].name[k]);
    npz_.append(size_t(next++), names.data(), names.size());
  }
  if (cfg.c_dim > 0 && from_seeds) {
    label_.assign(size_t(cfg.c_dim), 0.0f);
    if (class_idx >= 0 && class_idx < cfg.c_dim) label_[size_t(class_idx)] = 1.0f;
  }
}

void LatentArchive::request(StreamOptions& so) const {
  so.ws = true;
  if (from_seeds_) so.z = true;
  if (styles_) so.styles = true;
}

void LatentArchive::add(const StreamImage& im) {
  if (im.ws == nullptr || (styles_ && im.styles == nullptr) || (m_z_ >= 0 && im.z == nullptr))
    fail(ErrorKind::internal, "--save-latents: the stream did not hand out the latents");
  if (m_seeds_ >= 0) {
    const uint32_t seed = static_cast<uint32_t>(im.key);
    npz_.append(size_t(m_seeds_), &seed, 4);
  }
  if (m_z_ >= 0) npz_.append(size_t(m_z_), im.z, size_t(cfg_.z_dim) * 4);
  if (m_c_ >= 0) npz_.append(size_t(m_c_), label_.data(), label_.size() * 4);
  npz_.append(size_t(m_w_), im.ws, size_t(cfg_.num_ws) * cfg_.w_dim * 4);
  if (m_s_ >= 0) npz_.append(size_t(m_s_), im.styles, size_t(style_dims_) * 4);
}

int size_factor(const std::string& text, int width, int height) {
  int64_t w = 0, h = 0;
  const size_t x = text.find('x');
  auto digits = [](const std::string& t) {
    return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (x == std::string::npos ? !digits(text) : !digits(text.substr(0, x)) || !digits(text.substr(x + 1)))
    fail(ErrorKind::invalid_argument, "--size '", shown(text),
         "': expected N (the larger side) or WxH, e.g. --size 64 or --size 128x256");
  if (x == std::string::npos) {
    w = h = parse_int("size", text, 1, 1 << 20);
  } else {
    w = parse_int("size", text.substr(0, x), 1, 1 << 20);
    h = parse_int("size", text.substr(x + 1), 1, 1 << 20);
  }
  if (width <= 0 || height <= 0) return 1;  // the syntax only (before the model is loaded)
  const int big = std::max(width, height);
  std::string sizes;  // what works, as N x M
  for (int f = 1; f <= big && sizes.size() < 80; ++f)
    if (width % f == 0 && height % f == 0)
      sizes +=
          (sizes.empty() ? "" : ", ") +
          (width == height ? std::to_string(width / f) : std::to_string(width / f) + "x" + std::to_string(height / f));
  const bool one = x == std::string::npos;
  const int64_t side = one ? w : 0;
  int f = 0;
  if (one) {
    if (big % side == 0) f = static_cast<int>(big / side);
  } else if (w > 0 && width % w == 0 && height % h == 0 && width / w == height / h) {
    f = static_cast<int>(width / w);
  }
  if (f == 0 || width % f != 0 || height % f != 0) {
    if (!one && width == height && w != h)
      fail(ErrorKind::invalid_argument, "--size ", shown(text),
           ": the images are square; give one size N (or NxN) that divides the resolution");
    fail(ErrorKind::invalid_argument, "--size ", shown(text), ": not a divisor of the model's ", width, "x", height,
         " resolution (images are downscaled by an integer factor with a box filter); sizes that work: ", sizes);
  }
  return f;
}

}  // namespace sg2::cli
