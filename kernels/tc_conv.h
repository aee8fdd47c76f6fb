// sg2 CUDA kernels: the implicit-GEMM 3x3 convolution on tensor cores, in three arithmetic modes
// (Operands): 3xTF32, float32-accurate (the fp32 precision and auto's fp32 blocks); plain TF32; and
// fp16 operands with fp32 sums. Same layouts, shapes and semantics as the strict SIMT kernel
// (kernels/conv2d_simt.h; CPU reference kernels/ref/modulated_conv2d.h conv2d and
// conv_transpose2d_stride2 with shared weights):
//   forward:    3x3, pad 1, stride 1, correlation; or 1x1, pad 0 (k = 1: the resnet skip; mma.sync only)
//   transposed: 3x3, stride 2, no padding; four phase GEMMs (kernels/tc_tconv.h does it as one
//               GEMM per tile on Hopper)
// The filter comes packed [Cout, 3, 3, Cin] ([Cout, 1, 1, Cin] for the 1x1: the device filter as it is;
// input channels contiguous: the GEMM's k) for either
// kind: 3xTF32 its TF32 heads and tails (tf32x3_pack_weights), tf32 the heads, fp16 the weights.
//
// Two implementations behind one entry point (tc_conv):
//  * mma.sync m16n8k8 / m16n8k16 (sm_80+; kernels/tc_conv.cu);
//  * wgmma m64nNk8 / m64nNk16 on Hopper (kernels/tc_conv_sm90.cu, compiled for sm_90a only): the
//    filter (and, for most forward convs, the activations) arrive by TMA; the tensor cores read the
//    filter straight from shared memory, the activations go in as registers; same splits and the
//    same summation order per output as mma.sync.
//
// Why the 3xTF32 mode is as accurate as fp32 FMAs (docs/performance-notes.md, "fp32 on tensor cores"):
//  * each operand is split into a TF32 head and tail, v = hi(v) + lo(v) (the filter: hi rounded to
//    nearest at load; the activations: hi truncated, in the kernel), lo = v - hi exact, itself cut
//    to TF32 by the tensor core; a product is hi(x)hi(w) + lo(x)hi(w) + hi(x)lo(w), accurate to
//    about 2^-20 relative (the dropped lo(x)lo(w) is below 2^-20 too), errors that average out in
//    the sum far below float32 accumulation's own;
//  * a tensor core adds with truncation (round toward zero), so summing a long k into one
//    tensor-core accumulator drifts by about k/8 ulps (measured: cuDNN's TF32 kernels fed split
//    operands err 4.6e-5 relative on a 512-channel layer, FMA fp32 3.8e-7). So in this mode every
//    128-byte chunk of k (32 channels of one tap) starts from zero in the tensor core (twelve
//    chained MMAs) and is then added to an fp32 register accumulator with an ordinary
//    round-to-nearest add, as an FMA convolution would. The tf32 and fp16 modes, whose operands
//    already round at 2^-11, chain the whole k in the tensor core (as cuDNN does): no adds.
// Measured against the CPU reference it matches the SIMT/cuDNN FMA paths' error
// (tests/gpu/test_gpu_kernels.cpp Tf32x3ConvIsAsAccurateAsFma). Deterministic: the summation
// order depends only on the shape and the split-K factor, never on a sample's position in the
// batch; with the same split-K factor, an output does not depend on the batch size either.
// Needs sm_80+, Cin a multiple of 32 (fp16: 64), Cout % 32 == 0 and 16-byte aligned buffers
// (supports() says).
#pragma once

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled (a type only: sg2 does not link libcuda)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>

