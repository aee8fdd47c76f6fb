// sg2 CUDA kernels: the fused conv epilogue with ToRGB and the skip image path (conv_epilogue.h).
//
// Work split: blockIdx.y is the sample; a group of G lanes (a power of two <= 32) handles one
// pixel; lane g of the group takes the channel chunks g, g + G, ... of V channels (V = 8 with
// 16/32-byte accesses when C % 8 == 0 and the tables are aligned, else 1). Pixel coordinates use
// 32-bit shifts (resolutions are powers of two). ToRGB partial sums are reduced inside the group
// with shuffles in a fixed order, then lane k of the group writes image channel k, so results do
// not depend on the batch size or the pixel's position.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "kernels/common.cuh"
#include "kernels/conv_epilogue.h"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/skip_image.cuh"

namespace sg2::cuda {

namespace {

constexpr int kMaxRgb = 4;  // image channels per ToRGB pass
constexpr int kThreads = 256;

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

template <typename Tin, typename Tout, int V>
__global__ void __launch_bounds__(kThreads) conv_epilogue_kernel(EpilogueArgs a, int G, int log2w) {
  dev::pdl_begin();
  const int lane = threadIdx.x % 32;
  const int lig = lane % G;  // lane in group
  const int ppw = 32 / G;    // pixels per warp step
  const int C = a.C;
  const int chunks = (C + V - 1) / V;
  const int HW = a.H * a.W;
  const int n = blockIdx.y;
  const int warp = (blockIdx.x * kThreads + threadIdx.x) / 32;
  const int num_warps = gridDim.x * kThreads / 32;
  const size_t sample = size_t(n) * HW * C;
  const Tin* y = static_cast<const Tin*>(a.y) + sample;
  Tout* out = a.out ? static_cast<Tout*>(a.out) + sample : nullptr;
  Tout* raw = a.raw ? static_cast<Tout*>(a.raw) + sample : nullptr;
  const float* residual = a.residual ? a.residual + sample : nullptr;
  const float* dcoefs = a.dcoefs ? a.dcoefs + size_t(n) * a.dcoefs_stride : nullptr;
  const float* os = a.out_scale ? a.out_scale + size_t(n) * a.out_scale_stride : nullptr;
  const float* rs = a.img_channels ? a.rgb_styles + size_t(n) * a.rgb_styles_stride : nullptr;
  const float* noise = a.noise ? a.noise + size_t(n) * a.noise_stride_n : nullptr;
  const int K = a.img_channels;

  for (int base = warp * ppw; base < HW; base += num_warps * ppw) {
    const int hw = base + lane / G;
    const bool valid = hw < HW;
    const float nz = valid && noise ? noise[hw] * a.noise_strength : 0.0f;

    // v for channels [c0, c0 + V) of this pixel.
    auto compute = [&](int c0, float(&v)[V]) {
      const int off = hw * C + c0;
      load_vec<Tin, V>(y + off, v);
      float d[V], b[V];
      if (dcoefs) load_vec<float, V>(dcoefs + c0, d);
      if (a.bias) load_vec<float, V>(a.bias + c0, b);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        float t = v[e];
        if (dcoefs) t = t * d[e];
        t = t + nz;
        if (a.bias) t = t + b[e];
        v[e] = dev::bias_act(t, a.lrelu, a.gain, a.clamp);
      }
      if (residual) {
        float r[V];
        load_vec<float, V>(residual + off, r);
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] = v[e] + r[e];
      }
    };

    for (int kbase = 0; kbase < (K > 0 ? K : 1); kbase += kMaxRgb) {
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
              if (os) {
                load_vec<float, V>(os + c0, o);
#pragma unroll
                for (int e = 0; e < V; ++e) o[e] = v[e] * o[e];
              } else {
#pragma unroll
                for (int e = 0; e < V; ++e) o[e] = v[e];
              }
              store_vec<Tout, V>(out + hw * C + c0, o);
            }
            if (raw) store_vec<Tout, V>(raw + hw * C + c0, v);
          }
          if (K > 0) {
#pragma unroll
            for (int k = 0; k < kMaxRgb; ++k) {
              if (kbase + k < K) {
                float w[V], s[V];
                load_vec<float, V>(a.rgb_weight + size_t(kbase + k) * C + c0, w);
                load_vec<float, V>(rs + c0, s);
#pragma unroll
                for (int e = 0; e < V; ++e) t[k] += v[e] * (w[e] * s[e]);
              }
            }
          }
        }
      }
      if (K == 0) break;
