// sg2 kernel runner: device-side random fill and comparison (device_ops.h).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>

#include "dev/device_ops.h"
#include "kernels/cuda_check.h"

namespace sg2::dev {

namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void __launch_bounds__(256) fill_kernel(T* p, size_t n, float scale, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t r = splitmix64(seed ^ splitmix64(i));
    // the sum of four uniforms in [-0.5, 0.5): mean 0, variance 1/3
    float v = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) v += float((r >> (16 * k)) & 0xffffu) * (1.0f / 65536.0f) - 0.5f;
    v *= scale * 1.7320508f;
    if (v == 0.0f) v = scale * 1e-3f;
    if constexpr (sizeof(T) == 2)
      p[i] = __float2half_rn(v);
    else
      p[i] = v;
  }
}

__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(__half v) { return __half2float(v); }

// out[0] = max |a - b| bits, out[1] = max |b| bits (non-negative floats order as unsigned ints), out[2] = non-finite
template <typename T>
__global__ void __launch_bounds__(256) compare_kernel(const T* a, const T* b, size_t n, unsigned long long* out) {
  float md = 0.0f, mb = 0.0f;
  unsigned long long bad = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float x = as_float(a[i]), y = as_float(b[i]);
    if (!isfinite(x)) {
      ++bad;
      continue;
    }
    md = fmaxf(md, fabsf(x - y));
    mb = fmaxf(mb, fabsf(y));
  }
  atomicMax(&out[0], static_cast<unsigned long long>(__float_as_uint(md)));
  atomicMax(&out[1], static_cast<unsigned long long>(__float_as_uint(mb)));
  if (bad) atomicAdd(&out[2], bad);
}

}  // namespace

void fill_random(void* p, size_t n, cuda::DType dt, float scale, uint64_t seed, cudaStream_t s) {
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<size_t>((n + 255) / 256, 8192));
  if (dt == cuda::DType::f16)
    fill_kernel<<<blocks, 256, 0, s>>>(static_cast<__half*>(p), n, scale, seed);
  else
    fill_kernel<<<blocks, 256, 0, s>>>(static_cast<float*>(p), n, scale, seed);
  SG2_LAUNCH_CHECK("fill_kernel");
}

Comparison compare(const void* a, const void* b, size_t n, cuda::DType dt, cudaStream_t s) {
  unsigned long long* d = nullptr;
  SG2_CUDA_CHECK(cudaMalloc(&d, 3 * sizeof(unsigned long long)));
  SG2_CUDA_CHECK(cudaMemsetAsync(d, 0, 3 * sizeof(unsigned long long), s));
  const int blocks = static_cast<int>(std::min<size_t>((n + 255) / 256, 4096));
  if (n > 0) {
    if (dt == cuda::DType::f16)
      compare_kernel<<<blocks, 256, 0, s>>>(static_cast<const __half*>(a), static_cast<const __half*>(b), n, d);
    else
      compare_kernel<<<blocks, 256, 0, s>>>(static_cast<const float*>(a), static_cast<const float*>(b), n, d);
    SG2_LAUNCH_CHECK("compare_kernel");
  }
  unsigned long long h[3] = {0, 0, 0};
  const cudaError_t e = cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  cudaFree(d);
  SG2_CUDA_CHECK(e);
  Comparison c;
  const unsigned bits[2] = {static_cast<unsigned>(h[0]), static_cast<unsigned>(h[1])};
  float f[2];
  std::memcpy(f, bits, sizeof(f));
  c.max_abs_diff = f[0];
  c.max_abs_ref = f[1];
  c.non_finite = h[2];
  return c;
}

}  // namespace sg2::dev