namespace sg2::cuda {

struct TcConvArgs {
  /// What the tensor cores multiply (per multiply-add of the convolution):
  ///   tf32x3: fp32 x, w, y; three TF32 products, hi(x)hi(w) + lo(x)hi(w) + hi(x)lo(w): fp32-accurate
  ///   tf32:   fp32 x, w, y; one TF32 product, hi(x)hi(w) (x truncated, w rounded to TF32; w_lo unused)
  ///   f16:    fp16 x, w (w_hi), y; one fp16 product (exact), fp32 sums; chunks of 64 channels
  /// k runs in 128-byte chunks (32 fp32 or 64 fp16 channels of one tap) in a fixed order; tf32x3
  /// sums each chunk in the tensor core from zero and adds it to an fp32 accumulator (round to
  /// nearest), tf32 and f16 chain every chunk into one tensor-core sum.
  enum class Operands { tf32x3, tf32, f16 };
  Operands operands = Operands::tf32x3;
  int N = 0, H = 0, W = 0;  // input size
  int Cin = 0, Cout = 0;
  bool transposed = false;
  /// 3, or 1: the 1x1 convolution (forward, pad 0: the resnet skip), mma.sync only; its filter
  /// [Cout, 1, 1, Cin] in the same packing (one tap).
  int k = 3;
  const void* x = nullptr;      // [N, H, W, Cin] fp32 (fp16 for Operands::f16)
  const void* w_hi = nullptr;   // the filter [Cout, k, k, Cin]: its TF32 heads (tf32x3_pack_weights), or fp16
  const float* w_lo = nullptr;  // tf32x3: its tails, same layout
  void* y = nullptr;            // forward [N, H, W, Cout]; transposed [N, 2H + 1, 2W + 1, Cout]; fp32 (fp16 for f16)
  int splits = 1;               // split-K: > 1 sums `splits` partial outputs (in order) into y
  float* partial = nullptr;     // splits > 1: tc_conv_workspace(*this) bytes, 16-byte aligned
  /// Which implementation runs: mma.sync (sm_80+), or wgmma (where tc_conv_wgmma_probe() said
  /// yes and Cout % 64 == 0; it then needs encode_tensor_map). The caller decides (the engine's
  /// convolution selection, engine/cuda/conv.cpp); the kernels never choose.
  enum class Impl { mma, wgmma } impl = Impl::mma;
  /// wgmma: the driver's tensor-map encoder, from tc_conv_tensor_map_encoder().
  PFN_cuTensorMapEncodeTiled_v12000 encode_tensor_map = nullptr;
  /// wgmma: load the activations of forward convolutions by TMA where every tile is a box
  /// (tc_wgmma_activation_box); false: cp.async per thread everywhere (the kernel runner's A/B).
  bool tma_activations = true;
  /// wgmma, forward convolutions with activation boxes in the chained modes: output pixels per
  /// block, 128 or 256 (two 64-row halves per warpgroup sharing the filter tiles; at most 128
  /// channels per block, no folded splits); 0: the default (256 where the grid stays large,
  /// use_256_pixels in kernels/tc_conv_sm90.cu). The kernel runner's variants; the same sums either way.
  int block_pixels = 0;
  /// wgmma: output channels per block, 64, 128 or 256 (256: tf32 and f16 only); 0: the default
  /// (128 where Cout % 128 == 0, else 64). The kernel runner's variants.
  int block_channels = 0;
  /// Set by tc_conv, not by callers: the launch computes a split-K factor's splits one after
  /// another in each block (same bits as the partials and their sum: each split summed from zero,
  /// added to y's fp32 value in split order) where the grid already fills the GPU without them.
  bool fold_splits = false;
  /// wgmma (every operand mode; 3xTF32 adds each split into y itself): how tc_conv may run split-K
  /// (for tests and the kernel runner):
  /// -1 chooses, 0 always as partials, 1 always folded.
  int fold = -1;
  /// The device's SMs, for the launch-time choices above (block width, folded splits); 0: none.
  int num_sms = 0;
};

/// Bytes per element of x, w and y for these operands (4, or 2 for fp16).
constexpr int tc_element_bytes(TcConvArgs::Operands o) { return o == TcConvArgs::Operands::f16 ? 2 : 4; }
/// Input channels per 128-byte chunk of k: 32 (fp32 data) or 64 (fp16).
constexpr int tc_chunk_channels(TcConvArgs::Operands o) { return 128 / tc_element_bytes(o); }

/// Host: w = hi + lo with hi = w rounded to TF32 (10 significand bits, to nearest, ties away from
/// zero; truncated where rounding would overflow) and lo = w - hi (exact). Finite w (checked at load).
inline void tf32x3_split_weights(const float* w, size_t n, float* hi, float* lo) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, &w[i], 4);
    const uint32_t r = (b + 0x1000u) & 0xffffe000u;
    // rounding up past the largest finite float: truncate instead (still an exact split)
    b = (r & 0x7f800000u) == 0x7f800000u ? (b & 0xffffe000u) : r;
    std::memcpy(&hi[i], &b, 4);
    lo[i] = w[i] - hi[i];
  }
}