#pragma unroll
      for (int k = 0; k < kMaxRgb; ++k) t[k] = dev::warp_sum(t[k], G);
      if (valid) {
        const int yy = hw >> log2w, xx = hw & (a.W - 1);
        const int kn = min(kMaxRgb, K - kbase);
        for (int k = lig; k < kn; k += G) {  // lane k of the group writes image channel kbase + k
          float tk = t[0];
#pragma unroll
          for (int q = 1; q < kMaxRgb; ++q)
            if (q == k) tk = t[q];
          const int kk = kbase + k;
          float r = tk + a.rgb_bias[kk];
          if (a.rgb_clamp >= 0.0f) r = fminf(fmaxf(r, -a.rgb_clamp), a.rgb_clamp);
          const float up = a.img_prev ? dev::upsampled(a.img_prev + (size_t(n) * K + kk) * (HW / 4), a.H / 2, a.W / 2,
                                                       a.filter, a.fsize, yy, xx)
                                      : 0.0f;
          a.img[(size_t(n) * K + kk) * HW + hw] = up + r;
        }
      }
    }
  }
}

// The common case: 8-channel chunks, one per lane (C <= 256), KR = img_channels <= 4 (a template
// parameter, so the ToRGB sums and shuffles cover exactly the image channels). The sample's
// per-channel tables (dcoefs, bias, out_scale, ToRGB weight x style) and the image filter are staged
// in shared memory once per block; pixels go in pairs so that two loads of y are in flight per
// lane. Same arithmetic in the same order as conv_epilogue_kernel: bit-identical results.
constexpr int kPairs = 2;

