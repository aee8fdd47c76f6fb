// sg2 CPU reference: box downscaling of uint8 images (box_downscale.h).
#include "kernels/ref/box_downscale.h"

#include <cstring>
#include <vector>

namespace sg2::ref {

void box_downscale_u8(const uint8_t* in, int N, int H, int W, int C, int f, uint8_t* out) {
  if (f <= 1) {
    std::memcpy(out, in, size_t(N) * H * W * C);
    return;
  }
  const int h = H / f, w = W / f;
  const uint32_t area = uint32_t(f) * uint32_t(f), half = area / 2;
  std::vector<uint32_t> acc(size_t(w) * C);
  for (int n = 0; n < N; ++n)
    for (int y = 0; y < h; ++y) {
      std::fill(acc.begin(), acc.end(), 0u);
      for (int i = 0; i < f; ++i) {
        const uint8_t* row = in + ((size_t(n) * H + size_t(y) * f + i) * W) * C;
        for (int x = 0; x < w; ++x)
          for (int j = 0; j < f; ++j)
            for (int c = 0; c < C; ++c) acc[size_t(x) * C + c] += row[(size_t(x) * f + j) * C + c];
      }
      uint8_t* dst = out + ((size_t(n) * h + y) * w) * C;
      for (size_t k = 0; k < acc.size(); ++k) dst[k] = static_cast<uint8_t>((acc[k] + half) / area);
    }
}

}  // namespace sg2::ref