/// Host: the split filter in the kernels' layout. w is the device filter of the convolution:
/// forward [Cout, 3, 3, Cin], transposed [Cin, 3, 3, Cout] (both as in kernels/conv2d_simt.h);
/// hi and lo (Cout * 9 * Cin floats each) come out [Cout, 3, 3, Cin] for both kinds.
inline void tf32x3_pack_weights(const float* w, int cin, int cout, bool transposed, float* hi, float* lo) {
  const size_t n = size_t(cin) * 9 * cout;
  if (!transposed) {
    tf32x3_split_weights(w, n, hi, lo);
    return;
  }
  for (int o = 0; o < cout; ++o)
    for (int t = 0; t < 9; ++t)
      for (int i = 0; i < cin; ++i) {
        const size_t dst = (size_t(o) * 9 + t) * cin + i;
        tf32x3_split_weights(&w[(size_t(i) * 9 + t) * cout + o], 1, &hi[dst], &lo[dst]);
      }
}

/// Host: the filter in the kernels' layout without splitting (tf32 uses tf32x3_pack_weights' hi,
/// fp16 this after conversion): w forward [Cout, 3, 3, Cin] or transposed [Cin, 3, 3, Cout] ->
/// out [Cout, 3, 3, Cin].
inline void tc_pack_weights(const float* w, int cin, int cout, bool transposed, float* out) {
  for (int o = 0; o < cout; ++o)
    for (int t = 0; t < 9; ++t)
      for (int i = 0; i < cin; ++i) {
        const size_t dst = (size_t(o) * 9 + t) * cin + i;
        out[dst] = transposed ? w[(size_t(i) * 9 + t) * cout + o] : w[dst];
      }
}

/// Whether the wgmma implementation runs on the current device: an sm_90 GPU, and this binary
/// carries sm_90a code. A probe launch every call (the engine asks once per backend, when it
/// probes the device: engine/cuda/device_caps.h); call outside stream capture.
bool tc_conv_wgmma_probe();
/// The driver's cuTensorMapEncodeTiled, looked up through the runtime (no link against libcuda).
/// Throws Error(device) when the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 tc_conv_tensor_map_encoder();
/// Output channels per block of implementation `impl` for a.Cout (wgmma: 128 or 64, 0 when it
/// cannot take the shape; mma.sync: 64 or 32).
int tc_conv_block_channels(const TcConvArgs& a, TcConvArgs::Impl impl);

/// The shape alone (no pointers): Cin a multiple of tc_chunk_channels (32, or 64 for fp16), Cout % 32 == 0, sizes in
/// range.
bool tc_conv_shape_ok(const TcConvArgs& a);
/// Shape and buffers (non-null, 16-byte aligned; partial for splits > 1).
bool tc_conv_supports(const TcConvArgs& a);
/// Split-K factor (1, 2, 4, ... 32) from a time estimate: the longest block's chunks / s against all
/// chunks over the resident block slots of `num_sms` SMs; > 1 only for a > 10 % gain (small layers,
/// small batches, the transposed conv's 4-tap phase).
int tc_conv_choose_splits(const TcConvArgs& a, int num_sms);
/// Dynamic shared memory of one mma.sync block for a.operands and a.Cout (Cout % 64 == 0: 108 KiB
/// in 3xTF32, 81 KiB in tf32 and fp16): the device must allow that much per block
/// (cudaDevAttrMaxSharedMemoryPerBlockOptin; sm_86/sm_89 allow 99 KiB: tf32 and fp16 only).
size_t tc_conv_smem_bytes(const TcConvArgs& a);
/// Bytes of `partial` for a.splits (0 when 1).
size_t tc_conv_workspace(const TcConvArgs& a);
/// y = conv(x, w_hi + w_lo) (see above); throws Error(internal) for an unsupported shape.
/// With splits > 1 each split sums its own range of k into `partial`, and a second launch adds
/// the partials in a fixed order: deterministic, and as accurate (fp32 adds).
void tc_conv(const TcConvArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
