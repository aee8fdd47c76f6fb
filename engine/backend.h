// sg2 internal: the interface every backend (cpu, cuda) implements.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/batch_pipe.h"
#include "sg2/generator.h"
#include "sg2/model.h"

namespace sg2 {

class DeviceBench;  // engine/device_bench.h

/// One backend instance runs one model on one device. Inputs are validated by Generator before
/// they arrive here (shapes, finite psi, class labels, noise spec sizes), and batches are at
/// most max_batch() rows.
class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "cuda:0"
  virtual std::string name() const = 0;
  /// Largest batch the Generator sends at once when the user sets none.
  virtual int default_max_batch() const = 0;
  /// z [N, z_dim] float32, c [N, c_dim] float32 (empty when c_dim = 0) -> ws [N, num_ws, w_dim].
  /// Truncation with psi != 1 lerps rows [0, cutoff) toward mapping.w_avg (spec §1.6).
  /// When dump_dir is non-empty, each mapping layer's output is written there (mapping_fc{i}.npy).
  virtual Tensor map(const Tensor& z, const Tensor& c, const Truncation& trunc, const std::string& dump_dir) = 0;
  /// ws [N, num_ws, w_dim] -> img [N, img_channels, R, R]. For NoiseMode::random, noise.keys has
  /// N entries; noise.maps is empty or has N rows of num_ws-1 maps. When dump_dir is non-empty,
  /// every block's x and img (and the mapping outputs, in map) are written there as .npy.
  virtual Tensor synthesize(const Tensor& ws, const NoiseSpec& noise, const std::string& dump_dir) = 0;
  /// Device-side timing hooks for `sg2 bench` (the CUDA backend); nullptr for other backends.
  virtual DeviceBench* device_bench() { return nullptr; }
  /// A pipe of `slots` host slots for batches of up to `batch` images (batch_pipe.h). The CPU
  /// backend runs synthesize() synchronously and converts on the host (make_host_pipe); the CUDA
  /// backend converts on the device and copies asynchronously.
  virtual std::unique_ptr<BatchPipe> make_pipe(int batch, PipeOutputs out, int slots) = 0;
  /// Progress of synthesize: `cb(fraction)` is called on the calling thread between the steps of
  /// a batch with the fraction (0, 1] of its work done. Backends that cannot report ignore it.
  virtual void set_progress(std::function<void(double)> cb) { (void)cb; }
};

/// The synchronous host pipe over backend.synthesize() (batch_pipe.h).
/// Throws Error(invalid_argument) when a synthesized batch `img` ([N, C, H, W] float32) holds a
/// NaN or an infinite value: "the synthesis of sample K gave NaN or infinite pixels ...", K counted
/// from `first_sample`. Such pixels come from latents far outside what the mapping network outputs
/// (a huge truncation psi, or given ws); the official code writes them as 0 without a word.
void require_finite_images(const Tensor& img, int64_t first_sample = 0);

std::unique_ptr<BatchPipe> make_host_pipe(Backend& backend, const ModelConfig& cfg, int batch, PipeOutputs out,
                                          int slots);

/// The CPU backend: the oneDNN path (engine/cpu/executor.h) with `threads` workers (0 = env
/// SG2_CPU_THREADS, else every core); or, when `reference` is set, env SG2_CPU_REFERENCE=1, or
/// sg2 was built without oneDNN (-DSG2_ONEDNN=OFF), the plain C++ reference ops of kernels/ref.
/// Both compute in float32: Error(invalid_argument) for tf32 / fp16.
std::unique_ptr<Backend> make_cpu_backend(const Model& model, Precision precision, int threads, bool reference);

/// The CUDA backend on device `index` (options: GeneratorOptions::batch_invariant). In a build
/// without CUDA, throws Error(device) saying so.
std::unique_ptr<Backend> make_cuda_backend(const Model& model, int index, Precision precision, bool batch_invariant);

/// Number of usable CUDA devices (0 in a build without CUDA); `why` gets the reason when 0, and
/// `hint` what to do about it when there is advice ("rebuild with -DSG2_CUDA_ARCHITECTURES=86").
int cuda_device_count(std::string* why, std::string* hint = nullptr);

}  // namespace sg2
