// sg2 CUDA kernels: the fused conv epilogue with ToRGB and the skip image path (conv_epilogue.h).
//
// Work split: a group of G lanes (a power of two <= 32) handles one pixel; lane g of the group
// takes the channel chunks g, g + G, ... of V channels (V = 8 with 16/32-byte accesses when
// C % 8 == 0, else 1). ToRGB partial sums are reduced inside the group with shuffles in a fixed
// order, so results do not depend on the batch size or the pixel's position.
#include <algorithm>

#include "engine/src/cuda/cuda_check.h"
#include "kernels/common.cuh"
#include "kernels/conv_epilogue.h"

namespace sg2::cuda {

namespace {

constexpr int kMaxRgb = 4;  // image channels per ToRGB pass

template <typename T, int V>
__device__ __forceinline__ void load_vec(const T* p, float (&v)[V]) {
  if constexpr (V == 8) {
    dev::load8(p, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = dev::to_float(p[e]);
  }
}

template <typename T, int V>
__device__ __forceinline__ void store_vec(T* p, const float (&v)[V]) {
  if constexpr (V == 8) {
    dev::store8(p, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) p[e] = dev::from_float<T>(v[e]);
  }
}

// upsample2d(img_prev)[n, k, y, x]: up 2, pad p0 = (f+1)/2, gain 4, filter flipped (convolution).
__device__ float upsampled(const EpilogueArgs& a, int n, int k, int y, int x) {
  const int Hi = a.H / 2, Wi = a.W / 2, f = a.fsize, p0 = (f + 1) / 2;
  const float* src = a.img_prev + (static_cast<int64_t>(n) * a.img_channels + k) * Hi * Wi;
  float acc = 0.0f;
  for (int i = 0; i < f; ++i) {
    const int uy = y + i - p0;
    if (uy < 0 || uy >= 2 * Hi || (uy & 1)) continue;
    for (int j = 0; j < f; ++j) {
      const int ux = x + j - p0;
      if (ux < 0 || ux >= 2 * Wi || (ux & 1)) continue;
      acc += src[(uy / 2) * Wi + ux / 2] * (a.filter[(f - 1 - i) * f + (f - 1 - j)] * 4.0f);
    }
  }
  return acc;
}

template <typename Tin, typename Tout, int V>
__global__ void __launch_bounds__(256) conv_epilogue_kernel(EpilogueArgs a, int G) {
  const int lane = threadIdx.x % 32;
  const int lig = lane % G;                // lane in group
  const int ppw = 32 / G;                  // pixels per warp step
  const int chunks = (a.C + V - 1) / V;
  const int64_t HW = static_cast<int64_t>(a.H) * a.W;
  const int64_t total = a.N * HW;
  const int64_t warp_id = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const Tin* y = static_cast<const Tin*>(a.y);
  Tout* out = static_cast<Tout*>(a.out);
  Tout* raw = static_cast<Tout*>(a.raw);

  for (int64_t base = warp_id * ppw; base < total; base += num_warps * ppw) {
    const int64_t pix = base + lane / G;
    const bool valid = pix < total;
    const int n = valid ? static_cast<int>(pix / HW) : 0;
    const int64_t hw = valid ? pix % HW : 0;
    float nz = 0.0f;
    if (valid && a.noise) nz = a.noise[n * a.noise_stride_n + hw] * a.noise_strength;

    // v for channels [c0, c0 + V) of this pixel (V = 8: every float table is 32-byte aligned).
    auto compute = [&](int c0, float (&v)[V]) {
      const int64_t off = pix * a.C + c0;
      load_vec<Tin, V>(y + off, v);
      float d[V], b[V];
      if (a.dd) load_vec<float, V>(a.dd + static_cast<int64_t>(n) * a.dd_stride + c0, d);
      if (a.bias) load_vec<float, V>(a.bias + c0, b);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        float t = v[e];
        if (a.dd) t = t * d[e];
        t = t + nz;
        if (a.bias) t = t + b[e];
        v[e] = dev::bias_act(t, a.lrelu, a.gain, a.clamp);
      }
      if (a.residual) {
        float r[V];
        load_vec<float, V>(a.residual + off, r);
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] = v[e] + r[e];
      }
    };

    for (int kbase = 0; kbase < (a.img_channels > 0 ? a.img_channels : 1); kbase += kMaxRgb) {
      float t[kMaxRgb];
#pragma unroll
      for (int k = 0; k < kMaxRgb; ++k) t[k] = 0.0f;
      if (valid) {
        for (int ch = lig; ch < chunks; ch += G) {
          const int c0 = ch * V;
          float v[V];
          compute(c0, v);
          if (kbase == 0) {
            if (out) {
              float o[V];
              if (a.out_scale) {
                load_vec<float, V>(a.out_scale + static_cast<int64_t>(n) * a.out_scale_stride + c0, o);
#pragma unroll
                for (int e = 0; e < V; ++e) o[e] = v[e] * o[e];
              } else {
#pragma unroll
                for (int e = 0; e < V; ++e) o[e] = v[e];
              }
              store_vec<Tout, V>(out + pix * a.C + c0, o);
            }
            if (raw) store_vec<Tout, V>(raw + pix * a.C + c0, v);
          }
          if (a.img_channels > 0) {
#pragma unroll
            for (int k = 0; k < kMaxRgb; ++k) {
              if (kbase + k < a.img_channels) {
                float w[V], s[V];
                load_vec<float, V>(a.rgb_weight + static_cast<int64_t>(kbase + k) * a.C + c0, w);
                load_vec<float, V>(a.rgb_styles + static_cast<int64_t>(n) * a.rgb_styles_stride + c0, s);
#pragma unroll
                for (int e = 0; e < V; ++e) t[k] += v[e] * (w[e] * s[e]);
              }
            }
          }
        }
      }
      if (a.img_channels == 0) break;
#pragma unroll
      for (int k = 0; k < kMaxRgb; ++k) t[k] = dev::warp_sum(t[k], G);
      if (valid && lig == 0) {
        const int yy = static_cast<int>(hw / a.W), xx = static_cast<int>(hw % a.W);
#pragma unroll
        for (int k = 0; k < kMaxRgb; ++k) {
          const int kk = kbase + k;
          if (kk < a.img_channels) {
            float r = t[k] + a.rgb_bias[kk];
            if (a.rgb_clamp >= 0.0f) r = fminf(fmaxf(r, -a.rgb_clamp), a.rgb_clamp);
            const float up = a.img_prev ? upsampled(a, n, kk, yy, xx) : 0.0f;
            a.img[(static_cast<int64_t>(n) * a.img_channels + kk) * HW + hw] = up + r;
          }
        }
      }
    }
  }
}

int pow2_at_least(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

bool aligned32(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 31u) == 0; }

// The 8-wide path needs every row of every table 32-byte aligned.
bool can_vectorize(const EpilogueArgs& a) {
  if (a.C % 8 != 0) return false;
  if (!aligned32(a.y) || !aligned32(a.out) || !aligned32(a.raw) || !aligned32(a.bias) || !aligned32(a.residual))
    return false;
  if (!aligned32(a.dd) || a.dd_stride % 8 != 0) return false;
  if (!aligned32(a.out_scale) || a.out_scale_stride % 8 != 0) return false;
  if (!aligned32(a.rgb_weight) || !aligned32(a.rgb_styles) || a.rgb_styles_stride % 8 != 0) return false;
  return true;
}

template <typename Tin, typename Tout>
void launch(const EpilogueArgs& a, cudaStream_t stream) {
  const bool vec = can_vectorize(a);
  const int chunks = vec ? a.C / 8 : a.C;
  const int G = std::min(32, pow2_at_least(chunks));
  const int64_t pixels = static_cast<int64_t>(a.N) * a.H * a.W;
  const int64_t warps_needed = (pixels + (32 / G) - 1) / (32 / G);
  const int blocks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((warps_needed + 7) / 8, 132 * 16)));
  if (vec) {
    conv_epilogue_kernel<Tin, Tout, 8><<<blocks, 256, 0, stream>>>(a, G);
  } else {
    conv_epilogue_kernel<Tin, Tout, 1><<<blocks, 256, 0, stream>>>(a, G);
  }
  SG2_LAUNCH_CHECK("conv_epilogue_kernel");
}

}  // namespace

void conv_epilogue(const EpilogueArgs& a, cudaStream_t stream) {
  if (a.N <= 0 || a.H <= 0 || a.W <= 0 || a.C <= 0) return;
  if (a.img_channels > 0 && (!a.rgb_weight || !a.rgb_styles || !a.rgb_bias || !a.img))
    fail(ErrorKind::internal, "conv_epilogue: ToRGB requested without its tensors");
  if (a.img_prev && (!a.filter || a.fsize < 1)) fail(ErrorKind::internal, "conv_epilogue: img_prev without a filter");
  const bool in16 = a.y_dtype == DType::f16, out16 = a.out_dtype == DType::f16;
  if (in16 && out16) launch<__half, __half>(a, stream);
  else if (in16) launch<__half, float>(a, stream);
  else if (out16) launch<float, __half>(a, stream);
  else launch<float, float>(a, stream);
}

}  // namespace sg2::cuda
