// sg2 CLI: the output side of `sg2 generate` and `sg2 bench --end-to-end` — finished images from the
// stream (sg2/stream.h), in index order on the caller's thread, become tasks of an encoder pool
// (task_pool.h) that encodes and writes each image's files whole (or adds its PNG to a dataset zip,
// in index order). Memory stays bounded: the pool's queue is bounded and every task holds its
// batch's buffer, so the generators wait when the writers fall behind.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli_util.h"
#include "sg2/dataset_zip.h"
#include "sg2/image.h"
#include "sg2/stream.h"

namespace sg2::cli {

/// Where the images go and in what form.
struct ImageOutputs {
  OutputFormat format = OutputFormat::png;
  PngOptions png;
  bool save_ws = false;
  int jobs = 1;                    ///< encoder threads
  const OutputDir* dir = nullptr;  ///< files <dir>/<stem>.png, .npy, _ws.npy; or
  DatasetZip* zip = nullptr;       ///< a dataset archive (PNG only): image i of the job is entry zip_first + i
  int64_t zip_first = 0;
  GridPngWriter* grid = nullptr;  ///< every image also becomes the grid's next cell
  /// The file stem of an image ("seed0042", "ws0003").
  std::function<std::string(const StreamImage&)> stem;
  /// Called for every image on the caller's thread, in index order, before it is encoded (the
  /// latent archive of --save-latents); may be empty.
  std::function<void(const StreamImage&)> on_image;
};

/// What happened, per stage (seconds summed over threads) and in bytes.
struct WriteStats {
  int64_t images = 0;   ///< images whose files are all written
  int64_t files = 0;    ///< whole files written (the grid included)
  int64_t bytes = 0;    ///< bytes written (files, or the archive's entries)
  double encode_s = 0;  ///< PNG / npy encoding (the pool's threads)
  double write_s = 0;   ///< writing files or archive entries
  double wall_s = 0;
  StreamStats stream;  ///< the generators' side (sg2/stream.h)
};

/// Runs `job` on `gens` into `out`, calling `progress(images written)` from the caller's thread
/// after each image is handed on. On an error the encoders under way finish their file and the
/// rest is dropped; the error is rethrown with `files` holding the whole files written (the
/// caller's message says they are kept).
WriteStats write_images(const std::vector<Generator*>& gens, const ImageJob& job, const StreamOptions& stream,
                        const ImageOutputs& out, const std::function<void(int64_t)>& progress,
                        std::atomic<int64_t>& files);

}  // namespace sg2::cli
