// sg2 CLI: `sg2 generate --save-latents FILE.npz [--save-styles]` — one numpy .npz archive of the
// run's latents, streamed row by row as the images come (sg2/npz_writer.h: fixed memory, ZIP64,
// written whole or not at all). Arrays, for N images (docs/bulk.md "Latent archives"):
//   seeds      uint32  [N]                   the seeds (seed runs)
//   z          float32 [N, z_dim]            numpy RandomState(seed).randn(1, z_dim) (seed runs, z_dim > 0)
//   c          float32 [N, c_dim]            the one-hot labels (conditional models, seed runs)
//   w          float32 [N, num_ws, w_dim]    the ws synthesis got (after truncation and edits)
// and with --save-styles:
//   s          float32 [N, style_dims]       every layer's styles (sg2/styles.h order)
//   s_offsets  int64   [L + 1]               layer l is s[:, s_offsets[l]:s_offsets[l+1]]
//   s_layers   <U..    [L]                   the layers' names: "b4.conv1", "b4.torgb", "b8.conv0", ...
// A --ws run's archive holds w (and s, s_offsets, s_layers) only.
#pragma once

#include <memory>
#include <string>

#include "sg2/model.h"
#include "sg2/npz_writer.h"
#include "sg2/stream.h"

namespace sg2::cli {

class LatentArchive {
 public:
  /// Opens the archive for `rows` images of `cfg` (`path.tmp.PID` until finish()). `from_seeds`:
  /// the images come from seeds (seeds, z, c written); `class_idx`: their label (conditional
  /// models). Throws Error(io) naming `path` when it cannot be written.
  LatentArchive(const std::string& path, const ModelConfig& cfg, int64_t rows, bool from_seeds, int class_idx,
                bool styles);
  /// What the stream must hand out for add(): ws, z (seed runs) and styles (with --save-styles).
  void request(StreamOptions& so) const;
  /// Appends image `im`'s rows; images come in index order (the stream's sink).
  void add(const StreamImage& im);
  /// Completes and renames the archive (Error(io); Error(invalid_argument) when rows are missing).
  void finish() { npz_.finish(); }
  void abandon() noexcept { npz_.abandon(); }
  const std::string& path() const { return npz_.path(); }

 private:
  NpzWriter npz_;
  const ModelConfig& cfg_;
  bool from_seeds_, styles_;
  int64_t style_dims_ = 0;
  int m_seeds_ = -1, m_z_ = -1, m_c_ = -1, m_w_ = -1, m_s_ = -1;
  std::vector<float> label_;
};

/// --size N or WxH for a model whose images are width x height: the integer factor f with which the
/// images are written as width/f x height/f. N is the larger side (N x N for a square model); WxH
/// must be exactly width/f x height/f. Error(invalid_argument) for a size that is no such divisor,
/// naming the sizes that work. width or height <= 0: only the syntax is checked (returns 1).
int size_factor(const std::string& text, int width, int height);

}  // namespace sg2::cli
