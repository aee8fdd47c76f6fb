// sg2 CPU reference: upfirdn2d (upfirdn2d.h).
#include "kernels/ref/upfirdn2d.h"

#include "kernels/ref/parallel.h"
#include "sg2/error.h"

namespace sg2::ref {

Tensor upfirdn2d(const Tensor& x, const std::vector<float>& f, int fh, int fw, const Upfirdn2dArgs& a) {
  if (x.ndim() != 4) fail(ErrorKind::invalid_argument, "upfirdn2d: x must be [N, C, H, W], got ", x.shape_str());
  if (fh < 1 || fw < 1 || static_cast<int64_t>(f.size()) != int64_t(fh) * fw)
    fail(ErrorKind::invalid_argument, "upfirdn2d: filter of ", f.size(), " taps is not ", fh, "x", fw);
  if (a.up_x < 1 || a.up_y < 1 || a.down_x < 1 || a.down_y < 1)
    fail(ErrorKind::invalid_argument, "upfirdn2d: up/down factors must be >= 1");
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t uph = H * a.up_y, upw = W * a.up_x;
  const int64_t ph = uph + a.pad_y0 + a.pad_y1, pw = upw + a.pad_x0 + a.pad_x1;
  if (ph < fh || pw < fw) fail(ErrorKind::invalid_argument, "upfirdn2d: padded input smaller than the filter");
  const int64_t OH = (ph - fh) / a.down_y + 1, OW = (pw - fw) / a.down_x + 1;
  // Filter scaled by gain in float32, flipped unless flip_filter (the reference convolves).
  std::vector<float> g(f.size());
  for (int i = 0; i < fh; ++i)
    for (int j = 0; j < fw; ++j) {
      const float v = f[size_t(i) * fw + j] * a.gain;
      if (a.flip_filter)
        g[size_t(i) * fw + j] = v;
      else
        g[size_t(fh - 1 - i) * fw + (fw - 1 - j)] = v;
    }
  Tensor out({N, C, OH, OW});
  parallel_for(N * C, [&](int64_t nc) {
    const float* src = x.data() + nc * H * W;
    float* dst = out.data() + nc * OH * OW;
    for (int64_t oy = 0; oy < OH; ++oy) {
      for (int64_t ox = 0; ox < OW; ++ox) {
        float acc = 0.0f;
        for (int i = 0; i < fh; ++i) {
          // Position in the upsampled, unpadded image.
          const int64_t uy = oy * a.down_y + i - a.pad_y0;
          if (uy < 0 || uy >= uph || uy % a.up_y != 0) continue;
          const int64_t sy = uy / a.up_y;
          for (int j = 0; j < fw; ++j) {
            const int64_t ux = ox * a.down_x + j - a.pad_x0;
            if (ux < 0 || ux >= upw || ux % a.up_x != 0) continue;
            acc += src[sy * W + ux / a.up_x] * g[size_t(i) * fw + j];
          }
        }
        dst[oy * OW + ox] = acc;
      }
    }
  });
  return out;
}

Tensor upsample2d(const Tensor& x, const std::vector<float>& f, int fsize) {
  Upfirdn2dArgs a;
  a.up_x = a.up_y = 2;
  a.pad_x0 = a.pad_y0 = (fsize + 1) / 2;
  a.pad_x1 = a.pad_y1 = (fsize - 2) / 2;
  a.gain = 4.0f;
  return upfirdn2d(x, f, fsize, fsize, a);
}

}  // namespace sg2::ref
