// sg2 CUDA kernels: the stride-2 transposed 3x3 convolution (the up-sampling conv0) as one
// tensor-core GEMM per tile of input cells. Two implementations of one design behind one entry
// point (tc_tconv): warpgroup MMAs fed by TMA on Hopper (kernels/tc_tconv_sm90.cu, compiled for
// sm_90a only), and mma.sync fed by cp.async for sm_80 and later (kernels/tc_tconv.cu: A100,
// the sm_86/sm_89 cards, and Hopper where asked). Same function as tc_conv's transposed mode
// (kernels/tc_conv.h; CPU reference kernels/ref/modulated_conv2d.h conv_transpose2d_stride2 with
// shared weights):
//   y[n, 2a + ky, 2b + kx, o] += x[n, a, b, i] * w[i, ky, kx, o],  y [N, 2H + 1, 2W + 1, Cout]
//
// GEMM view: a cell (i, j), 0 <= i <= H, 0 <= j <= W, owns the four outputs (2i + py, 2j + px)
// (the phases P = 2 py + px, where inside the output) and reads the 2 x 2 input neighbourhood
// x[i - di, j - dj]. Phase by phase, with tap t = 3 ky + kx:
//   P0 = x[i,j] w0 + x[i,j-1] w2 + x[i-1,j] w6 + x[i-1,j-1] w8     P1 = x[i,j] w1 + x[i-1,j] w7
//   P2 = x[i,j] w3 + x[i,j-1] w5                                     P3 = x[i,j] w4
// so one block computes a tile of up to 128 cells x 4 phases x `bnc` output channels: nine MMAs
// per 16-deep (fp16) or 8-deep (tf32) step, no zero blocks. The tile is a rectangle of TH x TW cells whose (TH + 1) x
// (TW + 1) input halo is loaded once per chunk of input channels (zero-filled outside the image) with the chunk's
// filter (9 taps x bnc rows); each warp reads its four neighbour fragments from that halo with ldmatrix. Persistent
// blocks walk the (tile, channel tile) items and keep loading ahead across items, so the pipeline stays full even where
// a tile has one or two chunks (b1024.conv0: 64 input channels).
//
// Arithmetic: fp16 operands (or TF32: x truncated, w rounded to nearest by tf32x3_pack_weights),
// one fp32 accumulator chain per output over the whole k (chunks, then steps, then the taps of a
// phase in the order above), fixed by the layer's shape alone: batch-invariant by construction
// (the tile shape depends on H and W only; the implementation and its pipeline depth never change
// the order). The two implementations may differ in the last bits (the tensor cores' internal
// sums); each is batch-invariant. 3xTF32 (float32-accurate, wgmma only, 32-channel phase tiles):
// x = hi + lo (hi truncated to TF32) and w = hi + lo (tf32x3_split_weights of the packed filter),
// per 8-deep step lo(x) hi(w), then hi(x) lo(w), then hi(x) hi(w) over the nine taps from zero,
// each step's sums added to the fp32 outputs (round to nearest): per step at most 12 MMAs on one
// accumulator (96 products for P0), as a chunk of tc_conv's 3xTF32 mode.
#pragma once

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled (a type only: sg2 does not link libcuda)
#include <cuda_runtime_api.h>

#include <cstddef>

namespace sg2::cuda {

/// Cells per tile (the MMAs' 128 rows) and the tile's input halo rows, at most.
constexpr int kTconvMaxCells = 128, kTconvMaxHalo = 192;

struct TcTconvArgs {
  enum class Operands { tf32, f16, tf32x3 };
  Operands operands = Operands::f16;
  /// Which implementation runs: wgmma (sm_90 with sm_90a code, DeviceCaps::wgmma; needs
  /// encode_tensor_map) or mma.sync (sm_80+; needs smem_per_block >= tc_tconv_mma_smem(*this)).
  /// The caller decides (engine/cuda/conv.cpp choose_conv); the kernels never choose.
  enum class Impl { mma, wgmma } impl = Impl::wgmma;
  int N = 0, H = 0, W = 0;  // input size
  int Cin = 0, Cout = 0;
  const void* x = nullptr;      // [N, H, W, Cin] fp16 or fp32
  const void* w = nullptr;      // tc_tconv_pack_weights' layout, fp16 or fp32 (TF32-rounded; 3xTF32: the heads)
  const float* w_lo = nullptr;  // 3xTF32: the filter's tails, same layout (tf32x3_split_weights)
  void* y = nullptr;            // [N, 2H + 1, 2W + 1, Cout], fp16 or fp32
  int num_sms = 0;              // persistent blocks: at most one per SM
  PFN_cuTensorMapEncodeTiled_v12000 encode_tensor_map = nullptr;  // wgmma: tc_conv_tensor_map_encoder()
  /// mma: the shared memory a block may use (bytes; the device's opt-in limit,
  /// DeviceCaps::smem_per_block_optin): the pipeline is as deep (2 to 4 stages) as it allows.
  size_t smem_per_block = 0;
};

/// Output channels per phase of a block: 64 where Cout % 64 == 0, else 32 (3xTF32: always 32).
int tc_tconv_phase_channels(int cout, bool tf32x3 = false);
/// Host: the filter in the kernel's layout. w is the transposed conv's device filter
/// [Cin, 3, 3, Cout]; out (Cin * 9 * Cout values) is [Cout / bnc][9 taps][bnc][Cin] with bnc =
/// tc_tconv_phase_channels(cout, tf32x3): per channel tile, the taps' rows one after another.
void tc_tconv_pack_weights(const float* w, int cin, int cout, float* out, bool tf32x3 = false);
/// The tile of cells (rows, columns; rows * cols <= 128) for an H x W input: the fewest tiles
/// over the (H + 1) x (W + 1) cells. Host only.
void tc_tconv_tile(int H, int W, int* rows, int* cols);
/// The shape alone: Cin a multiple of 64 (fp16) or 32 (tf32, 3xTF32), at most 65536, Cout of 32, sizes in range.
bool tc_tconv_shape_ok(const TcTconvArgs& a);
/// mma: the shared memory (bytes) of the shallowest pipeline (two stages) for a.Cout (either
/// operand mode: 64-byte chunks): 96 KiB where Cout % 64 == 0, else 60 KiB (host only).
size_t tc_tconv_mma_smem(const TcTconvArgs& a);
/// Shape, buffers (non-null, 16-byte aligned), num_sms > 0, and the implementation's needs
/// (wgmma: the encoder, 3xTF32 w_lo; mma: smem_per_block, not 3xTF32).
bool tc_tconv_supports(const TcTconvArgs& a);
/// y = conv_transpose(x, w) (above) with a.impl: wgmma needs an sm_90 device and sm_90a code
/// (DeviceCaps::wgmma), mma an sm_80+ device. Throws Error(internal) for unsupported arguments.
void tc_tconv(const TcTconvArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
