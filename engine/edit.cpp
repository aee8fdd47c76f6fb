// sg2 engine: edit directions applied to ws (sg2/edit.h).
#include "sg2/edit.h"

#include <cmath>

#include "sg2/error.h"

namespace sg2 {

namespace {

/// The direction's rows: 1 (one vector for every ws row) or num_ws; 0 when the shape does not fit.
int64_t direction_rows(const Tensor& d, int num_ws, int w_dim) {
  const auto& s = d.shape();
  if (s.empty() || s.back() != w_dim) return 0;
  if (s.size() == 1) return 1;
  if (s.size() == 2 && (s[0] == 1 || s[0] == num_ws)) return s[0];
  if (s.size() == 3 && s[0] == 1 && (s[1] == 1 || s[1] == num_ws)) return s[1];
  return 0;
}

}  // namespace

void check_edits(const std::vector<WsEdit>& edits, int num_ws, int w_dim) {
  for (const WsEdit& e : edits) {
    if (direction_rows(e.direction, num_ws, w_dim) == 0)
      fail(ErrorKind::invalid_argument, e.what, ": a direction of shape ", e.direction.shape_str(),
           " does not fit this model (w_dim ", w_dim, ", num_ws ", num_ws, "): expected [", w_dim, "], [1, ", w_dim,
           "] or [", num_ws, ", ", w_dim, "]");
    if (!std::isfinite(e.strength))
      fail(ErrorKind::invalid_argument, e.what, ": the strength ", e.strength, " is not a finite number");
    for (float v : e.direction.vec())
      if (!std::isfinite(v))
        fail(ErrorKind::invalid_argument, e.what, ": the direction contains NaN or infinite values");
    const int last = e.last_row < 0 ? num_ws - 1 : e.last_row;
    if (e.first_row < 0 || e.first_row > last || last >= num_ws)
      fail(ErrorKind::invalid_argument, e.what, ": edit rows ", e.first_row, "-", last,
           " are not within this model's ws rows 0-", num_ws - 1);
  }
}

void apply_edits(Tensor& ws, const std::vector<WsEdit>& edits) {
  if (edits.empty()) return;
  if (ws.ndim() != 3)
    fail(ErrorKind::invalid_argument, "apply_edits: ws must be [N, num_ws, w_dim], got ", ws.shape_str());
  const int64_t n = ws.dim(0), num_ws = ws.dim(1), w_dim = ws.dim(2);
  check_edits(edits, static_cast<int>(num_ws), static_cast<int>(w_dim));
  float* w = ws.data();
  for (const WsEdit& e : edits) {
    const bool per_row = direction_rows(e.direction, static_cast<int>(num_ws), static_cast<int>(w_dim)) > 1;
    const int64_t last = e.last_row < 0 ? num_ws - 1 : e.last_row;
    const float s = e.strength;
    bool finite = true;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t r = e.first_row; r <= last; ++r) {
        const float* d = e.direction.data() + (per_row ? r * w_dim : 0);
        float* row = w + (i * num_ws + r) * w_dim;
        for (int64_t k = 0; k < w_dim; ++k) {
          const float m = s * d[k];  // rounded to float32, then the add (-ffp-contract=off: no fma)
          row[k] = row[k] + m;
          finite &= std::isfinite(row[k]);
        }
      }
    if (!finite)
      fail(ErrorKind::invalid_argument, e.what, ": the edit with strength ", e.strength,
           " gives ws with infinite values (an overflow of float32); use a smaller strength");
  }
}

}  // namespace sg2
