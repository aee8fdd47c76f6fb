// sg2 CUDA kernels: fp32-accurate convolution on TF32 tensor cores ("3xTF32" with round-to-nearest
// accumulation), for the fp32 precision and auto's fp32 blocks. Same layouts, shapes and
// semantics as the strict SIMT kernel (kernels/conv2d_simt.h; CPU reference
// kernels/ref/modulated_conv2d.h conv2d and conv_transpose2d_stride2 with shared weights):
//   forward:    3x3, pad 1, stride 1, correlation
//   transposed: 3x3, stride 2, no padding; four phase GEMMs
// The filter comes split and packed by tf32x3_pack_weights: hi and lo, both [Cout, 3, 3, Cin]
// (input channels contiguous: the GEMM's k) for either kind.
//
// Two implementations behind one entry point (conv2d_tf32x3):
//  * mma.sync m16n8k8 (sm_80+; this file's kernel, kernels/conv2d_tf32x3.cu);
//  * wgmma m64nNk8 on Hopper (kernels/conv2d_tf32x3_sm90.cu, compiled for sm_90a only): the
//    filter (and, for most forward convs, the activations) arrive by TMA; the tensor cores read the
//    filter straight from shared memory, the activations go in as registers; same splits, same
//    32-deep chains, same summation order per output.
//
// Why it is as accurate as fp32 FMAs (docs/performance-notes.md, "fp32 on tensor cores"):
//  * each operand is split into a TF32 head and tail, v = hi(v) + lo(v) (the filter: hi rounded to
//    nearest at load; the activations: hi truncated, in the kernel), lo = v - hi exact, itself cut
//    to TF32 by the tensor core; a product is hi(x)hi(w) + lo(x)hi(w) + hi(x)lo(w), accurate to
//    about 2^-20 relative (the dropped lo(x)lo(w) is below 2^-20 too), errors that average out in
//    the sum far below float32 accumulation's own;
//  * a tensor core adds with truncation (round toward zero), so summing a long k into one
//    tensor-core accumulator drifts by about k/8 ulps (measured: cuDNN's TF32 kernels fed split
//    operands err 4.6e-5 relative on a 512-channel layer, FMA fp32 3.8e-7). Here every 32-deep chunk of k
//    starts from zero in the tensor core (twelve chained MMAs) and is then added to an fp32
//    register accumulator with an ordinary round-to-nearest add, as an FMA convolution would.
// Measured against the CPU reference it matches the SIMT/cuDNN FMA paths' error
// (tests/gpu/test_gpu_kernels.cpp Tf32x3ConvIsAsAccurateAsFma). Deterministic: the summation
// order depends only on the shape and the split-K factor, never on a sample's position in the
// batch; with the same split-K factor, an output does not depend on the batch size either.
// Needs sm_80+, Cin % 32 == 0, Cout % 32 == 0 and 16-byte aligned buffers (supports() says).
#pragma once

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled (a type only: sg2 does not link libcuda)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>

