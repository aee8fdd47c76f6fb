// sg2 readers: what the per-family converters share (family_ada.cpp, family_tf.cpp,
// family_rosinality.cpp): their result type and small helpers for filters, fp16 blocks and checks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "readers/checkpoint.h"
#include "sg2/model.h"

namespace sg2::readers {

/// The result of one family converter.
struct Conversion {
  Model model;                     ///< config and float32 tensors under official names
  std::string family;              ///< stylegan2-ada-pytorch | stylegan3 | stylegan2-tf | stylegan2-ada-tf | rosinality
  std::string generator;           ///< where the generator was found ("G_ema", "Gs (tuple item 2)", "g_ema")
  bool w_avg_missing = false;      ///< the source had no w_avg; mapping.w_avg holds zeros until estimated
  std::vector<std::string> notes;  ///< facts worth reporting (ignored kwargs, defaults used, ...)
  std::vector<std::string> warnings;  ///< what a user must hear and the model does not record (ignored variables)
  std::vector<std::string> config_warnings;  ///< the same for facts the model's config records (no stored noise maps)
  std::map<std::string, int> stored_dtypes;  ///< how many source tensors were stored in each dtype
};

/// The 1-D taps of a stored 2-D `resample_filter` buffer (official `setup_filter`: outer(k, k)
/// normalised to sum 1): the row sums. Throws Error(unsupported) "non-separable resample
/// filter" when their outer product does not reproduce the buffer, naming `what`. A 1-D buffer
/// (>= 8 taps stay 1-D in the official code) is returned as is. The taps are made pretty: small
/// integer multiples become integers ([1, 3, 3, 1]), as the model file keeps them unnormalised.
std::vector<float> filter_taps(const Tensor& filter, const std::string& what);

/// Taps as given by a kwarg ([1, 3, 3, 1]); 1-D, finite, non-zero sum, else Error(unsupported).
std::vector<float> pretty_taps(const std::vector<double>& taps, const std::string& what);

/// Blocks that run in fp16 for `num_fp16_res` (official SynthesisNetwork: resolutions >=
/// max(2^(log2(img_resolution) + 1 - num_fp16_res), 8)).
std::vector<int> fp16_resolutions(int img_resolution, int num_fp16_res);

/// Validates the converted model (config and every tensor name / shape / finiteness) and throws
/// Error(bad_file) with a one-line summary naming `what` when something is wrong.
void check_converted(const Model& model, const std::string& what);

/// "'a', 'b', 'c' and 2 more": at most `max` names quoted, then how many were left out. The names
/// must already be printable (pickle::printable), as every name the converters keep is.
std::string name_list(const std::vector<std::string>& names, size_t max);

/// log2 of a power of two, or -1.
int log2_exact(int64_t v);

/// `v` as an int when it is a whole number in [-2^30, 2^30]; else Error(bad_file) naming `what`
/// and `name` (no float-to-int overflow on hostile values).
int whole_number(double v, const std::string& what, const char* name);

/// A tensor dimension (or a difference of two) as a config int: `v` when it lies in [0, 2^30],
/// else Error(bad_file) naming `what` and `tensor` (no silent truncation of 2^32 + 3 to 3).
int dim_int(int64_t v, const std::string& what, const char* tensor);

/// Sets the image height and width of `config` (img_resolution already set) from the 4x4 block's
/// const of `h` x `w` pixels: 4x4 is square; 4x2, 4x1, 2x4 and 1x4 are non-square networks (the
/// image img_resolution x img_resolution / 2, ...). Any other shape is Error(unsupported)
/// "non-square ... " saying which shapes sg2 runs, naming `what` and `tensor`.
void set_const_shape(ModelConfig& config, int64_t h, int64_t w, const std::string& what, const char* tensor);

/// Validates a derived configuration before any tensor is allocated for it; Error(bad_file)
/// naming `what` (e.g. a 2^31-wide layer claimed by a corrupt shape).
void check_config(const ModelConfig& config, const std::string& what);

}  // namespace sg2::readers
