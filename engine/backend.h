// sg2 internal: the interface every backend (cpu, cuda) implements.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/batch_pipe.h"
#include "formats/nonfinite.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/image_pipe.h"
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
  /// The batch this backend prefers when the user sets none, before the memory check of
  /// Generator::plan_batch (engine/generator.cpp, the one place that decides what fits).
  virtual int preferred_batch() const = 0;
  /// Estimated bytes one image of a batch holds on this backend's device at its peak (its live
  /// buffers per sample), for plan_batch.
  virtual int64_t bytes_per_image() const = 0;
  /// Bytes of this backend's device memory available now (-1: unknown), and its name.
  virtual int64_t memory_available() const = 0;
  virtual std::string memory_name() const = 0;
  /// true: a batch that does not fit is split and run in pieces (the CUDA backend halves it on
  /// out-of-memory), so plan_batch never refuses a requested batch; false: the whole batch must fit.
  virtual bool splits_on_out_of_memory() const { return false; }
  /// z [N, z_dim] float32, c [N, c_dim] float32 (empty when c_dim = 0) -> ws [N, num_ws, w_dim].
  /// Truncation with psi != 1 lerps rows [0, cutoff) toward mapping.w_avg (spec §1.6).
  /// When dump_dir is non-empty, each mapping layer's output is written there (mapping_fc{i}.npy).
  virtual Tensor map(const Tensor& z, const Tensor& c, const Truncation& trunc, const std::string& dump_dir) = 0;
  /// ws [N, num_ws, w_dim] -> img [N, img_channels, R, R]. For NoiseMode::random, noise.keys has
  /// N entries; noise.maps is empty or has N rows of num_ws-1 maps. When dump_dir is non-empty,
  /// every block's x and img (and the mapping outputs, in map) are written there as .npy.
  virtual Tensor synthesize(const Tensor& ws, const NoiseSpec& noise, const std::string& dump_dir) = 0;
  /// The styles synthesis computes from ws [N, num_ws, w_dim]: [N, style_dims] in the order of
  /// sg2/styles.h, by the same code synthesize() uses (CPU backends; the CUDA pipe copies its own).
  virtual Tensor styles(const Tensor& ws) {
    (void)ws;
    fail(ErrorKind::unsupported, name(), ": this backend does not hand out styles");
  }
  /// Device-side timing hooks for `sg2 bench` (the CUDA backend); nullptr for other backends.
  virtual DeviceBench* device_bench() { return nullptr; }
  /// A pipe of `slots` host slots for batches of up to `batch` images (batch_pipe.h). The CPU
  /// backend runs synthesize() synchronously and converts on the host (make_host_pipe); the CUDA
  /// backend converts on the device and copies asynchronously.
  virtual std::unique_ptr<BatchPipe> make_pipe(int batch, PipeOutputs out, int slots) = 0;
  /// Progress of synthesize: `cb(fraction)` is called on the calling thread between the steps of
  /// a batch with the fraction (0, 1] of its work done. Backends that cannot report ignore it.
  virtual void set_progress(std::function<void(double)> cb) { (void)cb; }
  /// True when the backend builds state per batch size (the CUDA backend: buffers and a CUDA graph per
  /// size), so that callers with batches of every size should pad them to a few sizes (image_pipe.h).
  virtual bool keeps_state_per_batch_size() const { return false; }
  /// Keep the state of at least `n` batch sizes at once (the CUDA backend keeps 2 by default and drops
  /// the least recently used beyond that). Backends without such state ignore it.
  virtual void keep_batch_sizes(int n) { (void)n; }
  /// The device memory in use (sg2/image_pipe.h device_memory); false for backends without a device.
  virtual bool device_memory(DeviceMemory* out) {
    (void)out;
    return false;
  }
};

/// The synchronous host pipe over backend.synthesize() (batch_pipe.h); it checks every batch with
/// require_finite_images (formats/nonfinite.h), blaming out.nonfinite_source.

/// About how many bytes the CPU reference backend holds per image of a batch (its peak).
int64_t reference_cpu_bytes_per_image(const ModelConfig& cfg);

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

/// Creates device `index`'s primary context (sg2/generator.h warm_up); errors are ignored.
void cuda_warm_up(int index);

}  // namespace sg2