namespace sg2::cuda {

struct Tf32x3ConvArgs {
  /// What the tensor cores multiply (per multiply-add of the convolution):
  ///   tf32x3: fp32 x, w, y; three TF32 products, hi(x)hi(w) + lo(x)hi(w) + hi(x)lo(w): fp32-accurate
  ///   tf32:   fp32 x, w, y; one TF32 product, hi(x)hi(w) (x truncated, w rounded to TF32; w_lo unused)
  ///   f16:    fp16 x, w (w_hi), y; one fp16 product (exact), fp32 sums; chunks of 64 channels
  /// Every mode sums 128-byte chunks of k (32 fp32 or 64 fp16 channels of one tap) in the tensor
  /// core from zero and adds each chunk to an fp32 accumulator (round to nearest), in a fixed order.
  enum class Operands { tf32x3, tf32, f16 };
  Operands operands = Operands::tf32x3;
  int N = 0, H = 0, W = 0;  // input size
  int Cin = 0, Cout = 0;
  bool transposed = false;
  const void* x = nullptr;      // [N, H, W, Cin] fp32 (fp16 for Operands::f16)
  const void* w_hi = nullptr;   // the filter [Cout, 3, 3, Cin]: its TF32 heads (tf32x3_pack_weights), or fp16
  const float* w_lo = nullptr;  // tf32x3: its tails, same layout
  void* y = nullptr;            // forward [N, H, W, Cout]; transposed [N, 2H + 1, 2W + 1, Cout]; fp32 (fp16 for f16)
  int splits = 1;               // split-K: > 1 sums `splits` partial outputs (in order) into y
  float* partial = nullptr;     // splits > 1: conv2d_tf32x3_workspace(*this) bytes, 16-byte aligned
  /// Which implementation runs: mma.sync (sm_80+), or wgmma (where conv2d_tf32x3_wgmma_probe() said
  /// yes and Cout % 64 == 0; it then needs encode_tensor_map). The caller decides (the engine's
  /// convolution selection, engine/cuda/conv.cpp); the kernels never choose.
  enum class Impl { mma, wgmma } impl = Impl::mma;
  /// wgmma: the driver's tensor-map encoder, from conv2d_tf32x3_tensor_map_encoder().
  PFN_cuTensorMapEncodeTiled_v12000 encode_tensor_map = nullptr;
  /// wgmma: load the activations of forward convolutions by TMA where every tile is a box
  /// (tf32x3_wgmma_activation_box); false: cp.async per thread everywhere (A/B measurements).
  bool tma_activations = true;
};

/// Bytes per element of x, w and y for these operands (4, or 2 for fp16).
constexpr int tc_element_bytes(Tf32x3ConvArgs::Operands o) { return o == Tf32x3ConvArgs::Operands::f16 ? 2 : 4; }
/// Input channels per 128-byte chunk of k: 32 (fp32 data) or 64 (fp16).
constexpr int tc_chunk_channels(Tf32x3ConvArgs::Operands o) { return 128 / tc_element_bytes(o); }

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
bool conv2d_tf32x3_wgmma_probe();
/// The driver's cuTensorMapEncodeTiled, looked up through the runtime (no link against libcuda).
/// Throws Error(device) when the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 conv2d_tf32x3_tensor_map_encoder();
/// Output channels per block of implementation `impl` for a.Cout (wgmma: 128 or 64, 0 when it
/// cannot take the shape; mma.sync: 64 or 32).
int conv2d_tf32x3_block_channels(const Tf32x3ConvArgs& a, Tf32x3ConvArgs::Impl impl);

/// The shape alone (no pointers): Cin a multiple of tc_chunk_channels (32, or 64 for fp16), Cout % 32 == 0, sizes in
/// range.
bool conv2d_tf32x3_shape_ok(const Tf32x3ConvArgs& a);
/// Shape and buffers (non-null, 16-byte aligned; partial for splits > 1).
bool conv2d_tf32x3_supports(const Tf32x3ConvArgs& a);
/// Split-K factor (1, 2, 4, ... 32) from a time estimate: the longest block's chunks / s against all
/// chunks over the resident block slots of `num_sms` SMs; > 1 only for a > 10 % gain (small layers,
/// small batches, the transposed conv's 4-tap phase).
int conv2d_tf32x3_choose_splits(const Tf32x3ConvArgs& a, int num_sms);
/// Dynamic shared memory of one mma.sync block (108 KiB for Cout % 64 == 0): the device must allow
/// that much per block (cudaDevAttrMaxSharedMemoryPerBlockOptin; not sm_86/sm_89, whose limit is 99 KiB).
size_t conv2d_tf32x3_smem_bytes(const Tf32x3ConvArgs& a);
/// Bytes of `partial` for a.splits (0 when 1).
size_t conv2d_tf32x3_workspace(const Tf32x3ConvArgs& a);
/// y = conv(x, w_hi + w_lo) (see above); throws Error(internal) for an unsupported shape.
/// With splits > 1 each split sums its own range of k into `partial`, and a second launch adds
/// the partials in a fixed order: deterministic, and as accurate (fp32 adds).
void conv2d_tf32x3(const Tf32x3ConvArgs& a, cudaStream_t stream);

}  // namespace sg2::cuda
