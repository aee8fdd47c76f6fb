// sg2 internal: batches in flight on one backend — the output side of streaming generation
// (sg2/stream.h). A pipe owns a few host slots; submit() queues a batch's synthesis, the uint8
// conversion and the copies into a free slot and returns (the CUDA backend: asynchronously, so
// the device computes the next batch while the host consumes this one); wait() returns when the
// slot's outputs are on the host; release() gives the slot back (from any thread).
#pragma once

#include <cstdint>
#include <memory>

#include "formats/nonfinite.h"
#include "sg2/generator.h"
#include "sg2/tensor.h"

namespace sg2 {

/// Host views of one finished batch (valid until the slot is released).
struct HostBatchView {
  int count = 0;
  const uint8_t* u8 = nullptr;    ///< [count, H/f, W/f, C] uint8 (the official conversion; f = downscale), or null
  const float* img = nullptr;     ///< [count, C, H, W] float32, or null
  const float* styles = nullptr;  ///< [count, style_dims] float32 (sg2/styles.h order), or null
};

/// What a pipe produces per image.
struct PipeOutputs {
  bool u8 = true;
  bool img = false;
  bool styles = false;  ///< every image's styles (sg2/styles.h), as synthesis used them
  int downscale = 1;    ///< u8 images box-downscaled by this factor (kernels/ref/box_downscale.h)
  /// Where the batches' latents come from: what a NaN or infinite pixel is blamed on (host pipe).
  NonfiniteSource nonfinite_source = NonfiniteSource::given_ws;
};

class BatchPipe {
 public:
  virtual ~BatchPipe() = default;
  /// Number of slots (batches that can be in flight or held by consumers at once).
  virtual int slots() const = 0;
  /// Queues ws [n, num_ws, w_dim] (n <= the pipe's batch) with `noise` (validated by the caller:
  /// keys / maps for n samples) into a free slot and returns its id. Blocks while every slot is
  /// busy or held. Throws what synthesis throws.
  virtual int submit(const Tensor& ws, const NoiseSpec& noise) = 0;
  /// Whether submit() would find a free slot at once (slots only become free behind the caller's back).
  virtual bool has_free_slot() = 0;
  /// Waits until slot `id`'s outputs are on the host.
  virtual HostBatchView wait(int id) = 0;
  /// The consumer is done with slot `id`. Thread-safe; never throws.
  virtual void release(int id) noexcept = 0;
  /// From now on submit() throws instead of waiting for a slot (a stream that stops). Thread-safe.
  virtual void cancel() noexcept = 0;
};

}  // namespace sg2
