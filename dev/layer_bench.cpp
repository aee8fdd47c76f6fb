// sg2 kernel runner: one layer's candidates (layer_bench.h).
#include "dev/layer_bench.h"
#ifdef SG2_WITH_CUTLASS
#include "dev/cutlass/cutlass_conv.h"
#endif

#include "dev/device_ops.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>

#include "engine/cuda/recipe.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_simt.h"
#include "kernels/cuda_check.h"
#include "kernels/ref/modulated_conv2d.h"
#include "kernels/tc_conv.h"
#include "kernels/tc_conv_sm90.h"
#include "kernels/tc_tconv.h"

namespace sg2::dev {

namespace {

using cuda::ConvChoice;
using cuda::ConvImpl;
using cuda::ConvMath;
using cuda::ConvShape;

constexpr double kBandwidth = 4.3e12;  // measured device-to-device copy on an H200 (docs/performance.md)
double peak_flops(ConvMath m) {        // measured / practical tensor-core ceilings (tools/cost_model.py)
  switch (m) {
    case ConvMath::fp16:
      return 790e12;
    case ConvMath::tf32:
      return 395e12;
    case ConvMath::fp32_strict:
      return 395e12 / 3;  // three TF32 products per multiply-add
  }
  return 1;
}

const char* math_name(ConvMath m) {
  return m == ConvMath::fp16 ? "fp16" : m == ConvMath::tf32 ? "tf32" : "fp32 (3xtf32)";
}

/// Host filter in PyTorch order [Cout, Cin, k, k], N(0, 1 / fan_in).
std::vector<float> random_filter(int cout, int cin, int k, uint64_t seed) {
  std::vector<float> w(size_t(cout) * cin * k * k);
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f / std::sqrt(float(cin * k * k)));
  for (float& v : w) v = d(gen);
  return w;
}

struct Poisoned {
  DeviceBuffer buf;
  size_t count = 0;
  DType dt = DType::f32;
  void poison() const { SG2_CUDA_CHECK(cudaMemset(buf.get(), 0xff, buf.bytes())); }  // NaN in fp32 and fp16
};

}  // namespace

