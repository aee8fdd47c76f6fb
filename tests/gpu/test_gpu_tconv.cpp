// sg2 GPU tests: the transposed convolution as one GEMM per tile of cells (kernels/tc_tconv.h),
// both implementations (wgmma on Hopper; mma.sync, run here with the shared memory of this GPU,
// of an sm_86/sm_89 card and of its shallowest pipeline), and the launch-time choices of the
// tensor-core implicit GEMM (kernels/tc_conv.h), against the CPU reference on random inputs and
// odd shapes (non-square, partial tiles, 1 x 1 inputs, several channel tiles and chunks,
// persistent blocks walking many items), and their batch invariance (an image alone, at other
// positions and in smaller batches gives the same bits, whatever the pipeline's depth).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/ref/modulated_conv2d.h"
#include "kernels/tc_conv.h"
#include "kernels/tc_tconv.h"

using namespace sg2;
using namespace sg2::gputest;

namespace {

struct Case {
  int N, H, W, Cin, Cout;
  int num_sms;  // persistent blocks (fewer than the items: each block walks several)
};

using Ops = cuda::TcTconvArgs::Operands;
using Impl = cuda::TcTconvArgs::Impl;

/// One implementation as the engine may run it: wgmma, or mma.sync with `smem` bytes per block
/// (the pipeline's depth follows: Hopper's 227 KiB gives 4 stages, A100's 160 KiB 3 of 64-channel
/// phase tiles and 4 of 32, 99 KiB (sm_86, sm_89) 2 of 64 and 3 of 32, 60 KiB 2 of 32).
struct Variant {
  Impl impl;
  size_t smem;
  std::string label;
};

/// The variants this GPU runs: wgmma where it has it, mma.sync on sm_80+.
std::vector<Variant> variants() {
  std::vector<Variant> v;
  const cuda::DeviceCaps& caps = gpu_caps();
  if (caps.wgmma && caps.encode_tensor_map != nullptr) v.push_back({Impl::wgmma, 0, "wgmma"});
  if (caps.cc_major >= 8) {
    v.push_back({Impl::mma, caps.smem_per_block_optin, "mma.sync"});
    for (size_t kib : {160, 99, 60})
      if (kib * 1024 < caps.smem_per_block_optin)
        v.push_back({Impl::mma, kib * 1024, "mma.sync " + std::to_string(kib) + " KiB"});
  }
  return v;
}

/// The kernel's inputs for a case: x [N, H, W, Cin] and the filter, on the host and the device.
struct Inputs {
  Tensor x;                      // NCHW
  Tensor w;                      // [Cout, Cin, 3, 3]
  DeviceBuffer d_x, d_w, d_wlo;  // d_wlo: 3xTF32's filter tails
};

Inputs make_inputs(const Case& c, Ops ops, uint32_t seed) {
  Inputs in;
  const DType dt = ops == Ops::f16 ? DType::f16 : DType::f32;
  in.x = randn({c.N, c.Cin, c.H, c.W}, seed);
  in.w = randn({c.Cout, c.Cin, 3, 3}, seed + 1, 0.2f);
  if (ops == Ops::f16) {
    in.x = round_f16(in.x);
    in.w = round_f16(in.w);
  }
  // device filter [Cin, 3, 3, Cout], then the kernel's layout (TF32 heads for tf32; 3xTF32: heads
  // and tails of 32-channel phase tiles)
  std::vector<float> wd(size_t(in.w.numel())), packed(wd.size()), hi(wd.size()), lo(wd.size());
  for (int o = 0; o < c.Cout; ++o)
    for (int i = 0; i < c.Cin; ++i)
      for (int t = 0; t < 9; ++t) wd[(size_t(i) * 9 + t) * c.Cout + o] = in.w[(int64_t(o) * c.Cin + i) * 9 + t];
  cuda::tc_tconv_pack_weights(wd.data(), c.Cin, c.Cout, packed.data(), ops == Ops::tf32x3);
  if (ops != Ops::f16) {  // not in place: lo = w - hi must read w before hi overwrites it
    cuda::tf32x3_split_weights(packed.data(), packed.size(), hi.data(), lo.data());
    packed = hi;
  }
  if (ops == Ops::tf32x3) in.d_wlo = to_device(Tensor({int64_t(lo.size())}, lo));
  // x NHWC (non-square: transpose by hand)
  Tensor xn({c.N, c.H, c.W, c.Cin});
  for (int n = 0; n < c.N; ++n)
    for (int ch = 0; ch < c.Cin; ++ch)
      for (int p = 0; p < c.H * c.W; ++p)
        xn[(int64_t(n) * c.H * c.W + p) * c.Cin + ch] = in.x[(int64_t(n) * c.Cin + ch) * c.H * c.W + p];
  in.d_x = to_device(xn, dt);
  in.d_w = to_device(Tensor({int64_t(packed.size())}, packed), dt);
  return in;
}

/// Runs the kernel on images [first, first + n) of `in`; returns y [n, 2H + 1, 2W + 1, Cout] as
/// raw bytes (poisoned before: every element must be written).
std::vector<char> run(const Case& c, Ops ops, const Variant& v, const Inputs& in, int first, int n) {
  const size_t esz = ops == Ops::f16 ? 2 : 4;
  const int OH = 2 * c.H + 1, OW = 2 * c.W + 1;
  const size_t y_per = size_t(OH) * OW * c.Cout, x_per = size_t(c.H) * c.W * c.Cin;
  auto d_y = poisoned(size_t(n) * y_per, ops == Ops::f16 ? DType::f16 : DType::f32);
  cuda::TcTconvArgs a;
  a.operands = ops;
  a.N = n;
  a.H = c.H;
  a.W = c.W;
  a.Cin = c.Cin;
  a.Cout = c.Cout;
  a.x = static_cast<const char*>(in.d_x.get()) + size_t(first) * x_per * esz;
  a.w = in.d_w.get();
  a.w_lo = ops == Ops::tf32x3 ? in.d_wlo.as<float>() : nullptr;
  a.y = d_y.get();
  a.num_sms = c.num_sms;
  a.impl = v.impl;
  a.encode_tensor_map = gpu_caps().encode_tensor_map;
  a.smem_per_block = v.smem;
  EXPECT_TRUE(cuda::tc_tconv_supports(a)) << v.label;
  cuda::tc_tconv(a, nullptr);
  SG2_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<char> out(size_t(n) * y_per * esz);
  SG2_CUDA_CHECK(cudaMemcpy(out.data(), d_y.get(), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

Tensor to_float_nchw(const std::vector<char>& raw, Ops ops, int N, int OH, int OW, int C) {
  Tensor t({N, C, OH, OW});
  for (int n = 0; n < N; ++n)
    for (int p = 0; p < OH * OW; ++p)
      for (int c = 0; c < C; ++c) {
        const size_t i = (size_t(n) * OH * OW + p) * C + c;
        float v;
        if (ops == Ops::f16) {
          __half h;
          std::memcpy(&h, raw.data() + 2 * i, 2);
          v = __half2float(h);
        } else {
          std::memcpy(&v, raw.data() + 4 * i, 4);
        }
        t[(int64_t(n) * C + c) * OH * OW + p] = v;
      }
  return t;
}

/// Whether variant v runs case c (mma.sync with 60 KiB: 32-channel phase tiles only; 3xTF32:
/// wgmma only).
bool runs(const Variant& v, const Case& c, Ops ops) {
  cuda::TcTconvArgs a;
  a.operands = ops;
  a.Cout = c.Cout;
  if (ops == Ops::tf32x3) return v.impl == Impl::wgmma;
  return v.impl == Impl::wgmma || v.smem >= cuda::tc_tconv_mma_smem(a);
}
constexpr const char* kNoTconv = "this GPU is older than sm_80: the transposed-conv kernels do not run";
const char* name(Ops ops) { return ops == Ops::f16 ? "fp16" : ops == Ops::tf32 ? "tf32" : "3xtf32"; }

/// A tensor-map encoder for the selection table's pretend Hopper (never called).
CUresult no_encoder(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                    const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

TEST(GpuKernels, TransposedTensorCoreConvMatchesReference) {
  SG2_REQUIRE_GPU();
  if (variants().empty()) GTEST_SKIP() << kNoTconv;
  // the model's shapes (square, 4..64 px inputs), and odd ones: 1 x 1, non-square, partial tiles,
  // several chunks and channel tiles, Cout % 64 != 0 (32-channel phase tiles), few persistent blocks
  const Case cases[] = {{2, 4, 4, 64, 64, 132},    {1, 8, 8, 128, 64, 132},  {3, 16, 16, 64, 32, 132},
                        {1, 1, 1, 64, 96, 132},    {2, 5, 9, 128, 160, 132}, {1, 13, 3, 64, 32, 7},
                        {2, 32, 32, 192, 64, 132}, {1, 33, 17, 64, 128, 3},  {3, 64, 64, 64, 32, 132},
                        {1, 7, 7, 512, 256, 132},  {2, 24, 40, 128, 96, 1},  {1, 2, 130, 64, 32, 132},
                        {2, 1, 94, 64, 64, 132}};  // 1 x 95 cells: the largest halo, 2 x 96 = 192 rows
  uint32_t seed = 3100;
  int checked = 0;
  for (const Case& c : cases)
    for (Ops ops : {Ops::f16, Ops::tf32, Ops::tf32x3}) {
      const Inputs in = make_inputs(c, ops, seed += 2);
      const Tensor ref = ref::conv_transpose2d_stride2(in.x, in.w, false);
      const int OH = 2 * c.H + 1, OW = 2 * c.W + 1;
      for (const Variant& v : variants()) {
        if (!runs(v, c, ops)) continue;
        const Tensor got = to_float_nchw(run(c, ops, v, in, 0, c.N), ops, c.N, OH, OW, c.Cout);
        // fp16: the output's rounding (and fp16 operands, exact products); tf32: 10-bit operands;
        // 3xTF32: fp32 sums (the reference's own rounding)
        EXPECT_TRUE(near_rel(got, ref, ops == Ops::tf32x3 ? 2e-5 : 4e-3,
                             v.label + " " + name(ops) + " N=" + std::to_string(c.N) + " H=" + std::to_string(c.H) +
                                 " W=" + std::to_string(c.W) + " " + std::to_string(c.Cin) + "->" +
                                 std::to_string(c.Cout) + " blocks " + std::to_string(c.num_sms)));
        ++checked;
      }
    }
  std::cout << "  transposed conv vs the CPU reference: " << checked << " runs\n";
}

// 3xTF32 (fp32 and auto's fp32 blocks on Hopper) is as accurate as fp32 FMA sums and far more
// accurate than TF32: errors against a double-precision sum on the shapes where it matters (512
// input channels: up to 2,048 products per output).
TEST(GpuKernels, TransposedTensorCoreConv3xTf32IsAsAccurateAsFma) {
  SG2_REQUIRE_GPU();
  if (!gpu_caps().wgmma || gpu_caps().encode_tensor_map == nullptr) GTEST_SKIP() << "3xTF32 runs on wgmma only";
  const Variant wg{Impl::wgmma, 0, "wgmma"};
  const Case cases[] = {{1, 8, 8, 512, 64, 132}, {2, 4, 4, 512, 32, 132}, {1, 16, 12, 256, 96, 132}};
  uint32_t seed = 5200;
  for (const Case& c : cases) {
    const int OH = 2 * c.H + 1, OW = 2 * c.W + 1;
    const Inputs x3 = make_inputs(c, Ops::tf32x3, seed), tf = make_inputs(c, Ops::tf32, seed);
    seed += 2;
    // the double-precision sum, NCHW
    std::vector<double> want(size_t(c.N) * c.Cout * OH * OW, 0.0);
    for (int n = 0; n < c.N; ++n)
      for (int i = 0; i < c.Cin; ++i)
        for (int a = 0; a < c.H; ++a)
          for (int b = 0; b < c.W; ++b) {
            const double xv = x3.x[((int64_t(n) * c.Cin + i) * c.H + a) * c.W + b];
            for (int o = 0; o < c.Cout; ++o)
              for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx)
                  want[((size_t(n) * c.Cout + o) * OH + 2 * a + ky) * OW + 2 * b + kx] +=
                      xv * double(x3.w[((int64_t(o) * c.Cin + i) * 3 + ky) * 3 + kx]);
          }
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    auto err = [&](const Tensor& t) {
      double e = 0;
      for (size_t k = 0; k < want.size(); ++k) e = std::max(e, std::fabs(double(t[int64_t(k)]) - want[k]));
      return e / scale;
    };
    const double e_fma = err(ref::conv_transpose2d_stride2(x3.x, x3.w, false));  // fp32 sums on the CPU
    const double e_x3 = err(to_float_nchw(run(c, Ops::tf32x3, wg, x3, 0, c.N), Ops::tf32x3, c.N, OH, OW, c.Cout));
    const double e_tf = err(to_float_nchw(run(c, Ops::tf32, wg, tf, 0, c.N), Ops::tf32, c.N, OH, OW, c.Cout));
    std::cout << "  transposed " << c.Cin << "->" << c.Cout << " " << c.H << "x" << c.W
              << ": max|err|/scale fp32 (cpu) " << e_fma << ", 3xtf32 " << e_x3 << ", tf32 " << e_tf << "\n";
    EXPECT_LE(e_x3, std::max(3.0 * e_fma, 1e-6)) << "3xTF32 should be as accurate as fp32 sums";
    EXPECT_LT(e_x3 * 30.0, e_tf) << "3xTF32 should be far more accurate than TF32";
  }
}

// Batch invariance by construction: an image's output has the same bits alone, at any position
// of a larger batch, in a batch of two, and whatever the number of persistent blocks; mma.sync's
// too whatever the depth of its pipeline (the shared memory it was given).
TEST(GpuKernels, TransposedTensorCoreConvIsBatchInvariant) {
  SG2_REQUIRE_GPU();
  if (variants().empty()) GTEST_SKIP() << kNoTconv;
  const Case cases[] = {{6, 16, 16, 128, 64, 132}, {5, 8, 8, 512, 256, 132}, {5, 32, 32, 64, 32, 132}};
  int checked = 0;
  for (const Case& c : cases)
    for (Ops ops : {Ops::f16, Ops::tf32, Ops::tf32x3}) {
      const Inputs in = make_inputs(c, ops, 4100 + checked);
      std::vector<char> mma_all;  // the first mma.sync variant's batch
      for (const Variant& v : variants()) {
        if (!runs(v, c, ops)) continue;
        const std::string what =
            v.label + " " + name(ops) + " " + std::to_string(c.Cin) + "->" + std::to_string(c.Cout);
        const size_t per = run(c, ops, v, in, 0, 1).size();
        const std::vector<char> all = run(c, ops, v, in, 0, c.N);
        for (int i : {0, 3, c.N - 1}) {
          EXPECT_EQ(std::memcmp(run(c, ops, v, in, i, 1).data(), all.data() + size_t(i) * per, per), 0)
              << "image " << i << " of " << c.N << " " << what;
        }
        const std::vector<char> tail = run(c, ops, v, in, c.N - 2, 2);
        EXPECT_EQ(std::memcmp(tail.data(), all.data() + size_t(c.N - 2) * per, tail.size()), 0) << what;
        Case few = c;
        few.num_sms = 5;
        EXPECT_EQ(run(few, ops, v, in, 0, c.N), all) << "5 persistent blocks " << what;
        if (v.impl == Impl::mma) {
          if (mma_all.empty())
            mma_all = all;
          else
            EXPECT_EQ(all, mma_all) << what << ": another pipeline depth changed the bits";
        }
        ++checked;
      }
    }
  std::cout << "  transposed-conv batch invariance: " << checked << " configurations checked\n";
  EXPECT_GE(checked, 6);
}

// The selection table (host only, runs without a GPU): transposed convs run on the one-GEMM-per-tile
// kernel on Hopper (wgmma, every precision), and in fp16 and tf32 on A100 and the sm_86/sm_89 cards
// (mma.sync, with its shared memory, from 7 x 7 inputs on), not on older GPUs; the rest on tc_conv
// where its shared memory fits, else the SIMT (fp32) or the direct kernel.
TEST(GpuKernels, ConvSelectionPerDevice) {
  struct Dev {
    int major, minor;
    size_t smem;
    bool wgmma, encoder;
  };
  // Hopper, Hopper without the driver's tensor-map encoder, A100, the sm_86 / sm_89 cards, a
  // pretend sm_8x with 64 KiB per block, Turing
  const Dev devs[] = {{9, 0, 227 * 1024, true, true},   {9, 0, 227 * 1024, true, false},
                      {8, 0, 163 * 1024, false, false}, {8, 6, 99 * 1024, false, false},
                      {8, 9, 99 * 1024, false, false},  {8, 7, 64 * 1024, false, false},
                      {7, 5, 64 * 1024, false, false}};
  int checked = 0;
  for (const Dev& d : devs) {
    cuda::DeviceCaps caps;
    caps.cc_major = d.major;
    caps.cc_minor = d.minor;
    caps.sm_count = 80;
    caps.smem_per_block_optin = d.smem;
    caps.wgmma = d.wgmma;
    if (d.encoder) caps.encode_tensor_map = &no_encoder;
    for (int cout : {512, 64, 32})
      for (cuda::ConvMath m : {cuda::ConvMath::fp16, cuda::ConvMath::tf32, cuda::ConvMath::fp32_strict}) {
        const bool fp32 = m == cuda::ConvMath::fp32_strict;
        const std::string where = "sm_" + std::to_string(10 * d.major + d.minor) + " " + std::to_string(d.smem >> 10) +
                                  " KiB" + (d.wgmma && !d.encoder ? " (no encoder)" : "") + " 64->" +
                                  std::to_string(cout) +
                                  (m == cuda::ConvMath::fp16 ? " fp16"
                                   : fp32                    ? " tf32x3"
                                                             : " tf32");
        // tc_conv's mma.sync blocks: 108 KiB in 3xTF32, 81 KiB in tf32 and fp16
        const bool runs_tc = d.major >= 8 && d.smem >= (fp32 ? 110592u : 82944u);
        const cuda::ConvImpl untiled = runs_tc ? cuda::ConvImpl::tensor_core
                                       : fp32  ? cuda::ConvImpl::simt
                                               : cuda::ConvImpl::direct;
        cuda::ConvShape s;
        s.N = 1;
        s.Cin = 64;
        s.Cout = cout;
        s.dtype = m == cuda::ConvMath::fp16 ? DType::f16 : DType::f32;
        // the transposed conv: one GEMM per tile on wgmma (Hopper with its encoder), else on mma.sync
        // (sm_80+, 96 KiB for 64-channel phase tiles or 60 KiB for 32) where a tile has 64 cells
        s.transposed = true;
        for (int h : {64, 16, 8, 7, 6, 4}) {
          s.H = s.W = h;
          const bool by_wgmma = d.wgmma && d.encoder;
          const bool by_mma = d.major >= 8 && d.smem >= (cout % 64 == 0 ? 96u : 60u) * 1024 && h >= 7;
          // 3xTF32: wgmma only, from 8 x 8 inputs up
          const bool tiled = fp32 ? by_wgmma && h >= 8 : by_wgmma || by_mma;
          const cuda::ConvChoice c = cuda::choose_conv(s, m, caps, true);
          EXPECT_EQ(c.impl, tiled ? cuda::ConvImpl::tc_transposed : untiled)
              << where << " transposed " << h << " x " << h;
          if (tiled) EXPECT_EQ(c.wgmma, by_wgmma) << where << " transposed " << h << " x " << h;
          ++checked;
        }
        // the forward 3 x 3 conv
        s.transposed = false;
        s.H = s.W = 64;
        EXPECT_EQ(cuda::choose_conv(s, m, caps, true).impl, untiled) << where << " forward";
        // the resnet skip's 1x1 (pad 0): tc_conv's mma.sync kernel with one tap, else the direct kernel
        s.k = 1;
        s.pad = 0;
        const cuda::ConvChoice one = cuda::choose_conv(s, m, caps, true);
        EXPECT_EQ(one.impl, runs_tc ? cuda::ConvImpl::tensor_core : cuda::ConvImpl::direct) << where << " 1x1";
        EXPECT_FALSE(one.wgmma) << where << " 1x1";
      }
  }
  EXPECT_EQ(checked, 7 * 3 * 3 * 6);
}

// The tile rule (host only, runs without a GPU): at most 128 cells, the halo within 192 rows, and
// every cell covered.
TEST(GpuKernels, TransposedTensorCoreConvTiles) {
  for (int h : {1, 2, 4, 7, 8, 16, 32, 33, 64, 128, 256, 512})
    for (int w : {1, 4, 8, 17, 32, 512}) {
      int r = 0, c = 0;
      cuda::tc_tconv_tile(h, w, &r, &c);
      EXPECT_GE(r, 1);
      EXPECT_GE(c, 1);
      EXPECT_LE(r * c, 128) << h << "x" << w;
      EXPECT_LE((r + 1) * (c + 1), 192) << h << "x" << w;
      EXPECT_LE(c, w + 1) << h << "x" << w;
    }
  int r = 0, c = 0;
  cuda::tc_tconv_tile(32, 32, &r, &c);  // 33 x 33 cells: 3 x 3 tiles of 11 x 11
  EXPECT_EQ(r * c, 121);
}

// tc_conv's launch-time choices never change an output's bits (what lets it choose them from the
// batch): 64-, 128- or 256-channel blocks, and split-K as partials plus a sum or folded into each
// block, for the tf32, fp16 and 3xTF32 modes of the wgmma kernel, forward and transposed (3xTF32 folds
// by adding each split into y itself; three splits leave a transposed phase with an empty one).
TEST(GpuKernels, TensorCoreConvLaunchChoicesKeepTheBits) {
  SG2_REQUIRE_GPU();
  if (!gpu_caps().wgmma) GTEST_SKIP() << kNoTconv;
  struct Shape {
    int N, H, Cin, Cout;
    bool transposed;
  };
  const Shape shapes[] = {{3, 16, 128, 256, false}, {3, 8, 128, 128, true}, {2, 8, 512, 512, false}};
  using TOps = cuda::TcConvArgs::Operands;
  int checked = 0;
  for (const Shape& sh : shapes)
    for (TOps ops : {TOps::f16, TOps::tf32, TOps::tf32x3})
      for (int splits : {1, 3, 4}) {
        if (splits == 3 && ops != TOps::tf32x3) continue;
        const DType dt = ops == TOps::f16 ? DType::f16 : DType::f32;
        const size_t esz = cuda::dtype_size(dt);
        const int OH = sh.transposed ? 2 * sh.H + 1 : sh.H;
        const size_t y_count = size_t(sh.N) * OH * OH * sh.Cout;
        const Tensor x = randn({int64_t(sh.N) * sh.H * sh.H * sh.Cin}, 5000 + checked);
        Tensor w = randn({int64_t(9) * sh.Cin * sh.Cout}, 5100 + checked, 0.05f);
        std::vector<float> hi(size_t(w.numel())), lo(hi.size());
        cuda::tf32x3_split_weights(w.data(), hi.size(), hi.data(), lo.data());
        const DeviceBuffer d_x = to_device(x, dt), d_w = to_device(ops == TOps::f16 ? w : Tensor({w.numel()}, hi), dt);
        const DeviceBuffer d_lo = to_device(Tensor({w.numel()}, lo), DType::f32);
        auto run_with = [&](int block_channels, int fold, int num_sms) {
          cuda::TcConvArgs a =
              wgmma_conv_args(ops, sh.N, sh.H, sh.Cin, sh.Cout, sh.transposed, d_x.get(), d_w.get(), d_lo.as<float>());
          a.splits = splits;
          a.block_channels = block_channels;
          a.fold = fold;
          a.num_sms = num_sms;
          return run_tc_conv(a, y_count, dt);
        };
        const std::vector<char> base = run_with(0, 0, 0);
        const std::string what = std::string(ops == TOps::f16    ? "fp16"
                                             : ops == TOps::tf32 ? "tf32"
                                                                 : "3xtf32") +
                                 (sh.transposed ? " transposed " : " ") + std::to_string(sh.Cin) + "->" +
                                 std::to_string(sh.Cout) + " split-k " + std::to_string(splits);
        if (splits > 1) EXPECT_EQ(run_with(0, 1, 0), base) << what << ": folded splits";
        EXPECT_EQ(run_with(64, 0, 0), base) << what << ": 64-channel blocks";
        if (sh.Cout % 256 == 0 && ops != TOps::tf32x3)
          EXPECT_EQ(run_with(256, 0, 0), base) << what << ": 256-channel blocks";
        EXPECT_EQ(run_with(0, -1, gpu_caps().sm_count), base) << what << ": tc_conv's own choice";
        ++checked;
      }
  std::cout << "  tensor-core conv launch choices: " << checked << " configurations checked\n";
  EXPECT_EQ(checked, 21);
}
