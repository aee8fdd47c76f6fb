// sg2: running a generator — mapping (z, c) -> ws, synthesis ws -> images.
//
// Semantics follow the official `Generator.forward` of NVlabs stylegan2-ada-pytorch /
// stylegan3 `networks_stylegan2.py` (spec §1-§6), in float32 on every backend for precision fp32.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/model.h"
#include "sg2/tensor.h"

namespace sg2 {
// Engine-internal (engine/generator_access.h), declared outside the public visibility block
// so that its hidden definition matches this declaration (clang refuses a mismatch).
struct GeneratorAccess;
}  // namespace sg2

SG2_PUBLIC_BEGIN
namespace sg2 {

/// Arithmetic used by the synthesis network.
enum class Precision {
  automatic,  ///< "auto": fp16 exactly in the checkpoint's fp16 blocks, fp32 elsewhere (CUDA);
              ///< fp32 on the CPU backend
  fp32,       ///< strict float32 (TF32 off); the reference
  tf32,       ///< TF32 tensor-core convolutions, fp32 storage (CUDA only)
  fp16,       ///< fp16 storage and tensor-core operands in every block, fp32 accumulation;
              ///< styles, demodulation and the image path in fp32 (CUDA only)
};
/// "auto", "fp32", "tf32", "fp16"; parse throws Error(invalid_argument) on anything else.
const char* to_string(Precision p);
Precision parse_precision(const std::string& s);

/// Official `noise_mode`.
enum class NoiseMode {
  const_,  ///< "const": the stored noise_const maps times noise_strength
  random,  ///< "random": fresh N(0,1) maps, reproducible from NoiseSpec::seed and keys
  none,    ///< "none": no noise
};
const char* to_string(NoiseMode m);
NoiseMode parse_noise_mode(const std::string& s);

/// Where to run.
struct Device {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;  ///< CUDA ordinal
  /// "cpu", "cuda", "cuda:N"; throws Error(invalid_argument).
  static Device parse(const std::string& s);
  /// A device list for several generators (sg2/stream.h): what parse() takes, or "cuda:N,M,..."
  /// (a GPU may appear twice: two generators share it), or "cuda:all" (every usable GPU, in order).
  /// Throws Error(invalid_argument) for bad syntax, Error(device) for "cuda:all" without a usable GPU.
  static std::vector<Device> parse_list(const std::string& s);
  /// cuda:0 when this build has CUDA and a usable GPU is present, else cpu.
  static Device best_available();
  std::string str() const;
};

/// True when this build has the CUDA backend and at least one usable GPU; otherwise false and,
/// when `why` is given, the reason (no CUDA in this build, no device, driver too old, ...).
bool cuda_available(std::string* why = nullptr);
/// The number of GPUs this build can use (cuda:0 .. cuda:N-1; CUDA_VISIBLE_DEVICES applies); 0
/// without the CUDA backend or a usable GPU.
int usable_gpu_count();
/// Starts the CUDA driver and the context of `device` (what opening a Generator there waits for
/// first: 0.2 s to a few seconds, by machine), so that a caller may overlap it with loading a
/// model on another thread. Never throws and reports nothing: a Generator on the device says what
/// is wrong with it. Does nothing for the CPU or in a build without CUDA. Thread-safe; the work
/// runs on a thread of its own, so the calling thread's current CUDA device stays as it was.
void warm_up(const Device& device);

/// Truncation toward mapping.w_avg (official `truncation_psi`, `truncation_cutoff`).
struct Truncation {
  float psi = 1.0f;           ///< 1 = none; NaN or infinite is Error(invalid_argument)
  std::optional<int> cutoff;  ///< truncate ws rows [0, cutoff); nullopt = all rows
};

/// Noise for synthesis.
struct NoiseSpec {
  NoiseMode mode = NoiseMode::const_;
  /// random mode: the noise of sample n, layer l is `random_noise_map(seed, keys[n], l, r)`, so
  /// an image's noise does not depend on batch size or its position in the batch. When keys is
  /// empty, keys[n] = n.
  uint64_t seed = 0;
  std::vector<uint64_t> keys;
  /// const mode only, optional: per-sample replacement of the noise_const maps,
  /// maps[n][l] = [r, r] ([height, width] when non-square) float32 for every noise layer l in noise_layers() order (the
  /// TF run_generator convention, spec §8.2). Empty = use the stored maps.
  std::vector<std::vector<Tensor>> maps;
};

/// The deterministic random noise map of one (seed, key, noise layer): [r, r] float32 N(0,1)
/// from a counter-based generator. Same values on every backend and batch size.
Tensor random_noise_map(uint64_t seed, uint64_t key, int layer_index, int resolution);
/// The same for a non-square noise map [height, width] (NoiseLayer::height / width): element i
/// of the row-major map is drawn as element i of the square one, so (r, r) gives the map above.
Tensor random_noise_map(uint64_t seed, uint64_t key, int layer_index, int height, int width);

struct GeneratorOptions {
  std::optional<Device> device;  ///< default: Device::best_available()
  Precision precision = Precision::automatic;
  int max_batch = 0;  ///< largest batch run at once; 0 = backend default
  /// true (default): an image's bits never depend on how it is batched — the batch size, its
  /// position in the batch, the number of generators (CUDA: sg2's own kernels only, every choice
  /// fixed per layer; docs/precision.md, "Batch invariance"). false (CUDA): cuDNN for the tf32 and fp16
  /// convolutions and split-K tuned to the batch, faster on an H200 (auto +29 % img/s at batch 32)
  /// but an image may then differ in its last bits between batch sizes. The CPU backend is
  /// batch-invariant either way.
  bool batch_invariant = true;
  int threads = 0;             ///< CPU backend: worker threads; 0 = env SG2_CPU_THREADS,
                               ///< else every core this process may use. The output
                               ///< does not depend on it (bit for bit).
  bool reference_cpu = false;  ///< CPU backend: the plain C++ reference ops of
                               ///< kernels/ref (the tests' oracle; slow) instead of
                               ///< oneDNN; env SG2_CPU_REFERENCE=1 does the same
  std::string dump_dir;        ///< non-empty (or env SG2_DUMP_DIR): write every layer's
                               ///< output of the first batch as .npy (mapping_fc{i},
                               ///< b{res}_x, b{res}_img, as the fixtures' debug files)
};

/// What Generator::plan_batch decided, and from what.
struct BatchPlan {
  int batch = 1;                 ///< images per call: `requested` (even when it does not fit), else the default
  bool fits = true;              ///< batch x bytes_per_image x concurrent fits in bytes_available
  int largest_fitting = 0;       ///< the largest batch that fits (0: no memory limit is known)
  int64_t bytes_per_image = 0;   ///< estimated memory one image of a batch needs (0: not estimated)
  int64_t bytes_available = -1;  ///< memory available to the batches (-1: unknown)
  std::string memory;            ///< which memory: "host memory", "GPU memory of cuda:0"
};

/// A generator bound to a device. Not thread-safe; use one per thread.
class Generator {
 public:
  /// Throws Error(invalid_argument) when the model is invalid, Error(device) when the device
  /// cannot be used (no GPU: the message suggests `--device cpu`), Error(invalid_argument) when
  /// the CPU backend is asked for tf32 or fp16.
  explicit Generator(Model model, GeneratorOptions options = {});
  ~Generator();
  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;

