// sg2 CUDA kernels: strict-fp32 convolution as a SIMT implicit GEMM (no tensor cores, no TF32),
// for the fp32 precision where cuDNN's NHWC fp32 kernels are slow. Same layouts and semantics as
// kernels/conv2d.h (NHWC activations, KRSC filters; CPU reference kernels/ref/modulated_conv2d.h
// conv2d and conv_transpose2d_stride2 with shared weights):
//   forward:    3x3, pad 1, stride 1, correlation; w [Cout, 3, 3, Cin]
//   transposed: 3x3, stride 2, no padding; w [Cin, 3, 3, Cout]; computed as four phase GEMMs
//               (output rows/columns of each parity use 2 or 1 taps per axis: 9 taps in all).
// Needs Cin % 8 == 0, Cout % 32 == 0 and 16-byte aligned buffers (supports() says).
#pragma once

#include <cuda_runtime_api.h>

namespace sg2::cuda {

struct SimtConvArgs {
  int N = 0, H = 0, W = 0;  // input size
  int Cin = 0, Cout = 0;
  bool transposed = false;
  const float* x = nullptr;  // [N, H, W, Cin]
  const float* w = nullptr;
  float* y = nullptr;  // forward [N, H, W, Cout]; transposed [N, 2H + 1, 2W + 1, Cout]
};

bool conv2d_simt_supports(const SimtConvArgs& a);
void conv2d_simt(const SimtConvArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
