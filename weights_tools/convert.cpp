// sg2 weights_tools: checkpoint conversion entry points, load_model and the w_avg estimate
// (convert.h).
#include "weights_tools/convert.h"

#include <cmath>

#include "file_util.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/random_state.h"
#include "weights_tools/checkpoint.h"
#include "weights_tools/families.h"

namespace sg2 {

Tensor estimate_w_avg(const Model& model, int samples, uint32_t seed) {
  if (samples < 1) fail(ErrorKind::invalid_argument, "w_avg estimate needs at least one sample, got ", samples);
  const ModelConfig& cfg = model.config;
  GeneratorOptions opts;
  opts.device = Device{};
  opts.precision = Precision::fp32;
  Generator gen(model, opts);
  RandomState rnd(seed);
  std::vector<double> sum(static_cast<size_t>(cfg.w_dim), 0.0);
  const int batch = 500;
  for (int start = 0; start < samples; start += batch) {
    const int n = std::min(batch, samples - start);
    Tensor z({n, cfg.z_dim});
    for (int64_t i = 0; i < z.numel(); ++i) z[i] = static_cast<float>(rnd.gauss());
    std::vector<int> classes;
    if (cfg.c_dim > 0)
      for (int i = 0; i < n; ++i) classes.push_back((start + i) % cfg.c_dim);
    Tensor ws = gen.map(z, cfg.c_dim > 0 ? one_hot(classes, cfg.c_dim) : Tensor(), Truncation{});
    const int64_t row = static_cast<int64_t>(cfg.num_ws) * cfg.w_dim;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < cfg.w_dim; ++j) sum[static_cast<size_t>(j)] += ws[i * row + j];
  }
  Tensor w({cfg.w_dim});
  for (int j = 0; j < cfg.w_dim; ++j) w[j] = static_cast<float>(sum[static_cast<size_t>(j)] / samples);
  return w;
}

ConvertResult convert_checkpoint_memory(const uint8_t* data, size_t size, const std::string& name, const ConvertOptions& options) {
  auto ck = weights::open_checkpoint(data, size, name);
  weights::Conversion conv = weights::detect_and_convert(*ck);
  ConvertResult res;
  ConvertReport& rep = res.report;
  rep.source_file = name;
  rep.file_size = size;
  rep.container = weights::container_name(ck->container);
  rep.pickle_protocol = ck->pickle_protocol;
  rep.family = conv.family;
  rep.generator = conv.generator;
  rep.stored_dtypes = conv.stored_dtypes;
  rep.notes = conv.notes;
  rep.source_sha256 = detail::sha256_hex(data, size);
  ck.reset();  // release the parse before the (possibly long) estimate
  Model& m = res.model = std::move(conv.model);
  weights::check_converted(m, name);
  if (conv.w_avg_missing) {
    rep.w_avg_missing = true;
    if (options.estimate_w_avg) {
      m.tensors["mapping.w_avg"] = estimate_w_avg(m, options.w_avg_samples, options.w_avg_seed);
      m.config.w_avg_estimated = true;
      rep.w_avg_estimated = true;
      rep.w_avg_samples = options.w_avg_samples;
      rep.w_avg_seed = options.w_avg_seed;
      rep.warnings.push_back("the checkpoint has no w_avg (latent_avg); estimated it as the mean mapping output over " +
                             std::to_string(options.w_avg_samples) + " z from RandomState(" + std::to_string(options.w_avg_seed) +
                             "), so truncation (psi != 1) differs slightly from a tracked average");
    } else {
      rep.notes.push_back("the checkpoint has no w_avg (latent_avg); sg2 convert estimates it");
    }
  }
  m.provenance.source_file = detail::base_name(name);
  m.provenance.source_sha256 = rep.source_sha256;
  m.provenance.source_family = conv.family;
  m.provenance.converter = std::string("sg2 ") + version();
  return res;
}

ConvertResult convert_checkpoint_report(const std::string& path, const ConvertOptions& options) {
  detail::MappedFile file(path);
  return convert_checkpoint_memory(file.data(), file.size(), path, options);
}

Model convert_checkpoint(const std::string& path, const ConvertOptions& options) {
  return convert_checkpoint_report(path, options).model;
}

Model load_model(const std::string& path) {
  if (is_model_file(path)) return load_model_file(path);
  return convert_checkpoint(path);
}

}  // namespace sg2
