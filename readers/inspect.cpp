// sg2 readers: the `sg2 inspect` report (sg2/convert.h).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/json_util.h"
#include "readers/pickle.h"
#include "readers/read_checkpoint.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "util/file_util.h"
#include "util/text_util.h"

namespace sg2 {

using json = nlohmann::json;

namespace {

void fill_from_model(InspectReport& r, const Model& m) {
  r.config = m.config;
  r.provenance = m.provenance;
  r.parameter_count = parameter_count(m);
  if (m.config.synthesis.use_noise && !m.config.noise_const_missing) r.noise_buffers = noise_layers(m.config);
  auto it = m.tensors.find("mapping.w_avg");
  double sq = 0;
  if (it != m.tensors.end())
    for (float v : it->second.vec()) sq += double(v) * v;
  r.w_avg_norm = std::sqrt(sq);
  r.w_avg_finite = it == m.tensors.end() || w_avg_finite(m);
  r.w_avg_estimated = m.config.w_avg_estimated;
}

/// A float as the double with the same shortest decimal form (0.01f -> 0.01, not 0.0099999997...).
double shortest(float v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

std::string fmt_float(double v) {
  std::ostringstream os;
  os << std::setprecision(6) << v;
  return os.str();
}

}  // namespace

InspectReport inspect_file(const std::string& path) {
  InspectReport r;
  r.file = path;
  if (is_model_file(path)) {
    Model m = load_model_file(path);
    detail::MappedFile f(path);
    r.file_size = f.size();
    r.sha256 = detail::sha256_hex(f.data(), f.size());
    r.format = "sg2 model file";
    r.family = m.provenance.source_family;
    fill_from_model(r, m);
    r.w_avg_present = true;
    r.stored_dtypes["float32"] = static_cast<int>(m.tensors.size());
    if (m.config.noise_const_missing)
      r.warnings.push_back(
          "the source stored no noise maps: noise_const is zeros, so noise mode const adds no noise "
          "(the same as none)");
    return r;
  }
  ConvertResult c = readers::read_checkpoint_file(path);
  r.file_size = c.report.file_size;
  r.sha256 = c.report.source_sha256;
  r.format = c.report.container;
  if (c.report.pickle_protocol > 0) r.format += " (pickle protocol " + std::to_string(c.report.pickle_protocol) + ")";
  r.family = c.report.family;
  r.generator = c.report.generator;
  fill_from_model(r, c.model);
  r.w_avg_present = !c.report.w_avg_missing;
  if (!r.w_avg_present) r.w_avg_norm = 0;
  r.stored_dtypes = c.report.stored_dtypes;
  r.notes = c.report.notes;
  if (c.report.w_avg_missing) r.notes.push_back("the checkpoint has no w_avg (latent_avg); sg2 convert estimates it");
  r.warnings = c.report.warnings;
  r.warnings.insert(r.warnings.end(), c.report.config_warnings.begin(), c.report.config_warnings.end());
  return r;
}

std::string inspect_to_json(const InspectReport& r, int indent) {
  const ModelConfig& c = r.config;
  json channels = json::object();
  for (const auto& [res, ch] : c.synthesis.channels) channels[std::to_string(res)] = ch;
  json taps = json::array();
  for (float t : c.synthesis.resample_filter) taps.push_back(shortest(t));
  json noise = json::array();
  for (const NoiseLayer& l : r.noise_buffers)
    noise.push_back({{"layer", l.layer}, {"resolution", l.resolution}, {"height", l.height}, {"width", l.width}});
  json j = {
      {"file", r.file},
      {"file_size", r.file_size},
      {"sha256", r.sha256},
      {"format", r.format},
      {"family", r.family},
      {"generator", r.generator},
      {"resolution", c.img_resolution},
      {"img_resolution", c.img_resolution},
      {"img_height", c.height()},
      {"img_width", c.width()},
      {"num_ws", c.num_ws},
      {"z_dim", c.z_dim},
      {"w_dim", c.w_dim},
      {"c_dim", c.c_dim},
      {"img_channels", c.img_channels},
      {"mapping_layers", c.mapping.num_layers},
      {"mapping_lr_multiplier", shortest(c.mapping.lr_multiplier)},
      {"architecture", to_string(c.synthesis.architecture)},
      {"channels", channels},
      {"fp16_resolutions", c.synthesis.fp16_resolutions},
      {"conv_clamp", c.synthesis.conv_clamp ? json(shortest(*c.synthesis.conv_clamp)) : json(nullptr)},
      {"resample_filter", taps},
      {"use_noise", c.synthesis.use_noise},
      {"noise_buffers", noise},
      {"noise_const_missing", c.noise_const_missing},
      {"w_avg",
       {{"present", r.w_avg_present},
        {"estimated", r.w_avg_estimated},
        {"finite", r.w_avg_finite},
        {"norm", r.w_avg_finite ? json(r.w_avg_norm) : json(nullptr)}}},
      {"parameter_count", r.parameter_count},
      {"stored_dtypes", r.stored_dtypes},
      {"notes", r.notes},
      {"warnings", r.warnings},
      {"config", detail::parse_json_bounded(config_to_json(c), "the model's config")},
      {"provenance",
       {{"source_file", r.provenance.source_file},
        {"source_sha256", r.provenance.source_sha256},
        {"source_family", r.provenance.source_family},
        {"converter", r.provenance.converter}}},
  };
  return detail::json_dump(j, indent, /*replace_invalid_utf8=*/true);  // file names need not be UTF-8
}

std::string inspect_to_text(const InspectReport& r) {
  const ModelConfig& c = r.config;
  std::ostringstream os;
  auto row = [&](const char* k, const std::string& v) { os << "  " << std::left << std::setw(18) << k << v << "\n"; };
  os << readers::pickle::printable(r.file, 4096) << "\n";  // a file name may hold escapes or newlines
  row("format", r.format + ", " + std::to_string(r.file_size) + " bytes");
  // "stylegan3" is the stylegan3 repository's StyleGAN2 network (--cfg=stylegan2): its alias-free
  // StyleGAN3 generators are refused. The JSON and the model file keep the family's plain name.
  std::string family = detail::printable(r.family, 80), detail_text;
  if (r.family == "stylegan3") {
    family += " repo";
    detail_text = "StyleGAN2 network";
  }
  if (!r.generator.empty()) detail_text += (detail_text.empty() ? "" : ", ") + detail::printable(r.generator, 80);
  row("family", family + (detail_text.empty() ? "" : " (" + detail_text + ")"));
  row("resolution", std::to_string(c.width()) + "x" + std::to_string(c.height()) + ", " +
                        std::to_string(c.img_channels) + " channel" + (c.img_channels == 1 ? "" : "s") +
                        (c.square() ? "" : " (width x height: a non-square network)"));
  row("num_ws", std::to_string(c.num_ws));
  row("z_dim / w_dim", std::to_string(c.z_dim) + " / " + std::to_string(c.w_dim));
  row("c_dim", c.c_dim > 0
                   ? std::to_string(c.c_dim) + " (conditional, embed " + std::to_string(c.mapping.embed_features) + ")"
                   : std::string("0 (unconditional)"));
  row("mapping", std::to_string(c.mapping.num_layers) + " layers, width " + std::to_string(c.mapping.layer_features) +
                     ", lr_multiplier " + fmt_float(c.mapping.lr_multiplier) + ", " + to_string(c.mapping.activation));
  row("architecture", to_string(c.synthesis.architecture));
  std::string ch;
  for (const auto& [res, n] : c.synthesis.channels)
    ch += (ch.empty() ? "" : ", ") + std::to_string(res) + ":" + std::to_string(n);
  row("channels", ch);
  std::string fp16;
  for (int res : c.synthesis.fp16_resolutions) fp16 += (fp16.empty() ? "" : ", ") + std::to_string(res);
  row("fp16 blocks", fp16.empty() ? "none" : fp16);
  row("conv_clamp", c.synthesis.conv_clamp ? fmt_float(*c.synthesis.conv_clamp) : "none");
  std::string taps;
  for (float t : c.synthesis.resample_filter) taps += (taps.empty() ? "" : ", ") + fmt_float(t);
  row("resample_filter", "[" + taps + "]");
  if (c.synthesis.use_noise && c.noise_const_missing) {
    row("noise buffers", "none stored (noise_const is zeros: noise mode const adds no noise)");
  } else if (c.synthesis.use_noise) {
    std::string noise = std::to_string(r.noise_buffers.size()) + " noise_const maps (";
    const bool square = c.width() == c.height();  // non-square: each map's width x height, as the resolution
    for (size_t i = 0; i < r.noise_buffers.size(); ++i) {
      const int64_t res = r.noise_buffers[i].resolution;
      noise += (i ? ", " : "") + (square ? std::to_string(res)
                                         : std::to_string(res * c.width() / c.img_resolution) + "x" +
                                               std::to_string(res * c.height() / c.img_resolution));
    }
    row("noise buffers", noise + (square ? ")" : "; width x height)"));
  } else {
    row("noise buffers", "none (use_noise off)");
  }
  const std::string norm =
      r.w_avg_finite ? "norm " + fmt_float(r.w_avg_norm)
                     : "contains NaN or infinite values (truncation psi != 1 is refused; psi 1 never reads it)";
  row("w_avg", !r.w_avg_present
                   ? "absent (sg2 convert estimates it: mean mapping output over 10000 z from RandomState(0))"
               : r.w_avg_estimated ? "estimated, " + norm
                                   : "stored, " + norm);
  row("parameters", std::to_string(r.parameter_count));
  std::string dt;
  for (const auto& [k, n] : r.stored_dtypes) dt += (dt.empty() ? "" : ", ") + k + " x" + std::to_string(n);
  row("stored as", dt);
  row("sha256", r.sha256);
  if (r.format == "sg2 model file") {
    const Provenance& p = r.provenance;
    // Metadata text from the file: escaped before it reaches a terminal.
    std::string from =
        p.source_file.empty() ? std::string("(not recorded)") : readers::pickle::printable(p.source_file, 200);
    if (!p.source_family.empty()) from += " (" + readers::pickle::printable(p.source_family, 40) + ")";
    if (!p.source_sha256.empty()) from += ", sha256 " + readers::pickle::printable(p.source_sha256, 64);
    if (!p.converter.empty()) from += ", by " + readers::pickle::printable(p.converter, 40);
    row("converted from", from);
  }
  for (const std::string& n : r.notes) row("note", n);
  for (const std::string& w : r.warnings) row("warning", w);
  return os.str();
}

}  // namespace sg2
