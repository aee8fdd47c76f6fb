// sg2 CUDA kernels: the Hopper (wgmma) implementation of the 3xTF32 convolution
// (kernels/tc_conv_sm90.cu). Internal: call tc_conv (kernels/tc_conv.h), which
// picks it where it can run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/tc_conv.h"

namespace sg2::cuda {

/// The current device is an sm_90 GPU and this binary carries the kernel's sm_90a code (a probe
/// launch; call outside stream capture). Throws Error(device) on a CUDA failure.
bool tc_wgmma_probe();
/// The driver's tensor-map encoder (tc_conv_tensor_map_encoder).
PFN_cuTensorMapEncodeTiled_v12000 tc_tensor_map_encoder();
/// Output channels per block for a.Cout: 128 where Cout % 128 == 0, 64 where Cout % 64 == 0,
/// else 0 (the wgmma kernel does not take the shape).
int tc_wgmma_bn(const TcConvArgs& a);
/// Output pixels per block the launch runs for `a` with `bn` channels per block: 256 where
/// use_256_pixels takes the convolution (chained modes, bn <= 128, no folded splits, 256-pixel
/// boxes; asked for or a grid that fills the GPU twice), else 128. Host only.
int tc_wgmma_block_pixels(const TcConvArgs& a, int bn);
/// Whether the kernel loads this convolution's activations by TMA: every 128-pixel tile of a
/// forward convolution is one box of the [N, H, W, Cin] tensor (rows of W | 128 with H a multiple
/// of the tile's rows, whole samples with H W | 128, or 128-pixel pieces of rows with 128 | W);
/// box = {32 channels, W extent, H extent, N extent}. False for transposed convolutions, other
/// shapes (cp.async per thread instead) and when a.tma_activations is false. Host only; no device needed.
bool tc_wgmma_activation_box(const TcConvArgs& a, uint32_t (&box)[4]);
/// Launches the kernel over `grid` (x: 128-pixel tiles, y: Cout / bn, z: phases x splits); the
/// caller (tc_conv) has checked the arguments and sums split-K partials.
void tc_conv_wgmma(const TcConvArgs& a, dim3 grid, int bn, cudaStream_t stream);

}  // namespace sg2::cuda
