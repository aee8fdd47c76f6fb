// sg2 CLI: style mixing (style_mix.h).
#include "style_mix.h"

#include <algorithm>
#include <cstdint>

namespace sg2::cli {

void truncate_plain(Tensor& ws, const Tensor& w_avg, float psi) {
  const int64_t w_dim = w_avg.numel();
  const int64_t n = ws.numel();
  for (int64_t i = 0; i < n; ++i) {
    const float avg = w_avg[i % w_dim];
    const float d = ws[i] - avg;
    const float m = d * psi;
    ws[i] = avg + m;
  }
}

void mix_styles(const float* w_row, const float* w_col, const std::vector<int>& styles, int num_ws, int w_dim,
                float* dst) {
  const int64_t row_len = int64_t(num_ws) * w_dim;
  std::copy(w_row, w_row + row_len, dst);
  for (int k : styles) std::copy(w_col + int64_t(k) * w_dim, w_col + int64_t(k + 1) * w_dim, dst + int64_t(k) * w_dim);
}

}  // namespace sg2::cli
