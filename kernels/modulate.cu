// sg2 CUDA kernels: modulated const input (modulate.h).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/cuda_check.h"
#include "kernels/modulate.h"
#include "kernels/pdl.cuh"

namespace sg2::cuda {

namespace {

template <typename T>
__global__ void modulate_const_kernel(const float* k, int C, int H, int W, const float* s, int s_stride, int N,
                                      T* out) {
  dev::pdl_begin();
  const int64_t total = static_cast<int64_t>(N) * H * W * C;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const int64_t p = i / C;
    const int x = static_cast<int>(p % W), y = static_cast<int>((p / W) % H);
    const int64_t n = p / (static_cast<int64_t>(W) * H);
    out[i] = dev::from_float<T>(k[(static_cast<int64_t>(c) * H + y) * W + x] * s[n * s_stride + c]);
  }
}

}  // namespace

void modulate_const(const float* const_, int C, int H, int W, const float* s_in, int s_stride, int N, DType out_dtype,
                    void* out, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(N) * H * W * C;
  if (total <= 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 4096));
  if (out_dtype == DType::f16)
    dev::launch("modulate_const_kernel", modulate_const_kernel<__half>, blocks, 256, 0, stream, const_, C, H, W, s_in,
                s_stride, N, static_cast<__half*>(out));
  else
    dev::launch("modulate_const_kernel", modulate_const_kernel<float>, blocks, 256, 0, stream, const_, C, H, W, s_in,
                s_stride, N, static_cast<float*>(out));
  SG2_LAUNCH_CHECK("modulate_const_kernel");
}

}  // namespace sg2::cuda
