// sg2 CUDA kernels: box downscaling of uint8 images (box_downscale.h).
#include <algorithm>

#include "kernels/box_downscale.h"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"

namespace sg2::cuda {

namespace {

/// One thread per output value (pixel x channel): f*f bytes summed as integers, rounded half up.
__global__ void box_downscale_kernel(const uint8_t* __restrict__ in, int H, int W, int C, int f, int64_t total,
                                     uint8_t* __restrict__ out) {
  dev::pdl_begin();
  const int h = H / f, w = W / f;
  const uint32_t area = uint32_t(f) * uint32_t(f), half = area / 2;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < total; p += int64_t(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(p % C);
    const int64_t q = p / C;
    const int x = static_cast<int>(q % w);
    const int64_t r = q / w;
    const int y = static_cast<int>(r % h);
    const int64_t n = r / h;
    const uint8_t* src = in + ((n * H + int64_t(y) * f) * W + int64_t(x) * f) * C + c;
    uint32_t sum = 0;
    for (int i = 0; i < f; ++i)
      for (int j = 0; j < f; ++j) sum += src[(int64_t(i) * W + j) * C];
    out[p] = static_cast<uint8_t>((sum + half) / area);
  }
}

}  // namespace

void box_downscale_u8(const uint8_t* in, int N, int H, int W, int C, int f, uint8_t* out, cudaStream_t stream) {
  if (f < 1) f = 1;
  const int64_t total = int64_t(N) * (H / f) * (W / f) * C;
  if (total <= 0) return;
  if (f == 1) {
    SG2_CUDA_CHECK(cudaMemcpyAsync(out, in, size_t(total), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((total + threads - 1) / threads, 65535));
  dev::launch("box_downscale_kernel", box_downscale_kernel, blocks, threads, 0, stream, in, H, W, C, f, total, out);
  SG2_LAUNCH_CHECK("box_downscale_kernel");
}

}  // namespace sg2::cuda
