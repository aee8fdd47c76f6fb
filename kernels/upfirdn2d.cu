// sg2 CUDA kernels: upsample2d on NHWC activations (upfirdn2d.h).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"
#include "kernels/upfirdn2d.h"

namespace sg2::cuda {

namespace {

template <typename T>
__global__ void upsample2d_kernel(const T* x, int N, int H, int W, int C, const float* filter, int f, float post_gain,
                                  float* out) {
  dev::pdl_begin();
  const int OH = 2 * H, OW = 2 * W, p0 = (f + 1) / 2;
  const int64_t total = static_cast<int64_t>(N) * OH * OW * C;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const int64_t p = i / C;
    const int ox = static_cast<int>(p % OW), oy = static_cast<int>((p / OW) % OH);
    const int64_t n = p / (static_cast<int64_t>(OW) * OH);
    float acc = 0.0f;
    for (int a = 0; a < f; ++a) {
      const int uy = oy + a - p0;
      if (uy < 0 || uy >= OH || (uy & 1)) continue;
      for (int b = 0; b < f; ++b) {
        const int ux = ox + b - p0;
        if (ux < 0 || ux >= OW || (ux & 1)) continue;
        const float v = dev::to_float(x[((n * H + uy / 2) * W + ux / 2) * C + c]);
        acc += v * (filter[(f - 1 - a) * f + (f - 1 - b)] * 4.0f);
      }
    }
    out[i] = post_gain != 1.0f ? acc * post_gain : acc;
  }
}

}  // namespace

void upsample2d_nhwc(const void* x, DType x_dtype, int N, int H, int W, int C, const float* filter, int fsize,
                     float post_gain, float* out, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(N) * 4 * H * W * C;
  if (total <= 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 8192));
  if (x_dtype == DType::f16)
    dev::launch("upsample2d_kernel", upsample2d_kernel<__half>, blocks, 256, 0, stream, static_cast<const __half*>(x),
                N, H, W, C, filter, fsize, post_gain, out);
  else
    dev::launch("upsample2d_kernel", upsample2d_kernel<float>, blocks, 256, 0, stream, static_cast<const float*>(x), N,
                H, W, C, filter, fsize, post_gain, out);
  SG2_LAUNCH_CHECK("upsample2d_kernel");
}

}  // namespace sg2::cuda