LayerResult bench_conv_layer(const BlockPlan& b, const LayerPlan& l, Precision precision, const cuda::DeviceCaps& caps,
                             cudnnHandle_t cudnn, const LayerOptions& o, cudaStream_t s) {
  const DType dt = cuda::block_dtype(b, precision);
  const ConvMath math = cuda::conv_math(dt, precision);
  const bool skip = l.kind == LayerPlan::Kind::skip;
  ConvShape sh;
  sh.N = o.batch;
  sh.H = sh.W = (l.up == 2 || skip) ? l.resolution / 2 : l.resolution;
  sh.Cin = l.in_channels;
  sh.Cout = l.out_channels;
  sh.k = skip ? 1 : 3;
  sh.transposed = l.up == 2 && !skip;
  sh.pad = sh.transposed || skip ? 0 : 1;
  sh.dtype = dt;
  const int K = sh.k * sh.k, OH = sh.out_h(), OW = sh.out_w();
  const size_t esz = cuda::dtype_size(dt);
  const size_t x_count = size_t(sh.N) * sh.H * sh.W * sh.Cin, y_count = size_t(sh.N) * OH * OW * sh.Cout;

  LayerResult r;
  r.layer = l.name.substr(l.name.find('.') + 1);
  r.what = std::string(sh.transposed ? "transposed " : "forward ") + std::to_string(sh.H) + "x" + std::to_string(sh.W) +
           " " + std::to_string(sh.Cin) + "->" + std::to_string(sh.Cout) + (skip ? " 1x1" : "") + ", " +
           math_name(math) + ", batch " + std::to_string(sh.N);
  const double macs = double(sh.N) * sh.H * sh.W * K * sh.Cin * sh.Cout;
  const double bytes = double(x_count + y_count) * double(esz) + double(sh.Cin) * K * sh.Cout * double(esz);
  r.floor_ms = 1e3 * std::max(2.0 * macs / peak_flops(math), bytes / kBandwidth);

  // inputs: random activations, the filter in every layout the kernels take
  DeviceBuffer x(x_count * esz, nullptr);
  fill_random(x.get(), x_count, dt, 1.0f, o.seed, s);
  const std::vector<float> w = random_filter(sh.Cout, sh.Cin, sh.k, o.seed + 1);
  std::vector<float> wd(w.size());  // device layout: forward [Cout, k, k, Cin], transposed [Cin, k, k, Cout]
  for (int oc = 0; oc < sh.Cout; ++oc)
    for (int i = 0; i < sh.Cin; ++i)
      for (int t = 0; t < K; ++t) {
        const float v = w[(size_t(oc) * sh.Cin + i) * K + t];
        wd[sh.transposed ? (size_t(i) * K + t) * sh.Cout + oc : (size_t(oc) * K + t) * sh.Cin + i] = v;
      }
  const DeviceBuffer d_w = upload(wd, dt);
  std::vector<float> hi(wd.size()), lo(wd.size()), tconv(wd.size());
  DeviceBuffer d_hi, d_lo, d_tconv, d_tconv_lo;
  if (K == 1 && !sh.transposed) {  // the resnet skip's 1x1: the device filter [Cout, 1, 1, Cin] is the packing
    if (math == ConvMath::fp16)
      hi = wd;
    else
      cuda::tf32x3_split_weights(wd.data(), wd.size(), hi.data(), lo.data());
    d_hi = upload(hi, dt);
    d_lo = upload(lo, DType::f32);
  } else if (K == 9) {
    if (math == ConvMath::fp16) {
      cuda::tc_pack_weights(wd.data(), sh.Cin, sh.Cout, sh.transposed, hi.data());
    } else {
      cuda::tf32x3_pack_weights(wd.data(), sh.Cin, sh.Cout, sh.transposed, hi.data(), lo.data());
    }
    d_hi = upload(hi, dt);
    d_lo = upload(lo, DType::f32);
    if (sh.transposed) {
      const bool x3 = math == ConvMath::fp32_strict;  // 32-channel phase tiles, heads and tails
      cuda::tc_tconv_pack_weights(wd.data(), sh.Cin, sh.Cout, tconv.data(), x3);
      if (math != ConvMath::fp16) {  // not in place: lo = w - hi must read w before hi overwrites it
        std::vector<float> tconv_hi(tconv.size());
        cuda::tf32x3_split_weights(tconv.data(), tconv.size(), tconv_hi.data(), lo.data());
        tconv = std::move(tconv_hi);
      }
      d_tconv = upload(tconv, dt);
      if (x3) d_tconv_lo = upload(lo, DType::f32);
    }
  }
  Poisoned ref{DeviceBuffer(y_count * esz, nullptr), y_count, dt},
      out{DeviceBuffer(y_count * esz, nullptr), y_count, dt};
  void* y = ref.buf.get();  // where the candidates write: the reference first, then `out`

  // the engine's choices (batch-invariant, and invariance off), through its Conv
  constexpr size_t kWorkspaceLimit = size_t(1) << 30;
  std::vector<std::unique_ptr<cuda::Conv>> convs;
  size_t ws_need = 0;
  auto make_conv = [&](const ConvChoice& c) {
    convs.push_back(std::make_unique<cuda::Conv>(cudnn, sh, math, c, caps, kWorkspaceLimit));
    cuda::Conv& conv = *convs.back();
    if (d_hi) conv.set_packed_weights(d_hi.get(), math == ConvMath::fp32_strict ? d_lo.as<float>() : nullptr);
    if (d_tconv) conv.set_tconv_weights(d_tconv.get(), d_tconv_lo ? d_tconv_lo.as<float>() : nullptr);
    ws_need = std::max(ws_need, conv.max_candidate_workspace());
    return &conv;
  };
  const ConvChoice inv = cuda::choose_conv(sh, math, caps, true), off = cuda::choose_conv(sh, math, caps, false);
  cuda::Conv* chosen = make_conv(inv);
  cuda::Conv* off_conv = make_conv(off);
  ConvChoice all_cudnn;
  all_cudnn.impl = ConvImpl::cudnn;
  cuda::Conv* cudnn_conv = make_conv(all_cudnn);
  // tensor-core variants: splits chosen for one image, for this batch, none
  cuda::TcConvArgs tc_probe;
  tc_probe.operands = math == ConvMath::fp16   ? cuda::TcConvArgs::Operands::f16
                      : math == ConvMath::tf32 ? cuda::TcConvArgs::Operands::tf32
                                               : cuda::TcConvArgs::Operands::tf32x3;
  tc_probe.N = sh.N;
  tc_probe.H = sh.H;
  tc_probe.W = sh.W;
  tc_probe.Cin = sh.Cin;
  tc_probe.Cout = sh.Cout;
  tc_probe.transposed = sh.transposed;
  tc_probe.k = sh.k;
  tc_probe.encode_tensor_map = caps.encode_tensor_map;
  struct TcVariant {
    cuda::TcConvArgs a;
    std::string name;
  };
  std::vector<TcVariant> tcv;
  const bool tc_shape = (K == 9 || K == 1) && cuda::tc_conv_shape_ok(tc_probe) && caps.cc_major >= 8;
  if (tc_shape) {
    for (auto impl : {cuda::TcConvArgs::Impl::wgmma, cuda::TcConvArgs::Impl::mma}) {
      cuda::TcConvArgs a = tc_probe;
      a.impl = impl;
      if (impl == cuda::TcConvArgs::Impl::wgmma &&
          (!caps.wgmma || K == 1 || cuda::tc_conv_block_channels(a, impl) == 0))
        continue;
      if (impl == cuda::TcConvArgs::Impl::mma && cuda::tc_conv_smem_bytes(a) > caps.smem_per_block_optin) continue;
      cuda::TcConvArgs one = a;
      one.N = 1;
      std::set<int> splits = {1, cuda::tc_conv_choose_splits(one, caps.sm_count),
                              cuda::tc_conv_choose_splits(a, caps.sm_count)};
      const bool wg = impl == cuda::TcConvArgs::Impl::wgmma;
      const std::string base = std::string("tensor-core implicit gemm (") + (wg ? "wgmma" : "mma.sync");
      for (int sp : splits) {
        cuda::TcConvArgs v = a;
        v.splits = sp;
        v.fold = 0;
        tcv.push_back({v, base + ", split-k " + std::to_string(sp) + ")"});
        if (wg && sp > 1) {  // the splits folded into each block (3xTF32: each split added into y)
          v.fold = 1;
          tcv.push_back({v, base + ", split-k " + std::to_string(sp) + " folded)"});
        }
      }
      if (wg && !sh.transposed) {  // activations by cp.async instead of TMA
        cuda::TcConvArgs v = a;
        v.splits = cuda::tc_conv_choose_splits(one, caps.sm_count);
        v.tma_activations = false;
        tcv.push_back({v, base + ", split-k " + std::to_string(v.splits) + ", cp.async activations)"});
        v.tma_activations = true;  // 256-pixel tiles where the launch takes them
        v.block_pixels = 256;
        if (cuda::tc_wgmma_block_pixels(v, cuda::tc_conv_block_channels(v, impl)) == 256)
          tcv.push_back({v, base + ", split-k " + std::to_string(v.splits) + ", 256 pixels per block)"});
      }
      if (wg) {
        for (int bc : {64, 128, 256}) {
          cuda::TcConvArgs v = a;
          v.block_channels = bc;
          if (cuda::tc_conv_block_channels(v, impl) != bc || bc == cuda::tc_conv_block_channels(a, impl)) continue;
          v.splits = cuda::tc_conv_choose_splits(one, caps.sm_count);
          tcv.push_back(
              {v, base + ", " + std::to_string(bc) + " channels per block, split-k " + std::to_string(v.splits) + ")"});
        }
      }
    }
  }
  for (const TcVariant& v : tcv) ws_need = std::max(ws_need, cuda::tc_conv_workspace(v.a));
#ifdef SG2_WITH_CUTLASS
  // CUTLASS's sm90 fprop (dev/cutlass): forward convs in fp16 and TF32, the filter as KRSC (d_w)
  CutlassConvArgs cut;
  cut.N = sh.N;
  cut.H = sh.H;
  cut.W = sh.W;
  cut.Cin = sh.Cin;
  cut.Cout = sh.Cout;
  cut.k = sh.k;
  cut.pad = sh.pad;
  cut.f16 = math == ConvMath::fp16;
  std::vector<int> cutlass_configs;
  if (!sh.transposed && (math == ConvMath::fp16 || math == ConvMath::tf32))
    for (int i = 0; i < cutlass_conv_count(cut.f16); ++i)
      if (const size_t need = cutlass_conv_workspace(i, cut)) {
        cutlass_configs.push_back(i);
        ws_need = std::max(ws_need, need);
      }
#endif
  DeviceBuffer ws(std::max<size_t>(ws_need, 256), nullptr);

  chosen->select(x.get(), d_w.get(), ref.buf.get(), ws.get(), ws.bytes(), s);
  off_conv->select(x.get(), d_w.get(), ref.buf.get(), ws.get(), ws.bytes(), s);
  std::vector<Candidate> cands;
  cands.push_back({"* " + chosen->describe(),
                   [&](cudaStream_t st) {
                     chosen->run(x.get(), d_w.get(), y, ws.get(), ws.bytes(), st);
                     return true;
                   },
                   true});
  cands.push_back({"batch invariance off: " + off_conv->describe(), [&](cudaStream_t st) {
                     off_conv->run(x.get(), d_w.get(), y, ws.get(), ws.bytes(), st);
                     return true;
                   }});
  for (const TcVariant& v : tcv)
    cands.push_back({v.name, [&, v](cudaStream_t st) {
                       cuda::TcConvArgs a = v.a;
                       a.x = x.get();
                       a.y = y;
                       a.w_hi = d_hi.get();
                       a.w_lo = math == ConvMath::fp32_strict ? d_lo.as<float>() : nullptr;
                       a.partial = ws.as<float>();
                       if (!cuda::tc_conv_supports(a)) return false;
                       cuda::tc_conv(a, st);
                       return true;
                     }});
  // the transposed conv as one GEMM per tile: wgmma (Hopper), mma.sync with this GPU's shared
  // memory (the deepest pipeline) and with an sm_86 card's 99 KiB (two stages of 64 channels)
  struct TconvVariant {
    cuda::TcTconvArgs::Impl impl;
    size_t smem;
    std::string name;
  };
  std::vector<TconvVariant> tconvs;
  if (sh.transposed && d_tconv) {
    const std::string base = "tensor-core transposed conv, 4 phases per tile (";
    if (caps.wgmma) tconvs.push_back({cuda::TcTconvArgs::Impl::wgmma, 0, base + "wgmma, tma)"});
    if (caps.cc_major >= 8 && math != ConvMath::fp32_strict) {  // 3xTF32: wgmma only
      tconvs.push_back({cuda::TcTconvArgs::Impl::mma, caps.smem_per_block_optin, base + "mma.sync, cp.async)"});
      if (caps.smem_per_block_optin > 99 * 1024)
        tconvs.push_back({cuda::TcTconvArgs::Impl::mma, 99 * 1024, base + "mma.sync, cp.async, 99 KiB as sm_86)"});
    }
  }
  for (const TconvVariant& v : tconvs)
    cands.push_back({v.name, [&, v](cudaStream_t st) {
                       cuda::TcTconvArgs a;
                       a.operands = math == ConvMath::fp16   ? cuda::TcTconvArgs::Operands::f16
                                    : math == ConvMath::tf32 ? cuda::TcTconvArgs::Operands::tf32
                                                             : cuda::TcTconvArgs::Operands::tf32x3;
                       a.impl = v.impl;
                       a.N = sh.N;
                       a.H = sh.H;
                       a.W = sh.W;
                       a.Cin = sh.Cin;
                       a.Cout = sh.Cout;
                       a.x = x.get();
                       a.w = d_tconv.get();
                       a.w_lo = d_tconv_lo ? d_tconv_lo.as<float>() : nullptr;
                       a.y = y;
                       a.num_sms = caps.sm_count;
                       a.encode_tensor_map = caps.encode_tensor_map;
                       a.smem_per_block = v.smem;
                       if (!cuda::tc_tconv_supports(a)) return false;
                       cuda::tc_tconv(a, st);
                       return true;
                     }});
#ifdef SG2_WITH_CUTLASS
  for (int i : cutlass_configs)
    cands.push_back({cutlass_conv_name(i, cut.f16), [&, i](cudaStream_t st) {
                       CutlassConvArgs a = cut;
                       a.x = x.get();
                       a.w = d_w.get();
                       a.y = y;
                       return cutlass_conv_run(i, a, ws.get(), ws.bytes(), st);
                     }});
#endif
  if (math == ConvMath::fp32_strict && K == 9)
    cands.push_back({"simt fp32 implicit gemm", [&](cudaStream_t st) {
                       cuda::SimtConvArgs a;
                       a.N = sh.N;
                       a.H = sh.H;
                       a.W = sh.W;
                       a.Cin = sh.Cin;
                       a.Cout = sh.Cout;
                       a.transposed = sh.transposed;
                       a.x = x.as<float>();
                       a.w = d_w.as<float>();
                       a.y = static_cast<float*>(y);
                       if (!cuda::conv2d_simt_supports(a)) return false;
                       cuda::conv2d_simt(a, st);
                       return true;
                     }});
  cands.push_back({"direct kernel", [&](cudaStream_t st) {
                     cuda::Conv2dArgs a;
                     a.N = sh.N;
                     a.H = sh.H;
                     a.W = sh.W;
                     a.Cin = sh.Cin;
                     a.Cout = sh.Cout;
                     a.k = sh.k;
                     a.pad = sh.pad;
                     a.transposed = sh.transposed;
                     a.dtype = dt;
                     a.x = x.get();
                     a.w = d_w.get();
                     a.y = y;
                     cuda::conv2d_direct(a, st);
                     return true;
                   }});
  for (int i = 0; i < cudnn_conv->candidate_count(); ++i)
    cands.push_back({cudnn_conv->describe_candidate(i), [&, i](cudaStream_t st) {
                       return cudnn_conv->run_candidate(i, x.get(), d_w.get(), y, ws.get(), ws.bytes(), st);
                     }});

  // the chosen candidate writes the reference output, every other one is compared with it (on the device)
  bool have_ref = false;
  for (const Candidate& c : cands) {
    LayerRow row;
    row.candidate = c.name;
    row.chosen = c.chosen;
    y = c.chosen ? ref.buf.get() : out.buf.get();
    (c.chosen ? ref : out).poison();
    row.timing = time_candidate(c, o.warmup, o.iters, o.slow_ms, s);
    if (row.timing.ran) {
      if (c.chosen) {
        have_ref = true;
        row.diff = -1;
      } else if (have_ref) {
        const Comparison cmp = compare(out.buf.get(), ref.buf.get(), y_count, dt, s);
        row.diff = cmp.non_finite ? std::numeric_limits<double>::infinity()
                                  : cmp.max_abs_diff / std::max(1.0, cmp.max_abs_ref);
      }
    }
    r.rows.push_back(row);
  }
  // the chosen output of image 0 against the CPU reference (kernels/ref)
  if (o.reference && have_ref) {
    const size_t x1 = x_count / size_t(sh.N), y1 = y_count / size_t(sh.N);
    const std::vector<float> xh = download(x.get(), x1, dt), yh = download(ref.buf.get(), y1, dt);
    Tensor x0({1, sh.Cin, sh.H, sh.W}), wt({sh.Cout, sh.Cin, sh.k, sh.k});
    for (int c = 0; c < sh.Cin; ++c)
      for (int p = 0; p < sh.H * sh.W; ++p) x0[int64_t(c) * sh.H * sh.W + p] = xh[size_t(p) * sh.Cin + c];
    std::vector<float> wr = w;
    if (dt == DType::f16)
      for (float& v : wr) v = __half2float(__float2half_rn(v));
    std::copy(wr.begin(), wr.end(), wt.data());
    const Tensor yr = sh.transposed ? ref::conv_transpose2d_stride2(x0, wt, false) : ref::conv2d(x0, wt, sh.pad, true);
    std::vector<float> want(y1);
    for (int c = 0; c < sh.Cout; ++c)
      for (int p = 0; p < OH * OW; ++p) want[size_t(p) * sh.Cout + c] = yr[int64_t(c) * OH * OW + p];
    r.rows.front().diff = rel_diff(yh, want);
    r.rows.front().candidate += " [vs CPU reference, image 0]";
  }
  return r;
}

}  // namespace sg2::dev
