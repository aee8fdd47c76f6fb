// sg2: the load facade — model files and checkpoints to a Model (sg2/model.h load_model), and
// checkpoint conversion with the w_avg estimate for files that have none (sg2/convert.h). It sits
// above the engine and the readers: the readers stay a leaf (file -> Model + what it lacked), and
// the estimate runs the mapping network through the engine's Generator.
#include <algorithm>
#include <cmath>

#include "readers/read_checkpoint.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/model.h"
#include "sg2/random_state.h"
#include "util/trace.h"

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

namespace {

/// Stores a supplied w_avg, or fills a missing one by the estimate when the options ask for it.
void complete(ConvertResult& res, const ConvertOptions& options) {
  ConvertReport& rep = res.report;
  if (!options.w_avg.empty()) {
    const Tensor& w = options.w_avg;
    const int64_t D = res.model.config.w_dim;
    if (!((w.ndim() == 1 && w.dim(0) == D) || (w.ndim() == 2 && w.dim(0) == 1 && w.dim(1) == D)))
      fail(ErrorKind::invalid_argument, "the supplied w_avg has shape ", w.shape_str(), "; this generator needs [", D,
           "] or [1, ", D, "] (w_dim ", D, ")");
    for (float v : w.vec())
      if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "the supplied w_avg contains NaN or infinite values");
    res.model.tensors["mapping.w_avg"] = w.reshaped({D});
    rep.w_avg_supplied = true;
    rep.w_avg_finite = true;
    if (!rep.w_avg_missing)
      rep.warnings.push_back("the supplied w_avg replaces the checkpoint's own (tracked during training)");
    return;
  }
  if (!rep.w_avg_finite)
    rep.warnings.push_back(
        "the checkpoint's w_avg contains NaN or infinite values: runs at truncation psi 1 never read it, "
        "truncation toward it (psi != 1) is refused; sg2 convert --w-avg W_AVG.npy stores another");
  if (!rep.w_avg_missing) return;
  if (!options.estimate_w_avg) {
    rep.notes.push_back("the checkpoint has no w_avg (latent_avg); sg2 convert estimates it");
    return;
  }
  Model& m = res.model;
  m.tensors["mapping.w_avg"] = estimate_w_avg(m, options.w_avg_samples, options.w_avg_seed);
  m.config.w_avg_estimated = true;
  rep.w_avg_estimated = true;
  rep.w_avg_samples = options.w_avg_samples;
  rep.w_avg_seed = options.w_avg_seed;
  rep.config_warnings.push_back(
      "the checkpoint has no w_avg (latent_avg); estimated it as the mean mapping output over " +
      std::to_string(options.w_avg_samples) + " z from RandomState(" + std::to_string(options.w_avg_seed) +
      "), so truncation (psi != 1) differs slightly from a tracked average");
}

}  // namespace

ConvertResult convert_checkpoint_memory(const uint8_t* data, size_t size, const std::string& name,
                                        const ConvertOptions& options) {
  ConvertResult res = readers::read_checkpoint_memory(data, size, name);
  complete(res, options);
  return res;
}

ConvertResult convert_checkpoint_report(const std::string& path, const ConvertOptions& options) {
  detail::trace_step("checkpoint: reading");
  ConvertResult res = readers::read_checkpoint_file(path);
  detail::trace_step("checkpoint: read and checked");
  complete(res, options);
  return res;
}

Model convert_checkpoint(const std::string& path, const ConvertOptions& options) {
  return convert_checkpoint_report(path, options).model;
}

Model load_model(const std::string& path) {
  if (is_model_file(path)) return load_model_file(path);
  return convert_checkpoint(path);
}

}  // namespace sg2
