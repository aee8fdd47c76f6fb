// sg2: editing latents along directions (InterFaceGAN boundaries, GANSpace components, StyleCLIP /
// e4e directions): every ws row moved by strength x direction after truncation.
//
//   sg2::EditDirection d = sg2::read_edit_direction("smile.npy");       // [1, w_dim] boundary
//   sg2::ImageJob job;                                                    // sg2/stream.h
//   job.edits.push_back(sg2::WsEdit{d.values, 1.5f, 0, -1, "smile.npy"}); // ws rows 0..num_ws-1
//
// The arithmetic, in float32 for every element (n, r, i) of ws [N, num_ws, w_dim] and every edit in
// order: m = strength * d[r or 0, i] (rounded to float32), then w = w + m (rounded): a multiply then
// an add, never one fused multiply-add, as numpy computes `w + np.float32(s) * d` in float32.
#pragma once

#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/tensor.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// One edit of ws rows first_row..last_row (inclusive; last_row -1 = the model's last row).
struct WsEdit {
  /// float32, finite: [w_dim] or [1, w_dim] (the same vector for every row), [num_ws, w_dim] or
  /// [1, num_ws, w_dim] (row r of ws moves by row r of the direction).
  Tensor direction;
  float strength = 1.0f;  ///< finite
  int first_row = 0;
  int last_row = -1;
  std::string what;  ///< names the edit in messages (its file); printable text
};

/// Throws Error(invalid_argument) naming edit.what when a direction's shape does not fit
/// (num_ws, w_dim), a strength or a direction value is not finite, or the rows are not within
/// 0..num_ws-1 (first_row <= last_row).
void check_edits(const std::vector<WsEdit>& edits, int num_ws, int w_dim);

/// Applies the edits to ws [N, num_ws, w_dim] in order, as above (check_edits first). Throws
/// Error(invalid_argument) naming the edit when a result is not finite (an overflow).
void apply_edits(Tensor& ws, const std::vector<WsEdit>& edits);

/// A direction read from a file.
struct EditDirection {
  Tensor values;       ///< float32, as stored (a GANSpace component: that component alone)
  int components = 1;  ///< how many the file holds (GANSpace lat_comp, or a [K, rows, w_dim] stack)
  std::string note;    ///< what was read, for a note to the user (printable)
};

/// Reads a direction file, recognised by content: a .npy float array (an InterFaceGAN boundary
/// [1, w_dim], ...); a GANSpace .npz (numpy.savez or numpy.savez_compressed of lat_comp [K, 1,
/// w_dim] or [K, w_dim], lat_stdev, ...): component `component`; any other .npz, or a torch.save /
/// pickle file (StyleCLIP / e4e direction tensors), as read_latents (sg2/latents.h) reads them; a
/// [K, rows, w_dim] array with K > 1 is a stack of K directions. `component`: which of several
/// (-1: none chosen, an error for a file of several); ignored for a file of one. Throws
/// Error(bad_file) naming the file for a file that is not a direction, a non-float array, NaN or
/// infinite values; Error(invalid_argument) for a component out of range or missing.
EditDirection read_edit_direction(const std::string& path, int component = -1);

}  // namespace sg2
SG2_PUBLIC_END
