// sg2: the generator's configuration and weights, and how they are loaded and saved.
//
// Names follow the official PyTorch implementation (NVlabs stylegan2-ada-pytorch / stylegan3
// `networks_stylegan2.py`): tensors carry their official `G_ema` state-dict names, and the
// configuration uses the constructor argument names (z_dim, channel_base, conv_clamp, ...).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/tensor.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// The mapping network's nonlinearity (official MappingNetwork `activation`, bias_act names).
enum class Activation { linear, relu, lrelu };
/// How synthesis blocks combine (official SynthesisBlock `architecture`).
enum class Architecture { orig, skip, resnet };
/// "linear", "relu", "lrelu" / "orig", "skip", "resnet".
const char* to_string(Activation a);
const char* to_string(Architecture a);
/// The value an official name stands for; false (and *out untouched) for any other text.
bool parse_activation(const std::string& name, Activation* out);
bool parse_architecture(const std::string& name, Architecture* out);

/// MappingNetwork configuration (official `MappingNetwork.__init__`).
struct MappingConfig {
  int num_layers = 8;           ///< number of fc layers (2 for ada --cfg=auto, 8 for config-f)
  float lr_multiplier = 0.01f;  ///< learning-rate multiplier of the fc layers (runtime gain)
  int embed_features = 0;       ///< width of the label embedding (w_dim when c_dim > 0, else 0)
  int layer_features = 0;       ///< width of the hidden fc layers (w_dim by default)
  Activation activation = Activation::lrelu;
};

/// SynthesisNetwork configuration (official `SynthesisNetwork` / `SynthesisBlock`).
struct SynthesisConfig {
  Architecture architecture = Architecture::skip;
  std::map<int, int> channels;                        ///< block resolution -> channels, 4 ... img_resolution
  std::optional<float> conv_clamp;                    ///< clamp of every layer's output; nullopt = no clamp
  std::vector<int> fp16_resolutions;                  ///< blocks the checkpoint runs in fp16 (used by precision auto)
  std::vector<float> resample_filter = {1, 3, 3, 1};  ///< 1-D taps; the 2-D filter is their
                                                      ///< outer product normalised to sum 1
  bool use_noise = true;                              ///< layers have noise_const / noise_strength
};

/// The whole generator's configuration; the `config` object of the model file (design.md §5).
struct ModelConfig {
  int z_dim = 512;
  int c_dim = 0;
  int w_dim = 512;
  int num_ws = 18;  ///< 2*log2(img_resolution) - 2
  /// The larger image side and the block names' resolution (b4 ... b{img_resolution}); for a
  /// square network the image is img_resolution x img_resolution.
  int img_resolution = 1024;
  /// Non-square networks (StyleGAN-Human's 1024x512, rectangular forks): the image height and
  /// width; 0 = img_resolution. The larger equals img_resolution, the smaller is img_resolution / 2
  /// or / 4 (the const is [C, 4 * img_height / img_resolution, 4 * img_width / img_resolution]).
  /// Model file key `img_height` / `img_width`, written only when the network is not square
  /// (format_version 2; design.md §5).
  int img_height = 0;
  int img_width = 0;
  int img_channels = 3;
  MappingConfig mapping;
  SynthesisConfig synthesis;
  bool w_avg_estimated = false;  ///< true when the source had no w_avg and sg2 estimated it
  /// true when the source stored no noise maps (a rosinality state dict without `noises.*`):
  /// every noise_const is zeros, so noise mode const adds no noise (the same as none)
  bool noise_const_missing = false;

  /// Block resolutions 4, 8, ..., img_resolution.
  std::vector<int> block_resolutions() const;
  /// The image height and width (img_resolution when img_height / img_width are 0).
  int height() const { return img_height > 0 ? img_height : img_resolution; }
  int width() const { return img_width > 0 ? img_width : img_resolution; }
  bool square() const { return height() == width(); }
  /// The feature maps of block `res` (and its noise maps): res * height() / img_resolution rows,
  /// res * width() / img_resolution columns; res for a square network.
  int block_height(int res) const;
  int block_width(int res) const;
  /// Channels of block `res`; throws Error(invalid_argument) for a resolution not in the net.
  int channels_at(int res) const;
  /// Throws Error(bad_file) naming the first inconsistency (num_ws vs resolution, missing
  /// channel entries, unknown architecture, non-power-of-two resolution, ...).
  void validate() const;
};

