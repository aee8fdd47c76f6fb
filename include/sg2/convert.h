// sg2: converting real StyleGAN2 checkpoints to sg2 models, natively and safely, and inspecting them.
// (The readers live in readers/, a leaf of the library; this facade, api/load.cpp,
// adds the w_avg estimate, which runs the mapping network.)
//
// Reads, without Python and without ever executing anything from the file:
//  * stylegan2-ada-pytorch network pickles            (family "stylegan2-ada-pytorch")
//  * stylegan3-repo StyleGAN2 pickles (--cfg=stylegan2) (family "stylegan3")
//  * NVlabs StyleGAN2 TensorFlow pickles               (family "stylegan2-tf")
//  * NVlabs StyleGAN2-ADA TensorFlow pickles           (family "stylegan2-ada-tf")
//  * rosinality/stylegan2-pytorch .pt checkpoints      (family "rosinality"), zip or legacy torch.save
// The family is detected from the file's structure, never from its name. The architecture is
// derived from tensor shapes and module attributes (spec §7). StyleGAN1, StyleGAN3 (alias-free),
// discriminator-only files, SWAGAN and progressive-growing networks are refused with an
// "unsupported: ..." error.
//
// w_avg estimation (only when the source has none, e.g. rosinality training checkpoints, which
// store no latent_avg): w_avg = the float64 mean, rounded to float32, of the mapping network's
// output w (psi 1) over `samples` latents z drawn as
//     z = numpy.random.RandomState(seed).randn(samples, z_dim).astype(float32)
// i.e. ONE RandomState(seed) stream read in C order (row i = sample i), defaults samples = 10000,
// seed = 0. For a conditional network sample i uses the one-hot label of class i % c_dim.
// The model's config then says `w_avg_estimated: true`. It is computed with sg2::Generator on the
// CPU backend.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/model.h"
#include "sg2/tensor.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

struct ConvertOptions {
  bool estimate_w_avg = true;  ///< false: leave a missing w_avg at zeros (what `sg2 inspect` does)
  int w_avg_samples = 10000;   ///< latents averaged when estimating w_avg (see above)
  uint32_t w_avg_seed = 0;     ///< RandomState seed of those latents
  /// Non-empty: the mean latent to store as mapping.w_avg, [w_dim] or [1, w_dim] float32 (finite),
  /// instead of the checkpoint's own or an estimate (sg2 convert --w-avg FILE.npy: the mean a
  /// user's own pipeline truncated toward). Error(invalid_argument) when it does not fit.
  Tensor w_avg;
};

/// What a conversion found; the library never prints, the CLI shows `warnings` and
/// `config_warnings`.
struct ConvertReport {
  std::string source_file;  ///< the path as given
  std::string source_sha256;
  uint64_t file_size = 0;
  std::string container;         ///< "pickle", "torch.save zip", "torch.save legacy"
  int pickle_protocol = 0;       ///< of the top-level pickle (0: protocol 0/1 or unknown)
  std::string family;            ///< provenance family (see above)
  std::string generator;         ///< which network was converted ("G_ema", "Gs", "g_ema", ...)
  bool w_avg_missing = false;    ///< the source had no w_avg / latent_avg / dlatent_avg
  bool w_avg_estimated = false;  ///< ... and it was estimated (the config says so too)
  bool w_avg_supplied = false;   ///< ConvertOptions::w_avg was stored
  /// false: the stored w_avg holds NaN or infinite values (kept; runs at truncation psi 1 never read
  /// it, psi != 1 is refused: require_finite_w_avg in sg2/model.h); a warning says so
  bool w_avg_finite = true;
  int w_avg_samples = 0;
  uint32_t w_avg_seed = 0;
  std::map<std::string, int> stored_dtypes;  ///< source tensors per stored dtype ("float32": 56)
  std::vector<std::string> warnings;         ///< worth telling a user, not recorded in the model (ignored
                                             ///< variables, a replaced w_avg)
  /// Worth telling a user, about facts the model's config records (an estimated w_avg, no stored
  /// noise maps): a later run of the model can restate them for its own options, as sg2 generate does.
  std::vector<std::string> config_warnings;
  std::vector<std::string> notes;  ///< informational (defaults assumed, ...)
};

struct ConvertResult {
  Model model;
  ConvertReport report;
};

/// Converts a checkpoint file. Model::provenance is filled (source_file = base name,
/// source_sha256, source_family, converter "sg2 <version()>"), and check_model passes.
/// Throws sg2::Error naming the file: io (cannot read), bad_file (corrupt, truncated, not a
/// checkpoint, a pickle that would call os.system, ...; the message names where it breaks),
/// unsupported (StyleGAN1/3, discriminator-only, ...). Error messages are one line.
Model convert_checkpoint(const std::string& path, const ConvertOptions& options = {});
ConvertResult convert_checkpoint_report(const std::string& path, const ConvertOptions& options = {});

/// The same from bytes in memory; `name` is used in messages and as source_file.
ConvertResult convert_checkpoint_memory(const uint8_t* data, size_t size, const std::string& name,
                                        const ConvertOptions& options = {});

/// The w_avg estimate described at the top of this file: [w_dim] float32. `model` must be
/// complete apart from w_avg. Throws Error(invalid_argument) for samples < 1.
Tensor estimate_w_avg(const Model& model, int samples = 10000, uint32_t seed = 0);

// --- sg2 inspect ---------------------------------------------------------------------------

/// Everything `sg2 inspect` shows about a checkpoint or a model file.
struct InspectReport {
  std::string file;  ///< path as given
  uint64_t file_size = 0;
  std::string sha256;
  std::string format;     ///< "sg2 model file", "pickle (protocol 4)", "torch.save zip", ...
  std::string family;     ///< source family (a model file: its provenance's)
  std::string generator;  ///< converted network ("G_ema", ...); "" for model files
  ModelConfig config;
  Provenance provenance;  ///< model files: their metadata; checkpoints: what convert would write
  int64_t parameter_count = 0;
  std::vector<NoiseLayer> noise_buffers;  ///< layers with a stored noise_const map (none when
                                          ///< config.noise_const_missing)
  bool w_avg_present = false;             ///< the file holds a w_avg (estimated or not)
  bool w_avg_estimated = false;           ///< config.w_avg_estimated
  bool w_avg_finite = true;               ///< false: w_avg holds NaN or infinite values (norm NaN)
  double w_avg_norm = 0;                  ///< L2 norm of w_avg (0 when absent)
  std::map<std::string, int> stored_dtypes;
  std::vector<std::string> notes;
  std::vector<std::string> warnings;  ///< what changes results (no stored noise maps, ignored variables, ...)
};

/// Inspects a checkpoint (converted in memory, without estimating a missing w_avg) or a model
/// file. Throws what convert_checkpoint / load_model_file throw.
InspectReport inspect_file(const std::string& path);

/// The report as a JSON object (stable keys, for machines) and as aligned text (for people).
std::string inspect_to_json(const InspectReport& report, int indent = 2);
std::string inspect_to_text(const InspectReport& report);

}  // namespace sg2
SG2_PUBLIC_END