template <typename Tin, typename Tout, int KR>
__global__ void __launch_bounds__(kThreads, 4) conv_epilogue_tab_kernel(EpilogueArgs a, int G, int log2w) {
  dev::pdl_begin();
  extern __shared__ float tab[];  // [dcoefs C][bias C][out_scale C][rgb KR x C][filter 16]
  const int C = a.C;
  const int n = blockIdx.y;
  float* sd = tab;
  float* sb = sd + C;
  float* so = sb + C;
  float* sr = so + C;
  float* sg = sr + KR * C;
  for (int i = threadIdx.x; i < C; i += kThreads) {
    sd[i] = a.dcoefs ? a.dcoefs[size_t(n) * a.dcoefs_stride + i] : 1.0f;
    sb[i] = a.bias ? a.bias[i] : 0.0f;
    so[i] = a.out_scale ? a.out_scale[size_t(n) * a.out_scale_stride + i] : 1.0f;
#pragma unroll
    for (int k = 0; k < KR; ++k)
      sr[k * C + i] = a.rgb_weight[size_t(k) * C + i] * a.rgb_styles[size_t(n) * a.rgb_styles_stride + i];
  }
  const bool up4 = a.img_prev != nullptr && a.fsize == 4;
  if (threadIdx.x < 16) sg[threadIdx.x] = up4 ? a.filter[15 - threadIdx.x] * 4.0f : 0.0f;  // g[i][j] = f[3-i][3-j] * 4
  __syncthreads();

  const int lane = threadIdx.x % 32;
  const int lig = lane % G;
  const int ppw = 32 / G;
  const int chunks = C / 8;
  const bool has = lig < chunks;
  const int c0 = lig * 8;
  const int HW = a.H * a.W;
  const int warp = (blockIdx.x * kThreads + threadIdx.x) / 32;
  const int num_warps = gridDim.x * kThreads / 32;
  const size_t sample = size_t(n) * HW * C;
  const Tin* y = static_cast<const Tin*>(a.y) + sample;
  Tout* out = a.out ? static_cast<Tout*>(a.out) + sample : nullptr;
  Tout* raw = a.raw ? static_cast<Tout*>(a.raw) + sample : nullptr;
  const float* residual = a.residual ? a.residual + sample : nullptr;
  const float* noise = a.noise ? a.noise + size_t(n) * a.noise_stride_n : nullptr;

  for (int base = warp * ppw * kPairs; base < HW; base += num_warps * ppw * kPairs) {
    float v[kPairs][8];
    float nz[kPairs];
    int hw[kPairs];
    bool ok[kPairs];
#pragma unroll
    for (int u = 0; u < kPairs; ++u) {  // loads first
      hw[u] = base + u * ppw + lane / G;
      ok[u] = hw[u] < HW;
      nz[u] = ok[u] && noise ? noise[hw[u]] * a.noise_strength : 0.0f;
      if (ok[u] && has) load_vec<Tin, 8>(y + hw[u] * C + c0, v[u]);
    }
    // table by table (each row read from shared memory once for all kPairs pixels), pixel by
    // pixel inside: the same operations per element, in the same order, as the general kernel
    float t[kPairs][KR > 0 ? KR : 1];
#pragma unroll
    for (int u = 0; u < kPairs; ++u)
#pragma unroll
      for (int k = 0; k < KR; ++k) t[u][k] = 0.0f;
    if (has) {
      {
        float d[8], b[8];
        load_vec<float, 8>(sd + c0, d);
        load_vec<float, 8>(sb + c0, b);
#pragma unroll
        for (int u = 0; u < kPairs; ++u) {
          if (!ok[u]) continue;
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            float q = v[u][e];
            if (a.dcoefs) q = q * d[e];
            q = q + nz[u];
            if (a.bias) q = q + b[e];
            v[u][e] = dev::bias_act(q, a.lrelu, a.gain, a.clamp);
          }
        }
      }
      if (residual) {
#pragma unroll
        for (int u = 0; u < kPairs; ++u) {
          if (!ok[u]) continue;
          float r[8];
          load_vec<float, 8>(residual + hw[u] * C + c0, r);
#pragma unroll
          for (int e = 0; e < 8; ++e) v[u][e] = v[u][e] + r[e];
        }
      }
      if (out) {
        float o[8];
        load_vec<float, 8>(so + c0, o);
#pragma unroll
        for (int u = 0; u < kPairs; ++u) {
          if (!ok[u]) continue;
          float w[8];
#pragma unroll
          for (int e = 0; e < 8; ++e) w[e] = a.out_scale ? v[u][e] * o[e] : v[u][e];
          store_vec<Tout, 8>(out + hw[u] * C + c0, w);
        }
      }
      if (raw) {
#pragma unroll
        for (int u = 0; u < kPairs; ++u)
          if (ok[u]) store_vec<Tout, 8>(raw + hw[u] * C + c0, v[u]);
      }
#pragma unroll
      for (int k = 0; k < KR; ++k) {
        float w[8];
        load_vec<float, 8>(sr + k * C + c0, w);
#pragma unroll
        for (int u = 0; u < kPairs; ++u) {
          if (!ok[u]) continue;
#pragma unroll
          for (int e = 0; e < 8; ++e) t[u][k] += v[u][e] * w[e];
        }
      }
    }
    if constexpr (KR > 0) {
#pragma unroll
      for (int u = 0; u < kPairs; ++u) {
#pragma unroll
        for (int k = 0; k < KR; ++k) t[u][k] = dev::warp_sum(t[u][k], G);
        if (!ok[u]) continue;
        const int yy = hw[u] >> log2w, xx = hw[u] & (a.W - 1);
        for (int kk = lig; kk < KR; kk += G) {  // lane k of the group writes image channel k (and k + G, ...)
          float tk = t[u][0];
#pragma unroll
          for (int q = 1; q < KR; ++q)
            if (q == kk) tk = t[u][q];
          float r = tk + a.rgb_bias[kk];
          if (a.rgb_clamp >= 0.0f) r = fminf(fmaxf(r, -a.rgb_clamp), a.rgb_clamp);
          float up = 0.0f;
          if (up4) {
            up = dev::upsampled4(a.img_prev + (size_t(n) * KR + kk) * (HW / 4), a.H / 2, a.W / 2, sg, yy, xx);
          } else if (a.img_prev) {
            up = dev::upsampled(a.img_prev + (size_t(n) * KR + kk) * (HW / 4), a.H / 2, a.W / 2, a.filter, a.fsize, yy,
                                xx);
          }
          a.img[(size_t(n) * KR + kk) * HW + hw[u]] = up + r;
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
  if (!aligned32(a.dcoefs) || a.dcoefs_stride % 8 != 0) return false;
  if (!aligned32(a.out_scale) || a.out_scale_stride % 8 != 0) return false;
  if (!aligned32(a.rgb_weight) || !aligned32(a.rgb_styles) || a.rgb_styles_stride % 8 != 0) return false;
  return true;
}

template <typename Tin, typename Tout>
void launch(const EpilogueArgs& a, int log2w, cudaStream_t stream) {
  const bool vec = can_vectorize(a);
  const int chunks = vec ? a.C / 8 : a.C;
  const int G = std::min(32, pow2_at_least(chunks));
  const int64_t HW = int64_t(a.H) * a.W;
  const int64_t warps_needed = (HW + (32 / G) - 1) / (32 / G);
  // Pixel steps per warp: up to 8 on large layers (fewer blocks, tables loaded once per block),
  // down to 1 where the whole batch has fewer than ~4096 warps of work (small resolutions, small
  // batches: there a block's steps run one after another, each a chain of memory round trips).
  const int64_t steps = std::min<int64_t>(8, std::max<int64_t>(1, (warps_needed * a.N + 4095) / 4096));
  const int64_t want = std::max<int64_t>(1, (warps_needed + 8 * steps - 1) / (8 * steps));
  const int bx = static_cast<int>(std::min<int64_t>(want, 4096));
  const dim3 grid(bx, a.N);
  const size_t tab = (size_t(3 + a.img_channels) * a.C + 16) * sizeof(float);
  if (vec && chunks <= G && a.img_channels <= kMaxRgb && tab <= 48 * 1024 && a.shared_tables) {
    switch (a.img_channels) {
      case 0:
        dev::launch("conv_epilogue_tab_kernel", conv_epilogue_tab_kernel<Tin, Tout, 0>, grid, kThreads, tab, stream, a,
                    G, log2w);
        break;
      case 1:
        dev::launch("conv_epilogue_tab_kernel", conv_epilogue_tab_kernel<Tin, Tout, 1>, grid, kThreads, tab, stream, a,
                    G, log2w);
        break;
      case 2:
        dev::launch("conv_epilogue_tab_kernel", conv_epilogue_tab_kernel<Tin, Tout, 2>, grid, kThreads, tab, stream, a,
                    G, log2w);
        break;
      case 3:
        dev::launch("conv_epilogue_tab_kernel", conv_epilogue_tab_kernel<Tin, Tout, 3>, grid, kThreads, tab, stream, a,
                    G, log2w);
        break;
      default:
        dev::launch("conv_epilogue_tab_kernel", conv_epilogue_tab_kernel<Tin, Tout, 4>, grid, kThreads, tab, stream, a,
                    G, log2w);
        break;
    }
  } else if (vec) {
    dev::launch("conv_epilogue_kernel", conv_epilogue_kernel<Tin, Tout, 8>, grid, kThreads, 0, stream, a, G, log2w);
  } else {
    dev::launch("conv_epilogue_kernel", conv_epilogue_kernel<Tin, Tout, 1>, grid, kThreads, 0, stream, a, G, log2w);
  }
  SG2_LAUNCH_CHECK("conv_epilogue_kernel");
}

}  // namespace

void conv_epilogue(const EpilogueArgs& a, cudaStream_t stream) {
  if (a.N <= 0 || a.H <= 0 || a.W <= 0 || a.C <= 0) return;
  if (a.img_channels > 0 && (!a.rgb_weight || !a.rgb_styles || !a.rgb_bias || !a.img))
    fail(ErrorKind::internal, "conv_epilogue: ToRGB requested without its tensors");
  if (a.img_prev && (!a.filter || a.fsize < 1)) fail(ErrorKind::internal, "conv_epilogue: img_prev without a filter");
  if ((a.W & (a.W - 1)) != 0 || int64_t(a.H) * a.W * a.C >= (int64_t(1) << 31) || a.N > 65535)
    fail(ErrorKind::unsupported, "conv_epilogue: ", a.N, " x ", a.H, "x", a.W, "x", a.C,
         " (widths must be powers of two, one sample under 2^31 elements)");
  int log2w = 0;
  while ((1 << log2w) < a.W) ++log2w;
  const bool in16 = a.y_dtype == DType::f16, out16 = a.out_dtype == DType::f16;
  if (in16 && out16)
    launch<__half, __half>(a, log2w, stream);
  else if (in16)
    launch<__half, float>(a, log2w, stream);
  else if (out16)
    launch<float, __half>(a, log2w, stream);
  else
    launch<float, float>(a, log2w, stream);
}

}  // namespace sg2::cuda