/// Where a model came from (model file `__metadata__`).
struct Provenance {
  std::string source_file;    ///< base name of the checkpoint it was converted from
  std::string source_sha256;  ///< hex sha256 of that file
  std::string source_family;  ///< stylegan2-ada-pytorch | stylegan3 | stylegan2-tf | stylegan2-ada-tf | rosinality
  std::string converter;      ///< "sg2 <version>"
};

/// A generator: configuration plus float32 weights under their official names.
struct Model {
  ModelConfig config;
  Provenance provenance;
  std::map<std::string, Tensor> tensors;

  /// The tensor called `name`; throws Error(bad_file) naming it when absent.
  const Tensor& at(const std::string& name) const;
  bool has(const std::string& name) const { return tensors.count(name) != 0; }
};

/// One problem found by validate_model().
struct ModelProblem {
  enum class Kind { missing, unexpected, bad_shape } kind;
  std::string name;    ///< tensor name
  std::string detail;  ///< e.g. "expected [512, 512], got [512, 256]"
};

/// The exact tensor names and shapes a configuration requires (design.md §5), in a stable order.
std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(const ModelConfig& config);

/// Every missing, unexpected or mis-shaped tensor, and every tensor with NaN or infinite values, at
/// once (empty when the model is valid). mapping.w_avg is exempt from the finiteness check: it is
/// read only by truncation toward it (psi != 1), which require_finite_w_avg() guards, so a model
/// whose only non-finite values are in w_avg (a diverged tracked average) still runs at psi 1.
std::vector<ModelProblem> validate_model(const Model& model);

/// True when mapping.w_avg is present and holds only finite values.
bool w_avg_finite(const Model& model);

/// Throws Error(invalid_argument) when truncation with `psi` (!= 1) would read a w_avg that is not
/// finite: "truncation psi P needs w_avg, and this model's w_avg contains NaN or infinite values
/// ...", with what to do (psi 1, or sg2 convert --w-avg FILE.npy). Returns normally for psi 1 or a
/// finite w_avg. Generator::map and the plain formula of sg2 mix (style_mixing.py) call it.
void require_finite_w_avg(const Model& model, float psi);

/// Throws Error(bad_file) listing every problem of validate_model(), prefixed by `what`
/// (usually the file name). Returns normally when there is none.
void check_model(const Model& model, const std::string& what);

/// Total number of parameters (elements of all tensors that are not buffers: not w_avg or
/// noise_const).
int64_t parameter_count(const Model& model);

// --- the model file (design.md §5: safetensors, format_version 1) --------------------------

/// Reads a model file (memory-mapped). Validates header offsets, sizes, dtypes, the metadata
/// (format, format_version, config) and every tensor (validate_model). float16 tensors are
/// widened to float32. Throws Error(bad_file | io) naming `path` and the problem; a newer
/// format_version is refused with a message saying so.
Model load_model_file(const std::string& path);

/// Writes `model` as a model file: float32 tensors in expected_tensors() order, metadata with
/// format, format_version, config JSON and provenance. Writes to a temporary file beside `path`
/// and renames it, so `path` is never left half-written. Throws Error(io | invalid_argument).
void save_model_file(const std::string& path, const Model& model);

/// True when the file starts like a safetensors file (8-byte header length then '{').
bool is_model_file(const std::string& path);

/// Loads a model from a model file or from any supported checkpoint (converted in memory; see
/// sg2 convert). Throws Error naming the file.
Model load_model(const std::string& path);

/// The configuration as the model file's `config` JSON text, and back.
std::string config_to_json(const ModelConfig& config, int indent = -1);
ModelConfig config_from_json(const std::string& json_text, const std::string& what);

/// The names of the noise layers in TensorFlow creation order (noise0 -> b4.conv1,
/// noise{2k-5} -> b{2^k}.conv0, noise{2k-4} -> b{2^k}.conv1), num_ws - 1 entries.
struct NoiseLayer {
  std::string layer;  ///< "synthesis.b8.conv0"
  int resolution;     ///< its block's resolution: the side of its [r, r] noise map when square
  int height = 0;     ///< its noise map is [height, width] (both = resolution when square)
  int width = 0;
};
std::vector<NoiseLayer> noise_layers(const ModelConfig& config);

/// The version string of this build ("0.1.0").
const char* version();

}  // namespace sg2
SG2_PUBLIC_END
