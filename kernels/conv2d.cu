// sg2 CUDA kernels: direct convolution (conv2d.h). One thread per output element.
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/conv2d.h"
#include "kernels/cuda_check.h"
#include "kernels/pdl.cuh"

namespace sg2::cuda {

namespace {

template <typename T>
__global__ void conv2d_direct_kernel(Conv2dArgs a, int OH, int OW) {
  dev::pdl_begin();
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  T* y = static_cast<T*>(a.y);
  const int k = a.k;
  const int64_t total = static_cast<int64_t>(a.N) * OH * OW * a.Cout;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int o = static_cast<int>(idx % a.Cout);
    const int64_t p = idx / a.Cout;
    const int ox = static_cast<int>(p % OW), oy = static_cast<int>((p / OW) % OH);
    const int64_t n = p / (static_cast<int64_t>(OW) * OH);
    float acc = 0.0f;
    for (int ky = 0; ky < k; ++ky) {
      int iy;
      if (a.transposed) {
        const int t = oy - ky;
        if (t < 0 || (t & 1)) continue;
        iy = t / 2;
      } else {
        iy = oy + ky - a.pad;
      }
      if (iy < 0 || iy >= a.H) continue;
      for (int kx = 0; kx < k; ++kx) {
        int ix;
        if (a.transposed) {
          const int t = ox - kx;
          if (t < 0 || (t & 1)) continue;
          ix = t / 2;
        } else {
          ix = ox + kx - a.pad;
        }
        if (ix < 0 || ix >= a.W) continue;
        const T* xp = x + ((n * a.H + iy) * a.W + ix) * a.Cin;
        if (a.transposed) {
          const T* wp = w + (static_cast<int64_t>(ky) * k + kx) * a.Cout + o;
          const int64_t wstride = static_cast<int64_t>(k) * k * a.Cout;
          for (int i = 0; i < a.Cin; ++i) acc += dev::to_float(xp[i]) * dev::to_float(wp[i * wstride]);
        } else {
          const T* wp = w + ((static_cast<int64_t>(o) * k + ky) * k + kx) * a.Cin;
          for (int i = 0; i < a.Cin; ++i) acc += dev::to_float(xp[i]) * dev::to_float(wp[i]);
        }
      }
    }
    y[idx] = dev::from_float<T>(acc);
  }
}

}  // namespace

void conv2d_direct(const Conv2dArgs& a, cudaStream_t stream) {
  const int OH = a.transposed ? 2 * a.H + a.k - 2 : a.H + 2 * a.pad - a.k + 1;
  const int OW = a.transposed ? 2 * a.W + a.k - 2 : a.W + 2 * a.pad - a.k + 1;
  const int64_t total = static_cast<int64_t>(a.N) * OH * OW * a.Cout;
  if (total <= 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 65535));
  if (a.dtype == DType::f16)
    dev::launch("conv2d_direct_kernel", conv2d_direct_kernel<__half>, blocks, 256, 0, stream, a, OH, OW);
  else
    dev::launch("conv2d_direct_kernel", conv2d_direct_kernel<float>, blocks, 256, 0, stream, a, OH, OW);
  SG2_LAUNCH_CHECK("conv2d_direct_kernel");
}

}  // namespace sg2::cuda
