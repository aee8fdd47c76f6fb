// sg2 kernel runner: CUTLASS's implicit-GEMM convolutions (NVIDIA CUTLASS 3.x, the sm90 TMA + wgmma
// warp-specialized fprop collective) as candidates beside sg2's own kernels and cuDNN's, so that the
// choice between them is a measurement (issue 22 item 5). Built only when CMake is given
// SG2_CUTLASS_DIR (the include folder of the `nvidia-cutlass` wheel from PyPI) and the architectures
// name 90; nothing in the library depends on it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace sg2::dev {

/// A forward convolution, cross-correlation as torch.nn.functional.conv2d: x [N, H, W, Cin] (NHWC),
/// w [Cout, k, k, Cin] (KRSC), y [N, H + 2 pad - k + 1, ..., Cout] (NHWC). fp16 operands with fp32
/// sums and fp16 output, or fp32 operands multiplied as TF32 with fp32 sums and output.
struct CutlassConvArgs {
  int N = 0, H = 0, W = 0, Cin = 0, Cout = 0, k = 3, pad = 1;
  bool f16 = true;
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
};

/// The number of CUTLASS configurations (tile shape, cluster, schedule) for fp16 or TF32.
int cutlass_conv_count(bool f16);
/// "cutlass sm90 fprop f16 128x128x64 cluster 2x1" (tile M x N x K, the cluster when not 1x1).
std::string cutlass_conv_name(int i, bool f16);
/// One more than the workspace bytes configuration i needs for `a`: 0 only when it cannot run it
/// (alignment, sizes, not an sm_90 device).
size_t cutlass_conv_workspace(int i, const CutlassConvArgs& a);
/// Runs configuration i on `stream`; false when CUTLASS cannot implement the problem (alignment,
/// sizes) or the device is not sm_90. Launch errors throw sg2::Error.
bool cutlass_conv_run(int i, const CutlassConvArgs& a, void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace sg2::dev
