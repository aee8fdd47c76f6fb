// sg2 CUDA kernels: the official uint8 conversion (to_uint8.h).
#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/to_uint8.h"

namespace sg2::cuda {

namespace {

__device__ __forceinline__ uint8_t to_u8(float x) {
  const float v = __fadd_rn(__fmul_rn(x, 127.5f), 128.0f);  // two roundings, never fused
  if (!(v > 0.0f)) return 0;                                // also NaN
  if (v >= 255.0f) return 255;
  return static_cast<uint8_t>(v);  // truncation toward zero
}

/// One thread per pixel: C planes read (coalesced along the plane), C bytes written.
template <int C>
__global__ void to_uint8_kernel(const float* __restrict__ img, int64_t HW, int64_t total, uint8_t* __restrict__ out) {
  dev::pdl_begin();
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < total; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = p / HW, i = p - n * HW;
    const float* src = img + n * C * HW + i;
    uint8_t* dst = out + p * C;
#pragma unroll
    for (int c = 0; c < C; ++c) dst[c] = to_u8(src[c * HW]);
  }
}

__global__ void to_uint8_any_kernel(const float* __restrict__ img, int C, int64_t HW, int64_t total,
                                    uint8_t* __restrict__ out) {
  dev::pdl_begin();
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < total; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = p / HW, i = p - n * HW;
    for (int c = 0; c < C; ++c) out[p * C + c] = to_u8(img[(n * C + c) * HW + i]);
  }
}

}  // namespace

void images_to_uint8(const float* img, int N, int C, int H, int W, uint8_t* out, cudaStream_t stream) {
  const int64_t HW = int64_t(H) * W, total = int64_t(N) * HW;
  if (total <= 0 || C <= 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((total + threads - 1) / threads, 65535));
  switch (C) {
    case 1:
      dev::launch("to_uint8_kernel", to_uint8_kernel<1>, blocks, threads, 0, stream, img, HW, total, out);
      break;
    case 2:
      dev::launch("to_uint8_kernel", to_uint8_kernel<2>, blocks, threads, 0, stream, img, HW, total, out);
      break;
    case 3:
      dev::launch("to_uint8_kernel", to_uint8_kernel<3>, blocks, threads, 0, stream, img, HW, total, out);
      break;
    case 4:
      dev::launch("to_uint8_kernel", to_uint8_kernel<4>, blocks, threads, 0, stream, img, HW, total, out);
      break;
    default:
      dev::launch("to_uint8_any_kernel", to_uint8_any_kernel, blocks, threads, 0, stream, img, C, HW, total, out);
      break;
  }
  SG2_LAUNCH_CHECK("to_uint8_kernel");
}

}  // namespace sg2::cuda
