// sg2: many images at the speed of the hardware — seeds (or W/W+ rows) in, finished images out,
// with the generators computing the next batches while the caller consumes the last ones.
//
//   std::vector<sg2::Generator> gens;                        // one per GPU, e.g. cuda:0 and cuda:1
//   gens.emplace_back(model, sg2::GeneratorOptions{sg2::Device::parse("cuda:0")});
//   sg2::ImageJob job;
//   job.seeds = sg2::parse_seeds("0-49999");
//   sg2::generate_stream({&gens[0]}, job, {}, [&](const sg2::StreamImage& im) {
//     // im.u8: [height, width, channels] uint8, the official conversion; index order, one at a time
//     sg2::write_png("seed" + std::to_string(im.key) + ".png", im.image8());
//   });
//
// On the GPU the official uint8 conversion runs on the device and only uint8 crosses to the host
// (pinned buffers, asynchronous copies); the next batch computes meanwhile. Memory is bounded:
// each generator has StreamOptions::batches_in_flight batches of host memory, whatever the job's
// length. Images do not depend on how the job is batched or spread over generators
// (docs/precision.md, "Batch invariance").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sg2/edit.h"
#include "sg2/export.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/tensor.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// What each image is made from: numpy seeds (as generate.py), or W/W+ rows.
struct ImageJob {
  std::vector<uint32_t> seeds;  ///< one image per seed (then ws stays empty), or
  Tensor ws;                    ///< [N, num_ws, w_dim] rows straight into synthesis (seeds empty)
  int64_t ws_first_row = 0;     ///< ws only: the row number of ws[0] in its file; image i's key (its name,
                                ///< its random noise) is ws_first_row + i, so a shard's rows keep theirs
  int class_idx = -1;           ///< conditional models: every image's label (required there)
  Truncation truncation;        ///< seeds only
  NoiseMode noise_mode = NoiseMode::const_;
  uint64_t noise_seed = 0;    ///< random noise: image i's noise depends on (noise_seed, its seed / row)
  bool tf_seed_mode = false;  ///< seeds only: the const noise maps drawn from each seed's RandomState
                              ///< after z (NVIDIA's TensorFlow run_generator.py; spec §8.2)
  std::vector<WsEdit> edits;  ///< applied in order to every image's ws after truncation (seeds) or to
                              ///< the given ws rows (sg2/edit.h); StreamImage::ws carries the result
};

/// What each finished image carries, and how the work is cut.
struct StreamOptions {
  int batch = 0;         ///< images per generator call; 0 = each generator's max_batch()
  bool uint8 = true;     ///< StreamImage::u8
  bool float32 = false;  ///< StreamImage::img
  bool ws = false;       ///< StreamImage::ws
  bool z = false;        ///< StreamImage::z (seed jobs)
  bool styles = false;   ///< StreamImage::styles
  /// StreamImage::u8 downscaled by this integer factor (>= 1, a divisor of the resolution) with a
  /// box filter, on the device for a GPU (kernels/ref/box_downscale.h says how it rounds); the
  /// float32 images stay full size.
  int downscale = 1;
  int batches_in_flight = 3;  ///< host slots per generator (>= 2): bounds host memory
};

/// One finished image. The pointers stay valid while the sink runs; to keep them longer (e.g. to
/// encode on another thread), keep a copy of `hold`: the batch's memory is reused only when every
/// copy is gone. Every copy must be gone before the generators are destroyed.
struct StreamImage {
  int64_t index = 0;                        ///< position in the job (0-based)
  uint64_t key = 0;                         ///< its seed, or its ws row (ImageJob::ws_first_row + index)
  int width = 0, height = 0, channels = 0;  ///< of u8 (after StreamOptions::downscale)
  const uint8_t* u8 = nullptr;              ///< [height, width, channels] uint8, or null
  const float* img = nullptr;     ///< [channels, R, R] float32 at the model's resolution R (nominally [-1, 1]), or null
  const float* ws = nullptr;      ///< [num_ws, w_dim] float32 (after truncation and edits), or null
  const float* z = nullptr;       ///< [z_dim] float32, the seed's numpy z (seed jobs), or null
  const float* styles = nullptr;  ///< [style_dims] float32, the layers' styles (sg2/styles.h), or null
  std::shared_ptr<const void> hold;
  /// The uint8 image as an Image8 (a copy). Throws Error(invalid_argument) when u8 is null.
  Image8 image8() const;
};

/// Time spent per stage (seconds, summed over the generators' threads), for `sg2 bench --end-to-end`.
struct StreamStats {
  double wall_s = 0;     ///< the whole call
  double prepare_s = 0;  ///< z, labels, mapping (host + device, synchronous)
  double submit_s = 0;   ///< queueing synthesis and copies (waits for a free slot included)
  double wait_s = 0;     ///< waiting for a batch's copies to reach the host
  double sink_s = 0;     ///< inside the sink (the caller's thread)
  int64_t images = 0;
};

/// Generates every image of `job` on the generators (batches handed to whichever is free: one
/// generator per GPU spreads the work over them) and calls sink(image) for each, from the calling
/// thread, in index order. All generators must hold the same model and precision. Throws
/// Error(invalid_argument) for a bad job (no seeds and no ws, both, a class missing or out of range,
/// ws of the wrong shape, NaN ...); an error of any generator or of the sink stops the stream, and
/// the first one is rethrown here once every thread has stopped.
StreamStats generate_stream(const std::vector<Generator*>& gens, const ImageJob& job, const StreamOptions& options,
                            const std::function<void(const StreamImage&)>& sink);

}  // namespace sg2
SG2_PUBLIC_END