  const Model& model() const;
  const ModelConfig& config() const;
  Device device() const;
  Precision precision() const;  ///< as requested (automatic stays automatic)

  /// Mapping network. z: [N, z_dim] float32 (cast from numpy's float64 by the caller, as the
  /// official network does first); c: [N, c_dim] float32 (one-hot) or empty when c_dim = 0.
  /// Returns ws [N, num_ws, w_dim] float32. Errors: wrong shapes; c missing for a conditional
  /// model; psi not finite; cutoff < 0.
  Tensor map(const Tensor& z, const Tensor& c, const Truncation& trunc = {});

  /// Synthesis network. ws: [N, num_ws, w_dim] float32. Returns images [N, img_channels, R, R]
  /// float32, nominally in [-1, 1] (unbounded). No truncation is applied to ws.
  Tensor synthesize(const Tensor& ws, const NoiseSpec& noise = {});

  /// map() then synthesize().
  Tensor generate(const Tensor& z, const Tensor& c, const Truncation& trunc = {}, const NoiseSpec& noise = {});

  /// The largest batch the generator runs at once: GeneratorOptions::max_batch, or
  /// plan_batch(0).batch when that is 0 (calls with more rows are split into such batches).
  int max_batch() const;

  /// How big a batch fits: the engine's one answer, for a run of `images` images (0 = not
  /// known) on `concurrent` generators of this model that share this device's memory at once.
  /// `requested` > 0: that batch, checked against the memory (BatchPlan::fits says whether it
  /// does; nothing is thrown); 0: the backend's preferred default (CPU oneDNN: about 1 GiB of
  /// activations, at most 64; CPU reference: 8; CUDA: a power of two up to 32 within half the
  /// free GPU memory), cut to what fits. Either way at most `images` when images > 0.
  /// Throws Error(out_of_memory) only when not even one image fits.
  BatchPlan plan_batch(int64_t images, int requested = 0, int concurrent = 1) const;

  /// Progress of synthesize() / generate(): `callback(fraction)` is called on the calling thread
  /// with the fraction (0, 1] of that call's synthesis work done, after every layer, by the CPU
  /// backend (the CUDA backend runs a whole batch as one graph and does not call it). An empty
  /// function turns it off. Exceptions thrown by the callback propagate out of synthesize().
  void set_progress(std::function<void(double fraction)> callback);

 private:
  friend struct GeneratorAccess;  // engine-internal access to the backend (benchmarks, tests)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --- inputs as the official scripts make them ----------------------------------------------

/// z for one seed: numpy RandomState(seed).randn(1, z_dim) cast to float32, shape [1, z_dim].
Tensor z_from_seed(uint32_t seed, int z_dim);
/// Rows of z_from_seed for each seed: [N, z_dim].
Tensor z_from_seeds(const std::vector<uint32_t>& seeds, int z_dim);
/// One-hot labels [N, c_dim] (c[n, classes[n]] = 1); an empty tensor when c_dim = 0 (the
/// classes are then ignored, so one call serves conditional and unconditional models).
/// Throws Error(invalid_argument) for a class outside [0, c_dim).
Tensor one_hot(const std::vector<int>& classes, int c_dim);
/// The TF run_generator convention (spec §8.2): rnd = RandomState(seed); z = rnd.randn(1, z_dim);
/// then one rnd.randn(1, 1, r, r) per noise layer in noise_layers() order. Returns z [1, z_dim]
/// and the maps (float32).
struct TfSeedInputs {
  Tensor z;
  std::vector<Tensor> noise_maps;
};
TfSeedInputs tf_seed_inputs(uint32_t seed, const ModelConfig& config);

/// Parses "0-7,42" into seeds, in order, duplicates kept; every seed must lie in [0, 2^32-1]
/// (never clamped or wrapped). Blanks around numbers are ignored ("0, 1"); leading zeros are
/// allowed ("007" is 7). Throws Error(invalid_argument) with the offending token.
std::vector<uint32_t> parse_seeds(const std::string& text);

}  // namespace sg2
SG2_PUBLIC_END
