// sg2 CPU reference: modulated_conv2d (modulated_conv2d.h).
#include "kernels/ref/modulated_conv2d.h"

#include <cmath>

#include "kernels/ref/parallel.h"
#include "kernels/ref/upfirdn2d.h"
#include "sg2/error.h"

namespace sg2::ref {

namespace {

// Shape helpers for shared [Cout, Cin, k, k] or per-sample [N, Cout, Cin, k, k] weights.
struct WeightView {
  const float* data;
  int64_t cout, cin, kh, kw;
  bool per_sample;
  const float* at(int64_t n, int64_t o) const { return data + ((per_sample ? n * cout : 0) + o) * cin * kh * kw; }
};

WeightView view_weight(const Tensor& w, int64_t N, int64_t Cin, const char* op) {
  if (w.ndim() == 4 && w.dim(1) == Cin) return {w.data(), w.dim(0), w.dim(1), w.dim(2), w.dim(3), false};
  if (w.ndim() == 5 && w.dim(0) == N && w.dim(2) == Cin)
    return {w.data(), w.dim(1), w.dim(2), w.dim(3), w.dim(4), true};
  fail(ErrorKind::invalid_argument, op, ": weight ", w.shape_str(), " does not match ", Cin,
       " input channels and batch ", N);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, int padding, bool flip_weight) {
  if (x.ndim() != 4) fail(ErrorKind::invalid_argument, "conv2d: x must be [N, C, H, W], got ", x.shape_str());
  const int64_t N = x.dim(0), Cin = x.dim(1), H = x.dim(2), W = x.dim(3);
  const WeightView w = view_weight(weight, N, Cin, "conv2d");
  const int64_t OH = H + 2 * padding - w.kh + 1, OW = W + 2 * padding - w.kw + 1;
  if (OH <= 0 || OW <= 0) fail(ErrorKind::invalid_argument, "conv2d: empty output");
  Tensor y({N, w.cout, OH, OW});
  parallel_for(N * w.cout, [&](int64_t no) {
    const int64_t n = no / w.cout, o = no % w.cout;
    float* out = y.data() + no * OH * OW;
    const float* wo = w.at(n, o);
    for (int64_t i = 0; i < Cin; ++i) {
      const float* in = x.data() + (n * Cin + i) * H * W;
      for (int64_t ky = 0; ky < w.kh; ++ky)
        for (int64_t kx = 0; kx < w.kw; ++kx) {
          const int64_t wy = flip_weight ? ky : w.kh - 1 - ky, wx = flip_weight ? kx : w.kw - 1 - kx;
          const float wv = wo[(i * w.kh + wy) * w.kw + wx];
          // out[oy, ox] += wv * in[oy + ky - p, ox + kx - p]
          const int64_t y0 = std::max<int64_t>(0, padding - ky), y1 = std::min<int64_t>(OH, H + padding - ky);
          const int64_t x0 = std::max<int64_t>(0, padding - kx), x1 = std::min<int64_t>(OW, W + padding - kx);
          for (int64_t oy = y0; oy < y1; ++oy) {
            const float* src = in + (oy + ky - padding) * W + (kx - padding);
            float* dst = out + oy * OW;
            for (int64_t ox = x0; ox < x1; ++ox) dst[ox] += wv * src[ox];
          }
        }
    }
  });
  return y;
}

Tensor conv_transpose2d_stride2(const Tensor& x, const Tensor& weight, bool flip_weight) {
  if (x.ndim() != 4) fail(ErrorKind::invalid_argument, "conv_transpose2d: x must be [N, C, H, W], got ", x.shape_str());
  const int64_t N = x.dim(0), Cin = x.dim(1), H = x.dim(2), W = x.dim(3);
  const WeightView w = view_weight(weight, N, Cin, "conv_transpose2d");
  const int64_t OH = 2 * H + w.kh - 2, OW = 2 * W + w.kw - 2;
  Tensor y({N, w.cout, OH, OW});
  parallel_for(N * w.cout, [&](int64_t no) {
    const int64_t n = no / w.cout, o = no % w.cout;
    float* out = y.data() + no * OH * OW;
    const float* wo = w.at(n, o);
    for (int64_t c = 0; c < Cin; ++c) {
      const float* in = x.data() + (n * Cin + c) * H * W;
      for (int64_t ky = 0; ky < w.kh; ++ky)
        for (int64_t kx = 0; kx < w.kw; ++kx) {
          const int64_t wy = flip_weight ? w.kh - 1 - ky : ky, wx = flip_weight ? w.kw - 1 - kx : kx;
          const float wv = wo[(c * w.kh + wy) * w.kw + wx];
          for (int64_t i = 0; i < H; ++i) {
            float* dst = out + (2 * i + ky) * OW + kx;
            const float* src = in + i * W;
            for (int64_t j = 0; j < W; ++j) dst[2 * j] += src[j] * wv;
          }
        }
    }
  });
  return y;
}

Tensor demod_coefficients(const Tensor& weight, const Tensor& styles) {
  const int64_t N = styles.dim(0), O = weight.dim(0), I = weight.dim(1), K = weight.dim(2) * weight.dim(3);
  Tensor d({N, O});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      float sum = 0.0f;
      for (int64_t i = 0; i < I; ++i) {
        const float s = styles[n * I + i];
        for (int64_t k = 0; k < K; ++k) {
          const float v = weight[(o * I + i) * K + k] * s;
          sum += v * v;
        }
      }
      d[n * O + o] = 1.0f / std::sqrt(sum + 1e-8f);
    }
  return d;
}

Tensor modulated_conv2d(const Tensor& x, const Tensor& weight, const Tensor& styles, const std::vector<float>& filter,
                        int fsize, const ModConvArgs& args) {
  if (x.ndim() != 4 || weight.ndim() != 4 || styles.ndim() != 2)
    fail(ErrorKind::invalid_argument, "modulated_conv2d: bad ranks x ", x.shape_str(), " weight ", weight.shape_str(),
         " styles ", styles.shape_str());
  const int64_t N = x.dim(0), Cin = x.dim(1), O = weight.dim(0), kh = weight.dim(2), kw = weight.dim(3);
  if (weight.dim(1) != Cin || styles.dim(0) != N || styles.dim(1) != Cin)
    fail(ErrorKind::invalid_argument, "modulated_conv2d: x ", x.shape_str(), ", weight ", weight.shape_str(),
         ", styles ", styles.shape_str(), " do not match");
  // Per-sample weights, as the fused (grouped-conv) path of the official code.
  Tensor wmod({N, O, Cin, kh, kw});
  const Tensor d = args.demodulate ? demod_coefficients(weight, styles) : Tensor();
  const int64_t K = kh * kw;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < Cin; ++i)
        for (int64_t k = 0; k < K; ++k) {
          float v = weight[(o * Cin + i) * K + k] * styles[n * Cin + i];
          if (args.demodulate) v = v * d[n * O + o];
          wmod[((n * O + o) * Cin + i) * K + k] = v;
        }
  if (args.up == 1) return conv2d(x, wmod, args.padding, args.flip_weight);
  if (args.up != 2) fail(ErrorKind::invalid_argument, "modulated_conv2d: up must be 1 or 2");
  // conv2d_resample, up = 2: pads relative to the upsampled image, minus what the stride-2
  // transposed conv covers; the FIR then uses the remaining pads with gain up^2.
  const int px0 = args.padding + (fsize + 1) / 2 - int(kw - 1), px1 = args.padding + (fsize - 2) / 2 - int(kw - 2);
  const int py0 = args.padding + (fsize + 1) / 2 - int(kh - 1), py1 = args.padding + (fsize - 2) / 2 - int(kh - 2);
  if (px0 < 0 || px1 < 0 || py0 < 0 || py1 < 0)
    fail(ErrorKind::invalid_argument, "modulated_conv2d: unsupported kernel/filter/padding combination for up=2");
  Tensor t = conv_transpose2d_stride2(x, wmod, args.flip_weight);
  Upfirdn2dArgs a;
  a.pad_x0 = px0;
  a.pad_x1 = px1;
  a.pad_y0 = py0;
  a.pad_y1 = py1;
  a.gain = 4.0f;
  return upfirdn2d(t, filter, fsize, fsize, a);
}

}  // namespace sg2::ref
