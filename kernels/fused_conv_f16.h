// sg2 CUDA kernels: the fp16 stride-1 modulated 3x3 conv (conv1) with its whole epilogue and the
// block's ToRGB in one kernel, for the high-resolution fp16 blocks (few channels, many pixels).
//
// Same function as a 3x3 convolution (pad 1, the shared fp16 filter [C, 3, 3, C], fp32
// accumulation on tensor cores: mma.sync m16n8k16) followed by conv_epilogue
// (kernels/conv_epilogue.h: demodulation, noise, bias, lrelu, gain, clamp, the next layer's input
// scale, ToRGB and the skip image), but the conv output stays in registers: one read of the
// input, one write of the output (and the image), instead of the conv's write and the epilogue's
// read of a full fp16 tensor. The conv sum is not rounded to fp16 before the epilogue (the
// unfused path rounds it when cuDNN stores it), so it is slightly more accurate.
// Deterministic: every output's summation order is fixed (taps, then input channels in steps of 16).
// Needs the device to allow 80 KiB (32 channels) or 185 KiB (64 channels) of shared memory per block.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/conv_epilogue.h"

namespace sg2::cuda {

/// Dynamic shared memory of one block for `channels` (32: 80 KiB, 64: 185 KiB; 0 for other counts).
size_t fused_conv_f16_smem_bytes(int channels);
/// The shape alone: C in {32, 64}, H and W multiples of 16, img_channels <= 4, and the block's
/// shared memory within `smem_per_block`.
bool fused_conv_f16_shape_ok(int C, int H, int W, int img_channels, size_t smem_per_block);
/// The epilogue arguments `e` as for conv_epilogue with e.y unused; x [N, H, W, C] fp16 (the
/// modulated input), w [C, 3, 3, C] fp16 (output channel, tap, input channel).
/// Supported: fused_conv_f16_supports(e, smem_per_block) — C in {32, 64}, H and W multiples of
/// 16, no residual, fp16 out/raw, img_channels <= 4, 16-byte aligned tensors, and the block's
/// shared memory within `smem_per_block` (the device's cudaDevAttrMaxSharedMemoryPerBlockOptin).
bool fused_conv_f16_supports(const EpilogueArgs& e, size_t smem_per_block);
/// Throws Error(internal) when !fused_conv_f16_supports(e, smem_per_block).
void fused_conv_f16(const void* x, const void* w, const EpilogueArgs& e, size_t smem_per_block, cudaStream_t stream);

}  // namespace sg2::cuda
