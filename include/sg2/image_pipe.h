// sg2: batches in flight on one generator, for callers that form their own batches (a server that
// merges the requests of many clients into one batch: `sg2 serve`).
//
//   sg2::ImagePipe pipe(gen, 32, 4);                 // batches of 1 to 32 images, 4 in flight
//   int id = pipe.submit(ws, noise);                 // ws [n, num_ws, w_dim]; returns at once on a GPU
//   sg2::ImageBatch b = pipe.wait(id);               // b.u8: [n, H, W, C] uint8, the official conversion
//   ... encode image i from b.u8 + i * b.image_bytes() ...
//   pipe.release(id);                                // from any thread, once every image is encoded
//
// What sg2/stream.h does inside generate_stream, kept open: the uint8 conversion runs on the device
// and only uint8 crosses to the host (pinned buffers, copies on their own stream), so the device
// computes the next batch while the host encodes this one. Images do not depend on the batch they run
// in (README "Batch invariance", GeneratorOptions::batch_invariant): image i of a submitted batch is,
// bit for bit, the image of ws row i made alone with the same noise (mode, seed, its key). A GPU keeps
// one CUDA graph and its buffers per batch size; the pipe runs every batch padded to the next power of
// two (at most its batch size), whose padding rows are computed and dropped, so that at most
// log2(batch) + 1 sizes are ever built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "sg2/export.h"
#include "sg2/generator.h"
#include "sg2/tensor.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// The host view of one finished batch: valid until its slot is released.
struct ImageBatch {
  int count = 0;  ///< images in the batch, as submitted
  int width = 0, height = 0, channels = 0;
  const uint8_t* u8 = nullptr;  ///< [count, height, width, channels] uint8 (the official conversion)
  /// Bytes of one image: height * width * channels.
  size_t image_bytes() const { return size_t(width) * height * channels; }
};

/// A generator's batches in flight. Not thread-safe except release(): submit() and wait() belong to
/// one thread, the one that owns the generator (which must not run anything else meanwhile and must
/// outlive the pipe).
class ImagePipe {
 public:
  /// Host and device memory for `slots` batches of up to `batch` images, allocated now. Throws
  /// Error(invalid_argument) for batch < 1 or slots < 2, Error(out_of_memory | device).
  ImagePipe(Generator& gen, int batch, int slots);
  ~ImagePipe();
  ImagePipe(const ImagePipe&) = delete;
  ImagePipe& operator=(const ImagePipe&) = delete;

  int batch() const;
  int slots() const;
  /// The batch size a batch of n images runs at: the next power of two, at most batch() (GPU), or n
  /// (CPU backend, which keeps no state per batch size).
  int padded_size(int n) const;

  /// Queues ws [n, num_ws, w_dim] float32 (1 <= n <= batch(), finite) with `noise` (mode, seed and,
  /// for NoiseMode::random, n keys; noise maps are not taken) into a free slot, blocking while every
  /// slot is busy or held, and returns the slot's id. On the CPU backend synthesis runs here; on a GPU
  /// it is queued. Throws Error(invalid_argument) for bad ws or noise, and what synthesis throws
  /// (Error(out_of_memory) when not even one image fits, Error(device), Error(invalid_argument) for
  /// NaN or infinite pixels on the CPU backend).
  int submit(const Tensor& ws, const NoiseSpec& noise);
  /// True when submit() would find a free slot at once.
  bool has_free_slot();
  /// Waits until slot `id`'s images are on the host. Throws Error(device) when the device failed.
  ImageBatch wait(int id);
  /// Gives slot `id` back (after wait(), or instead of it). Thread-safe; never throws.
  void release(int id) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Device memory of a generator's GPU, for monitoring.
struct DeviceMemory {
  size_t sg2_bytes = 0;   ///< held by this generator now (weights, batch buffers, workspaces, pipes)
  size_t peak_bytes = 0;  ///< the high-water mark of sg2_bytes
  size_t free_bytes = 0;  ///< free on the device (every process's use counted)
  size_t total_bytes = 0;
};

/// The device memory of `gen`'s GPU. Call it from the thread that owns the generator. Throws
/// Error(unsupported) for the CPU backend, Error(device) when the query fails.
DeviceMemory device_memory(Generator& gen);

}  // namespace sg2
SG2_PUBLIC_END
