// sg2 GPU tests: every CUDA kernel against the CPU reference ops (kernels/ref) on random inputs
// and odd shapes. fp32 paths are checked tightly (relative 1e-5 of the output's scale), fp16
// storage within 2e-3 (fp16 has an 11-bit significand: one rounding is <= 4.9e-4 relative).
#include <gtest/gtest.h>

#include <sstream>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "engine/cuda/conv.h"
#include "engine/cuda/cuda_raii.h"
#include "engine/plan.h"
#include "gpu_test_util.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_simt.h"
#include "kernels/conv_epilogue.h"
#include "kernels/demodulate.h"
#include "kernels/fully_connected.h"
#include "kernels/fused_conv_f16.h"
#include "kernels/modulate.h"
#include "kernels/ref/bias_act.h"
#include "kernels/ref/fully_connected.h"
#include "kernels/ref/modulated_conv2d.h"
#include "kernels/ref/upfirdn2d.h"
#include "kernels/tc_conv.h"
#include "kernels/tc_conv_sm90.h"
#include "kernels/upconv_epilogue.h"
#include "kernels/upfirdn2d.h"

using namespace sg2;
using namespace sg2::gputest;
using cuda::DType;

namespace {

const char* dt_name(DType t) { return t == DType::f16 ? "fp16" : "fp32"; }

}  // namespace

TEST(GpuKernels, FullyConnectedMatchesReference) {
  SG2_REQUIRE_GPU();
  struct Case {
    int N, in, out;
    ref::Activation act;
    cuda::FcAct gact;
    float wg, bg;
  };
  const Case cases[] = {{1, 5, 3, ref::Activation::lrelu, cuda::FcAct::lrelu, 0.01f / std::sqrt(5.0f), 0.01f},
                        {3, 64, 13, ref::Activation::linear, cuda::FcAct::linear, 0.125f, 1.0f},
                        {11, 77, 40, ref::Activation::lrelu, cuda::FcAct::lrelu, 0.3f, 0.5f},
                        {9, 512, 512, ref::Activation::relu, cuda::FcAct::relu, 0.01f / std::sqrt(512.0f), 0.01f}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Tensor x = randn({c.N, c.in}, seed++), w = randn({c.out, c.in}, seed++, 10.0f), b = randn({c.out}, seed++);
    Tensor ref = ref::fully_connected(x, w, &b, c.wg, c.bg, c.act);
    auto dx = to_device(x), dw = to_device(w), db = to_device(b);
    auto dy = poisoned(size_t(c.N) * c.out);
    cuda::FcArgs a;
    a.N = c.N;
    a.in_features = c.in;
    a.out_features = c.out;
    a.x = dx.as<float>();
    a.x_stride_n = c.in;
    a.weight = dw.as<float>();
    a.weight_gain = c.wg;
    a.bias = db.as<float>();
    a.bias_gain = c.bg;
    a.act = c.gact;
    a.act_gain = c.act == ref::Activation::linear ? 1.0f : static_cast<float>(std::sqrt(2.0));
    a.y = dy.as<float>();
    cuda::fully_connected(a, nullptr);
    EXPECT_TRUE(near_rel(from_device(dy.get(), {c.N, c.out}), ref, 1e-5,
                         "fc N=" + std::to_string(c.N) + " in=" + std::to_string(c.in)));
  }
}

TEST(GpuKernels, AffineOfManyLayersReadsEachLayersRow) {
  SG2_REQUIRE_GPU();
  const int N = 3, R = 5, D = 24, J = 17;
  Tensor ws = randn({N, R, D}, 7), w = randn({J, D}, 8), b = randn({J}, 9), sc = randn({J}, 10);
  std::vector<int> rows(J);
  for (int j = 0; j < J; ++j) rows[size_t(j)] = (j * 3) % R;
  const float gain = 1.0f / std::sqrt(float(D));
  Tensor ref({N, J});
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < J; ++j) {
      Tensor xr({1, D}), wr({1, D}), br({1});
      for (int i = 0; i < D; ++i) {
        xr[i] = ws[(int64_t(n) * R + rows[size_t(j)]) * D + i];
        wr[i] = w[int64_t(j) * D + i];
      }
      br[0] = b[j];
      ref[int64_t(n) * J + j] = ref::fully_connected(xr, wr, &br, gain, 1.0f, ref::Activation::linear)[0] * sc[j];
    }
  auto dws = to_device(ws), dw = to_device(w), db = to_device(b), dsc = to_device(sc), drows = to_device(rows);
  auto dy = poisoned(size_t(N) * J);
  cuda::FcArgs a;
  a.N = N;
  a.in_features = D;
  a.out_features = J;
  a.x = dws.as<float>();
  a.x_stride_n = int64_t(R) * D;
  a.rows = drows.as<int>();
  a.x_stride_row = D;
  a.weight = dw.as<float>();
  a.weight_gain = gain;
  a.bias = db.as<float>();
  a.out_scale = dsc.as<float>();
  a.y = dy.as<float>();
  cuda::fully_connected(a, nullptr);
  EXPECT_TRUE(near_rel(from_device(dy.get(), {N, J}), ref, 1e-5, "affine rows"));
}

TEST(GpuKernels, Normalize2ndMomentConcatenates) {
  SG2_REQUIRE_GPU();
  const int N = 3, A = 7, B = 512;
  Tensor z = randn({N, A}, 1, 3.0f), e = randn({N, B}, 2);
  Tensor rz = ref::normalize_2nd_moment(z), re = ref::normalize_2nd_moment(e);
  auto dz = to_device(z), de = to_device(e);
  auto dy = poisoned(size_t(N) * (A + B));
  cuda::normalize_2nd_moment(dz.as<float>(), N, A, dy.as<float>(), A + B, 0, 1e-8f, nullptr);
  cuda::normalize_2nd_moment(de.as<float>(), N, B, dy.as<float>(), A + B, A, 1e-8f, nullptr);
  Tensor got = from_device(dy.get(), {N, A + B});
  Tensor ref({N, A + B});
  for (int n = 0; n < N; ++n) {
    for (int j = 0; j < A; ++j) ref[int64_t(n) * (A + B) + j] = rz[int64_t(n) * A + j];
    for (int j = 0; j < B; ++j) ref[int64_t(n) * (A + B) + A + j] = re[int64_t(n) * B + j];
  }
  EXPECT_TRUE(near_rel(got, ref, 1e-6, "normalize_2nd_moment"));
}

// Programmatic dependent launch (kernels/pdl.cuh): two sg2 kernels captured one after the other
// are joined by a programmatic edge (the second may launch while the first drains and waits in
// pdl_begin for its writes), and the second still reads the first's output: a chain of 64
// dependent launches replayed as a graph gives what the host computes.
TEST(GpuKernels, LaunchesOverlapTheirPredecessorInAGraph) {
  SG2_REQUIRE_GPU();
  const int N = 2, F = 512, kSteps = 64;
  Tensor x = randn({N, F}, 7, 2.0f);
  auto a = to_device(x), b = poisoned(size_t(N) * F);
  cudaStream_t st = nullptr;
  SG2_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const DeviceBuffer zeros = to_device(Tensor({F}, std::vector<float>(F, 0.0f)));
  SG2_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  // x -> truncate toward zeros (psi 0.5: halves every value) -> ... alternately a -> b and b -> a
  for (int k = 0; k < kSteps; ++k) {
    const float* from = (k % 2 ? b : a).as<float>();
    float* to = (k % 2 ? a : b).as<float>();
    cuda::truncate_broadcast(from, zeros.as<float>(), N, 1, F, 0.5f, 1, to, st);
  }
  cudaGraph_t graph = nullptr;
  SG2_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
  size_t edges = 0;
  SG2_CUDA_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  std::vector<cudaGraphNode_t> from(edges), to(edges);
  std::vector<cudaGraphEdgeData> data(edges);
  SG2_CUDA_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &edges));
  EXPECT_EQ(edges, size_t(kSteps - 1));
  int programmatic = 0;
  for (const cudaGraphEdgeData& d : data) programmatic += d.type == cudaGraphDependencyTypeProgrammatic ? 1 : 0;
  EXPECT_EQ(programmatic, kSteps - 1) << "edges that let a launch overlap its predecessor";
  cudaGraphExec_t exec = nullptr;
  SG2_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 3; ++rep) {
    const DeviceBuffer fresh = to_device(x);
    SG2_CUDA_CHECK(cudaMemcpy(a.get(), fresh.get(), size_t(N) * F * 4, cudaMemcpyDeviceToDevice));
    SG2_CUDA_CHECK(cudaGraphLaunch(exec, st));
    SG2_CUDA_CHECK(cudaStreamSynchronize(st));
    // 64 halvings (psi 0.5 toward zero is exact): x * 2^-64, in a after an even count of steps
    const Tensor got = from_device(a.get(), {N, F});
    int wrong = 0;
    for (int64_t i = 0; i < x.numel(); ++i) wrong += got[i] == std::ldexp(x[i], -kSteps) ? 0 : 1;
    EXPECT_EQ(wrong, 0) << "64 dependent launches, replay " << rep;
  }
  SG2_CUDA_CHECK(cudaGraphExecDestroy(exec));
  SG2_CUDA_CHECK(cudaGraphDestroy(graph));
  SG2_CUDA_CHECK(cudaStreamDestroy(st));
}

TEST(GpuKernels, TruncationIsBitExactLerp) {
  SG2_REQUIRE_GPU();
  const int N = 2, R = 6, D = 33;
  Tensor w = randn({N, D}, 3), avg = randn({D}, 4, 0.5f);
  auto dw = to_device(w), davg = to_device(avg);
  for (float psi : {1.0f, 0.7f, 0.3f, -0.6f, 1.5f, 0.0f}) {
    for (int cutoff : {R, 3, 0}) {
      auto dws = poisoned(size_t(N) * R * D);
      cuda::truncate_broadcast(dw.as<float>(), davg.as<float>(), N, R, D, psi, cutoff, dws.as<float>(), nullptr);
      Tensor got = from_device(dws.get(), {N, R, D});
      int bad = 0;
      for (int n = 0; n < N; ++n)
        for (int k = 0; k < R; ++k)
          for (int j = 0; j < D; ++j) {
            const float b = w[int64_t(n) * D + j], a = avg[j];
            float v = b;
            if (psi != 1.0f && k < cutoff) {
              const float diff = b - a;
              v = std::fabs(psi) < 0.5f ? std::fma(psi, diff, a) : std::fma(-diff, 1.0f - psi, b);
            }
            bad += got[(int64_t(n) * R + k) * D + j] != v;
          }
      EXPECT_EQ(bad, 0) << "psi " << psi << " cutoff " << cutoff;
    }
  }
}

TEST(GpuKernels, DemodulationMatchesReference) {
  SG2_REQUIRE_GPU();
  const int N = 3;
  struct L {
    int cin, cout, fp16;
  };
  const L layers[] = {{5, 7, 0}, {13, 3, 1}, {64, 40, 1}};
  std::vector<cuda::DemodLayer> table;
  std::vector<int> layer_of_output;
  std::vector<float> q_all, w_inv;
  std::vector<Tensor> weights;
  int S = 0, Dc = 0;
  uint32_t seed = 20;
  for (int li = 0; li < 3; ++li) {
    const L& l = layers[li];
    Tensor W = randn({l.cout, l.cin, 3, 3}, seed++);
    cuda::DemodLayer d;
    d.s_offset = S;
    d.in_channels = l.cin;
    d.dcoef_offset = Dc;
    d.out_channels = l.cout;
    d.q_offset = int64_t(q_all.size());
    d.fp16 = l.fp16;
    for (int o = 0; o < l.cout; ++o) {
      float mx = 0;
      for (int i = 0; i < l.cin; ++i) {
        double sq = 0;
        for (int k = 0; k < 9; ++k) {
          const float v = W[(int64_t(o) * l.cin + i) * 9 + k];
          sq += double(v) * v;
          mx = std::max(mx, std::fabs(v));
        }
        q_all.push_back(float(sq));
      }
      w_inv.push_back(l.fp16 ? float(std::sqrt(9.0 * l.cin)) * mx : 1.0f);
      layer_of_output.push_back(li);
    }
    table.push_back(d);
    weights.push_back(W);
    S += l.cin + 3;  // leave gaps: columns need not be dense
    Dc += l.cout;
  }
  Tensor s = randn({N, S}, 99, 2.0f);
  auto ds = to_device(s), dq = to_device(q_all), dwinv = to_device(w_inv), dlo = to_device(layer_of_output);
  cuda::DeviceBuffer dtable(table.size() * sizeof(cuda::DemodLayer), nullptr);
  SG2_CUDA_CHECK(cudaMemcpy(dtable.get(), table.data(), dtable.bytes(), cudaMemcpyHostToDevice));
  auto ds_in = poisoned(size_t(N) * S), dsmax = poisoned(size_t(N) * 3), ddd = poisoned(size_t(N) * Dc);
  cuda::DemodArgs a;
  a.N = N;
  a.num_layers = 3;
  a.layers = dtable.as<cuda::DemodLayer>();
  a.total_out = Dc;
  a.layer_of_output = dlo.as<int>();
  a.s = ds.as<float>();
  a.s_stride = S;
  a.q = dq.as<float>();
  a.w_inv = dwinv.as<float>();
  a.s_in = ds_in.as<float>();
  a.smax = dsmax.as<float>();
  a.dcoefs = ddd.as<float>();
  cuda::demodulate(a, nullptr);
  Tensor s_in = from_device(ds_in.get(), {N, S}), smax = from_device(dsmax.get(), {N, 3}),
         dcoefs = from_device(ddd.get(), {N, Dc});
  for (int li = 0; li < 3; ++li) {
    const auto& d = table[size_t(li)];
    Tensor sl({N, d.in_channels});
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < d.in_channels; ++i) sl[int64_t(n) * d.in_channels + i] = s[int64_t(n) * S + d.s_offset + i];
    Tensor ref = ref::demod_coefficients(weights[size_t(li)], sl);
    Tensor got({N, d.out_channels}), got_in({N, d.in_channels}), ref_in({N, d.in_channels});
    for (int n = 0; n < N; ++n) {
      float mx = 0;
      for (int i = 0; i < d.in_channels; ++i) mx = std::max(mx, std::fabs(sl[int64_t(n) * d.in_channels + i]));
      EXPECT_FLOAT_EQ(smax[int64_t(n) * 3 + li], d.fp16 ? mx : 1.0f);
      for (int i = 0; i < d.in_channels; ++i) {
        got_in[int64_t(n) * d.in_channels + i] = s_in[int64_t(n) * S + d.s_offset + i];
        ref_in[int64_t(n) * d.in_channels + i] =
            d.fp16 ? sl[int64_t(n) * d.in_channels + i] / mx : sl[int64_t(n) * d.in_channels + i];
      }
      for (int o = 0; o < d.out_channels; ++o) {
        float v = dcoefs[int64_t(n) * Dc + d.dcoef_offset + o];
        if (d.fp16) v = v / (mx * w_inv[size_t(d.dcoef_offset + o)]);
        got[int64_t(n) * d.out_channels + o] = v;
      }
    }
    EXPECT_TRUE(near_rel(got, ref, 2e-6, "dcoefs layer " + std::to_string(li)));
    EXPECT_TRUE(near_rel(got_in, ref_in, 1e-7, "s_in layer " + std::to_string(li)));
  }
}

// --- conv epilogue -------------------------------------------------------------------------

namespace {

struct EpiCase {
  int N, C, H, img_channels;
  DType in, out;
  bool per_sample_noise, residual, img_prev, clamp;
  bool fused = false;  // fused_conv_f16: y = conv3x3(x, w) (fp16 x, w) computed by the kernel
};

/// Runs one case against the reference; returns the device's out, raw and image.
std::vector<Tensor> run_epilogue_case(const EpiCase& k, uint32_t seed, bool shared_tables = true) {
  const int N = k.N, C = k.C, H = k.H, W = k.H, K = k.img_channels;
  const std::vector<float> filter = make_filter2d({1, 3, 3, 1});
  Tensor y = randn({N, C, H, W}, seed, 3.0f);
  if (k.in == DType::f16) y = round_f16(y);
  Tensor cx, cw;  // fused: the conv's input and filter (fp16 values), y their fp32 convolution
  if (k.fused) {
    cx = round_f16(randn({N, C, H, W}, seed + 11));
    cw = round_f16(randn({C, C, 3, 3}, seed + 12, 0.2f));
    y = ref::conv2d(cx, cw, 1, true);
  }
  Tensor dcoefs = randn({N, C}, seed + 1), bias = randn({C}, seed + 2), scale = randn({N, C}, seed + 3);
  Tensor noise = randn({k.per_sample_noise ? N : 1, H, W}, seed + 4), res = randn({N, C, H, W}, seed + 5);
  Tensor rgb_w = randn({std::max(K, 1), C}, seed + 6), rgb_s = randn({N, C}, seed + 7, 0.3f),
         rgb_b = randn({std::max(K, 1)}, seed + 8);
  Tensor prev = randn({N, std::max(K, 1), H / 2, W / 2}, seed + 9);
  const float strength = 0.7f, gain = static_cast<float>(std::sqrt(2.0)), clamp = k.clamp ? 2.5f : -1.0f;
  // reference
  Tensor v({N, C, H, W});
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int p = 0; p < H * W; ++p) {
        const int64_t i = (int64_t(n) * C + c) * H * W + p;
        float t = y[i] * dcoefs[int64_t(n) * C + c];
        t = t + noise[(k.per_sample_noise ? int64_t(n) * H * W : 0) + p] * strength;
        v[i] = t;
      }
  v = ref::bias_act(v, &bias, 1, ref::Activation::lrelu, {}, gain,
                    k.clamp ? std::optional<float>(clamp) : std::nullopt);
  if (k.residual)
    for (int64_t i = 0; i < v.numel(); ++i) v[i] = v[i] + res[i];
  Tensor out = v;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int p = 0; p < H * W; ++p) out[(int64_t(n) * C + c) * H * W + p] *= scale[int64_t(n) * C + c];
  Tensor img_ref;
  if (K > 0) {
    ref::ModConvArgs ma;
    ma.padding = 0;
    ma.demodulate = false;
    Tensor t = ref::modulated_conv2d(v, rgb_w.reshaped({K, C, 1, 1}), rgb_s, filter, 4, ma);
    img_ref = ref::bias_act(t, &rgb_b, 1, ref::Activation::linear, {}, 1.0f,
                            k.clamp ? std::optional<float>(clamp) : std::nullopt);
    if (k.img_prev) {
      Tensor up = ref::upsample2d(prev, filter, 4);
      for (int64_t i = 0; i < img_ref.numel(); ++i) img_ref[i] = up[i] + img_ref[i];
    }
  }
  // device
  auto d_y = to_device(to_nhwc(y), k.in), d_dd = to_device(dcoefs), d_b = to_device(bias), d_sc = to_device(scale);
  auto d_noise = to_device(noise), d_res = to_device(to_nhwc(res)), d_rw = to_device(rgb_w), d_rs = to_device(rgb_s);
  auto d_rb = to_device(rgb_b), d_prev = to_device(prev), d_f = to_device(filter);
  const size_t count = size_t(N) * C * H * W;
  auto d_out = poisoned(count, k.out), d_raw = poisoned(count, k.out),
       d_img = poisoned(size_t(N) * std::max(K, 1) * H * W);
  cuda::EpilogueArgs a;
  a.N = N;
  a.H = H;
  a.W = W;
  a.C = C;
  a.num_sms = gpu_caps().sm_count;  // the fused kernel's persistent blocks walk several tiles
  a.y_dtype = k.in;
  a.y = d_y.get();
  a.dcoefs = d_dd.as<float>();
  a.dcoefs_stride = C;
  a.noise = d_noise.as<float>();
  a.noise_stride_n = k.per_sample_noise ? int64_t(H) * W : 0;
  a.noise_strength = strength;
  a.bias = d_b.as<float>();
  a.lrelu = true;
  a.gain = gain;
  a.clamp = clamp;
  a.residual = k.residual ? d_res.as<float>() : nullptr;
  a.out_dtype = k.out;
  a.out = d_out.get();
  a.out_scale = d_sc.as<float>();
  a.out_scale_stride = C;
  a.raw = d_raw.get();
  if (K > 0) {
    a.img_channels = K;
    a.rgb_weight = d_rw.as<float>();
    a.rgb_styles = d_rs.as<float>();
    a.rgb_styles_stride = C;
    a.rgb_bias = d_rb.as<float>();
    a.rgb_clamp = clamp;
    a.img_prev = k.img_prev ? d_prev.as<float>() : nullptr;
    a.img = d_img.as<float>();
    a.filter = d_f.as<float>();
    a.fsize = 4;
  }
  a.shared_tables = shared_tables;
  if (k.fused) {
    Tensor wd({C, 3, 3, C});  // [Cout, 3, 3, Cin]
    for (int o = 0; o < C; ++o)
      for (int i = 0; i < C; ++i)
        for (int t = 0; t < 9; ++t) wd[(int64_t(o) * 9 + t) * C + i] = cw[(int64_t(o) * C + i) * 9 + t];
    auto d_x = to_device(to_nhwc(cx), DType::f16), d_w = to_device(wd, DType::f16);
    a.y = nullptr;
    EXPECT_TRUE(cuda::fused_conv_f16_supports(a, gpu_caps().smem_per_block_optin));
    cuda::fused_conv_f16(d_x.get(), d_w.get(), a, gpu_caps().smem_per_block_optin, nullptr);
    SG2_CUDA_CHECK(cudaDeviceSynchronize());
  } else {
    cuda::conv_epilogue(a, nullptr);
  }
  const std::string label = std::string(k.fused ? "fused conv " : "") + "epilogue N=" + std::to_string(N) +
                            " C=" + std::to_string(C) + " H=" + std::to_string(H) + " K=" + std::to_string(K) + " " +
                            dt_name(k.in) + "->" + dt_name(k.out);
  const double tol = k.out == DType::f16 ? 2e-3 : 1e-6;
  EXPECT_TRUE(near_rel(to_nchw(from_device(d_out.get(), {N, H, W, C}, k.out)), out, tol, label + " out"));
  EXPECT_TRUE(near_rel(to_nchw(from_device(d_raw.get(), {N, H, W, C}, k.out)), v, tol, label + " raw"));
  // fused: the conv sums in another order than the reference (fp32, ~1e-6 relative)
  if (K > 0)
    EXPECT_TRUE(near_rel(from_device(d_img.get(), {N, K, H, W}), img_ref, k.fused ? 1e-4 : 1e-5, label + " img"));
  return {from_device(d_out.get(), {N, H, W, C}, k.out), from_device(d_raw.get(), {N, H, W, C}, k.out),
          from_device(d_img.get(), {N, std::max(K, 1), H, W})};
}

}  // namespace

TEST(GpuKernels, ConvEpilogueMatchesReference) {
  SG2_REQUIRE_GPU();
  const EpiCase cases[] = {
      {1, 13, 4, 3, DType::f32, DType::f32, false, false, false, true},
      {3, 32, 8, 3, DType::f32, DType::f32, true, true, true, false},
      {3, 32, 8, 1, DType::f16, DType::f16, false, false, true, true},
      {2, 48, 16, 4, DType::f32, DType::f16, true, false, true, false},
      {2, 5, 8, 5, DType::f16, DType::f32, true, true, true, true},
      {1, 512, 4, 3, DType::f16, DType::f16, false, false, false, true},
      {2, 64, 16, 0, DType::f32, DType::f32, false, true, false, true},
      {1, 3, 64, 3, DType::f32, DType::f32, true, false, true, false},
      // fewer lanes per pixel than image channels (G = 1, 2): a lane writes several channels
      {2, 8, 8, 3, DType::f32, DType::f32, true, false, true, false},
      {2, 16, 16, 4, DType::f16, DType::f16, false, true, true, true},
      {1, 2, 8, 3, DType::f32, DType::f16, false, false, true, false},
  };
  uint32_t seed = 100;
  for (const EpiCase& k : cases) run_epilogue_case(k, seed += 10);
}

// The fused fp16 conv1 + epilogue + ToRGB kernel (kernels/fused_conv_f16.h) against the CPU
// convolution followed by the reference epilogue: 32 and 64 channels, 0-4 image channels, one
// tile per sample, tiles at the image edges, and more tiles than resident blocks (192 x 192 and up).
TEST(GpuKernels, FusedConvF16MatchesReference) {
  SG2_REQUIRE_GPU();
  const EpiCase cases[] = {
      {2, 32, 16, 3, DType::f16, DType::f16, true, false, true, true, true},
      {1, 64, 16, 1, DType::f16, DType::f16, false, false, false, false, true},
      {2, 64, 48, 0, DType::f16, DType::f16, true, false, false, true, true},
      {1, 32, 32, 4, DType::f16, DType::f16, false, false, true, false, true},
      {3, 64, 32, 3, DType::f16, DType::f16, true, false, true, true, true},
      {2, 32, 192, 3, DType::f16, DType::f16, true, false, true, true, true},
      {1, 64, 192, 1, DType::f16, DType::f16, false, false, true, true, true},
      // 13 x 13 tiles: the persistent blocks' steps carry in both tile coordinates (132-SM GPUs)
      {2, 32, 208, 3, DType::f16, DType::f16, true, false, true, true, true},
      {1, 64, 208, 3, DType::f16, DType::f16, false, false, true, false, true},
      // buffers that come back (tiles b, b + grid, b + 2 grid, ... of a block): at 32 channels on a 132-SM GPU
      // (264 blocks) 2 x 576 tiles, so a buffer's next tile has the same sample (tables kept: blocks b < 48) or
      // the next one; at 64 channels (132 blocks) 289 tiles of one sample, blocks b < 25 take three
      {2, 32, 384, 3, DType::f16, DType::f16, true, false, true, true, true},
      {1, 64, 272, 3, DType::f16, DType::f16, false, false, true, true, true},
  };
  uint32_t seed = 700;
  for (const EpiCase& k : cases) run_epilogue_case(k, seed += 20);
}

// The shared-table kernel (one chunk per lane, <= 4 image channels) and the general kernel give
// the same bits (EpilogueArgs::shared_tables = false forces the general one).
TEST(GpuKernels, ConvEpilogueKernelsAgreeBitForBit) {
  SG2_REQUIRE_GPU();
  const EpiCase cases[] = {{3, 32, 16, 3, DType::f16, DType::f16, true, false, true, true},
                           {2, 64, 8, 4, DType::f32, DType::f32, false, true, true, false},
                           {2, 256, 8, 0, DType::f32, DType::f16, true, false, false, true},
                           {1, 8, 32, 1, DType::f16, DType::f32, true, true, true, false},
                           {2, 32, 8, 2, DType::f32, DType::f32, false, false, true, true}};
  uint32_t seed = 900;
  for (const EpiCase& k : cases) {
    const auto tab = run_epilogue_case(k, seed);
    const auto general = run_epilogue_case(k, seed, /*shared_tables=*/false);
    for (size_t i = 0; i < tab.size(); ++i)
      EXPECT_EQ(std::memcmp(tab[i].data(), general[i].data(), size_t(tab[i].numel()) * sizeof(float)), 0)
          << "case C=" << k.C << " K=" << k.img_channels << " output " << i;
    seed += 10;
  }
}

// --- up-conv epilogue ----------------------------------------------------------------------

TEST(GpuKernels, UpconvEpilogueMatchesReference) {
  SG2_REQUIRE_GPU();
  struct Case {
    int N, C, H, W;
    DType in, out;
    bool per_sample;
    bool tables = true;  // false: no noise, dcoefs, bias or out_scale
  };
  // C % 8 == 0 with W even takes the separable kernel (16 / 8 output rows x 32 columns per block):
  // partial tiles in both directions, several channel blocks, non-square images
  const Case cases[] = {{1, 5, 8, 8, DType::f32, DType::f32, false},
                        {2, 32, 16, 16, DType::f32, DType::f32, true},
                        {3, 40, 8, 8, DType::f16, DType::f16, true},
                        {1, 64, 32, 32, DType::f16, DType::f32, false},
                        {2, 13, 64, 64, DType::f32, DType::f16, true},
                        {1, 512, 8, 8, DType::f16, DType::f16, false},
                        {2, 96, 40, 72, DType::f16, DType::f16, true},
                        {1, 32, 24, 10, DType::f32, DType::f32, true},
                        {2, 48, 36, 8, DType::f16, DType::f16, false, false},
                        // fp16 with W % 4 == 2: the two-column kernel (W % 4 == 0 above takes the four-column one)
                        {2, 32, 20, 22, DType::f16, DType::f16, true},
                        {1, 64, 12, 6, DType::f16, DType::f32, false}};
  const std::vector<float> filter = make_filter2d({1, 3, 3, 1});
  const std::vector<float> filter1d = {0.125f, 0.375f, 0.375f, 0.125f};  // outer(filter1d, filter1d) == filter
  auto d_f1 = to_device(filter1d);
  uint32_t seed = 300;
  for (const Case& k : cases) {
    const int N = k.N, C = k.C, H = k.H, W = k.W, TH = H + 1, TW = W + 1;
    Tensor t = randn({N, C, TH, TW}, seed++, 2.0f);
    if (k.in == DType::f16) t = round_f16(t);
    Tensor dcoefs = randn({N, C}, seed++), bias = randn({C}, seed++), scale = randn({N, C}, seed++);
    Tensor noise = randn({k.per_sample ? N : 1, H, W}, seed++);
    if (!k.tables) {
      for (auto& v : dcoefs.vec()) v = 1.0f;
      for (auto& v : bias.vec()) v = 0.0f;
      for (auto& v : scale.vec()) v = 1.0f;
      for (auto& v : noise.vec()) v = 0.0f;
    }
    const float strength = -0.4f, gain = static_cast<float>(std::sqrt(2.0)), clamp = 3.0f;
    ref::Upfirdn2dArgs ua;
    ua.pad_x0 = ua.pad_x1 = ua.pad_y0 = ua.pad_y1 = 1;
    ua.gain = 4.0f;
    Tensor u = ref::upfirdn2d(t, filter, 4, 4, ua);
    ASSERT_EQ(u.dim(2), H);
    ASSERT_EQ(u.dim(3), W);
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c)
        for (int p = 0; p < H * W; ++p) {
          float& v = u[(int64_t(n) * C + c) * H * W + p];
          v = v * dcoefs[int64_t(n) * C + c] + noise[(k.per_sample ? int64_t(n) * H * W : 0) + p] * strength;
        }
    Tensor v = ref::bias_act(u, &bias, 1, ref::Activation::lrelu, {}, gain, clamp);
    Tensor out = v;
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c)
        for (int p = 0; p < H * W; ++p) out[(int64_t(n) * C + c) * H * W + p] *= scale[int64_t(n) * C + c];
    auto d_t = to_device(to_nhwc(t), k.in), d_dd = to_device(dcoefs), d_b = to_device(bias), d_sc = to_device(scale);
    auto d_noise = to_device(noise), d_f = to_device(filter);
    auto d_out = poisoned(size_t(N) * C * H * W, k.out), d_raw = poisoned(size_t(N) * C * H * W, k.out);
    cuda::UpEpilogueArgs a;
    a.N = N;
    a.H = H;
    a.W = W;
    a.C = C;
    a.num_sms = gpu_caps().sm_count;
    a.TH = TH;
    a.TW = TW;
    a.pad0 = 1;
    a.t_dtype = k.in;
    a.t = d_t.get();
    a.filter = d_f.as<float>();
    a.fsize = 4;
    if (k.tables) {
      a.dcoefs = d_dd.as<float>();
      a.dcoefs_stride = C;
      a.noise = d_noise.as<float>();
      a.noise_stride_n = k.per_sample ? int64_t(H) * W : 0;
      a.noise_strength = strength;
      a.bias = d_b.as<float>();
      a.out_scale = d_sc.as<float>();
      a.out_scale_stride = C;
    }
    a.gain = gain;
    a.clamp = clamp;
    a.out_dtype = k.out;
    a.out = d_out.get();
    a.raw = d_raw.get();
    // the 2-D FIR, then the separable one (filter1d given: C % 8 == 0 takes the separable kernel);
    // then the separable one without raw (the executor's call)
    for (int sep = 0; sep < 3; ++sep) {
      a.filter1d = sep ? d_f1.as<float>() : nullptr;
      a.raw = sep == 2 ? nullptr : d_raw.get();
      SG2_CUDA_CHECK(cudaMemset(d_out.get(), 0xff, d_out.bytes()));
      SG2_CUDA_CHECK(cudaMemset(d_raw.get(), 0xff, d_raw.bytes()));
      cuda::upconv_epilogue(a, nullptr);
      SG2_CUDA_CHECK(cudaDeviceSynchronize());
      const std::string label = std::string(sep ? "separable " : "") + (sep == 2 ? "(no raw) " : "") +
                                "upconv N=" + std::to_string(N) + " C=" + std::to_string(C) + " " + std::to_string(H) +
                                "x" + std::to_string(W) + " " + dt_name(k.in) + "->" + dt_name(k.out);
      const double tol = k.out == DType::f16 ? 2e-3 : 1e-6;
      EXPECT_TRUE(near_rel(to_nchw(from_device(d_out.get(), {N, H, W, C}, k.out)), out, tol, label + " out"));
      if (sep < 2)
        EXPECT_TRUE(near_rel(to_nchw(from_device(d_raw.get(), {N, H, W, C}, k.out)), v, tol, label + " raw"));
    }
  }
}

// The four-column fp16 kernel (kernels/upconv_epilogue_f16.cu) gives the two-column kernel's bits
// (UpEpilogueArgs::sep_columns = 2 forces the latter): the same sums in the same order and the same
// epilogue arithmetic, with and without clamp, raw output, noise and tables; partial tiles in both
// directions, several channel blocks, 16-, 8- and 4-row tiles (num_sms picks them: 0 the tallest; a
// height is halved while the grid has fewer than 32 x num_sms blocks).
TEST(GpuKernels, UpconvEpilogueColumnsAgreeBitForBit) {
  SG2_REQUIRE_GPU();
  struct Case {
    int N, C, H, W, num_sms;
    DType out;
    bool clamp, raw, noise, per_sample;
  };
  const Case cases[] = {{2, 32, 64, 64, 0, DType::f16, true, false, true, true},
                        {1, 64, 40, 72, 0, DType::f16, true, true, true, false},
                        {3, 96, 8, 8, 132, DType::f32, false, true, true, true},
                        {2, 40, 36, 44, 132, DType::f16, true, false, false, false},
                        {1, 32, 16, 16, 132, DType::f32, true, false, true, false},
                        {1, 512, 8, 8, 132, DType::f16, false, false, true, true},
                        // 8-row tiles (16 blocks at 16 rows, 32 at 8), the last one partial at 44 rows
                        {2, 32, 64, 64, 1, DType::f16, true, false, true, true},
                        {2, 64, 44, 64, 1, DType::f32, true, true, true, false},
                        // fp32 output in 16-row tiles, partial in height and width
                        {1, 32, 40, 36, 0, DType::f32, false, false, true, false}};
  const std::vector<float> filter = make_filter2d({1, 3, 3, 1});
  auto d_f = to_device(filter), d_f1 = to_device(std::vector<float>{0.125f, 0.375f, 0.375f, 0.125f});
  uint32_t seed = 4100;
  for (const Case& k : cases) {
    const int N = k.N, C = k.C, H = k.H, W = k.W;
    const Tensor t = round_f16(randn({N, H + 1, W + 1, C}, seed++, 3.0f));
    auto d_t = to_device(t, DType::f16), d_dd = to_device(randn({N, C}, seed++)), d_b = to_device(randn({C}, seed++)),
         d_sc = to_device(randn({N, C}, seed++)), d_noise = to_device(randn({k.per_sample ? N : 1, H, W}, seed++));
    const size_t count = size_t(N) * H * W * C;
    std::vector<Tensor> got[2];
    for (int cols : {2, 4}) {
      auto d_out = poisoned(count, k.out), d_raw = poisoned(count, k.out);
      cuda::UpEpilogueArgs a;
      a.N = N;
      a.H = H;
      a.W = W;
      a.C = C;
      a.TH = H + 1;
      a.TW = W + 1;
      a.pad0 = 1;
      a.num_sms = k.num_sms;
      a.t_dtype = DType::f16;
      a.t = d_t.get();
      a.filter = d_f.as<float>();
      a.filter1d = d_f1.as<float>();
      a.fsize = 4;
      a.dcoefs = d_dd.as<float>();
      a.dcoefs_stride = C;
      if (k.noise) {
        a.noise = d_noise.as<float>();
        a.noise_stride_n = k.per_sample ? int64_t(H) * W : 0;
        a.noise_strength = 0.7f;
      }
      a.bias = d_b.as<float>();
      a.gain = static_cast<float>(std::sqrt(2.0));
      a.clamp = k.clamp ? 2.5f : -1.0f;
      a.out_dtype = k.out;
      a.out = d_out.get();
      a.out_scale = d_sc.as<float>();
      a.out_scale_stride = C;
      a.raw = k.raw ? d_raw.get() : nullptr;
      a.sep_columns = cols;
      EXPECT_EQ(cuda::upconv_epilogue_f16_supports(a), cols == 4);  // the two kernels, not one twice
      cuda::upconv_epilogue(a, nullptr);
      SG2_CUDA_CHECK(cudaDeviceSynchronize());
      got[cols / 4].push_back(from_device(d_out.get(), {N, H, W, C}, k.out));
      if (k.raw) got[cols / 4].push_back(from_device(d_raw.get(), {N, H, W, C}, k.out));
    }
    for (size_t i = 0; i < got[0].size(); ++i)
      EXPECT_EQ(std::memcmp(got[0][i].data(), got[1][i].data(), size_t(got[0][i].numel()) * sizeof(float)), 0)
          << "N=" << N << " C=" << C << " " << H << "x" << W << (i ? " raw" : " out");
  }
}

TEST(GpuKernels, Upsample2dAndConstInputMatchReference) {
  SG2_REQUIRE_GPU();
  const std::vector<float> filter = make_filter2d({1, 3, 3, 1});
  auto d_f = to_device(filter);
  for (DType dt : {DType::f32, DType::f16}) {
    Tensor x = randn({2, 5, 4, 8}, 11);
    if (dt == DType::f16) x = round_f16(x);
    Tensor ref = ref::upsample2d(x, filter, 4);
    for (auto& v : ref.vec()) v = v * 0.7f;
    auto d_x = to_device(to_nhwc(x), dt);
    auto d_y = poisoned(size_t(2) * 5 * 8 * 16);
    cuda::upsample2d_nhwc(d_x.get(), dt, 2, 4, 8, 5, d_f.as<float>(), 4, 0.7f, d_y.as<float>(), nullptr);
    EXPECT_TRUE(
        near_rel(to_nchw(from_device(d_y.get(), {2, 8, 16, 5})), ref, 1e-6, std::string("upsample2d ") + dt_name(dt)));
  }
  Tensor k = randn({13, 4, 4}, 12), s = randn({3, 16}, 13);
  Tensor ref({3, 13, 4, 4});
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 13; ++c)
      for (int p = 0; p < 16; ++p)
        ref[(int64_t(n) * 13 + c) * 16 + p] = k[int64_t(c) * 16 + p] * s[int64_t(n) * 16 + c];
  auto d_k = to_device(k), d_s = to_device(s);
  auto d_o = poisoned(3 * 13 * 16);
  cuda::modulate_const(d_k.as<float>(), 13, 4, 4, d_s.as<float>(), 16, 3, DType::f32, d_o.get(), nullptr);
  EXPECT_TRUE(near_rel(to_nchw(from_device(d_o.get(), {3, 4, 4, 13})), ref, 0.0, "modulate_const"));
}

// --- convolutions (direct kernel and cuDNN) ------------------------------------------------

namespace {

struct ConvCase {
  int N, H, Cin, Cout, k;
  bool transposed;
};

/// conv on the device vs the CPU reference. weight [Cout, Cin, k, k] (PyTorch order).
enum class ConvImpl { direct, cudnn, simt, tc, tc_split8 };

/// Returns max |device - reference| / scale_of(reference).
double check_conv(const ConvCase& c, DType dt, cuda::ConvMath math, ConvImpl impl, uint32_t seed,
                  cuda::TcConvArgs::Impl tc_impl = cuda::TcConvArgs::Impl::mma) {
  Tensor x = randn({c.N, c.Cin, c.H, c.H}, seed), w = randn({c.Cout, c.Cin, c.k, c.k}, seed + 1, 0.2f);
  if (dt == DType::f16) {
    x = round_f16(x);
    w = round_f16(w);
  }
  Tensor ref = c.transposed ? ref::conv_transpose2d_stride2(x, w, false) : ref::conv2d(x, w, c.k / 2, true);
  // device filter layouts: forward [Cout, k, k, Cin]; transposed [Cin, k, k, Cout]
  Tensor wd({c.transposed ? c.Cin : c.Cout, c.k, c.k, c.transposed ? c.Cout : c.Cin});
  for (int o = 0; o < c.Cout; ++o)
    for (int i = 0; i < c.Cin; ++i)
      for (int kk = 0; kk < c.k * c.k; ++kk) {
        const float v = w[(int64_t(o) * c.Cin + i) * c.k * c.k + kk];
        if (c.transposed)
          wd[(int64_t(i) * c.k * c.k + kk) * c.Cout + o] = v;
        else
          wd[(int64_t(o) * c.k * c.k + kk) * c.Cin + i] = v;
      }
  auto d_x = to_device(to_nhwc(x), dt), d_w = to_device(wd, dt);
  const int OH = static_cast<int>(ref.dim(2));
  auto d_y = poisoned(size_t(c.N) * c.Cout * OH * OH, dt);
  std::string how;
  if (impl == ConvImpl::tc || impl == ConvImpl::tc_split8) {
    // the operands by the math: fp32_strict 3xTF32 (hi, lo), tf32 (hi), fp16 (the fp16 weights)
    using Ops = cuda::TcConvArgs::Operands;
    const Ops ops = math == cuda::ConvMath::fp32_strict ? Ops::tf32x3
                    : math == cuda::ConvMath::tf32      ? Ops::tf32
                                                        : Ops::f16;
    std::vector<float> hi(size_t(wd.numel())), lo(size_t(wd.numel()));
    if (c.k == 1 && ops == Ops::f16)  // the 1x1: the device filter [Cout, 1, 1, Cin] is the packing
      hi = wd.vec();
    else if (c.k == 1)
      cuda::tf32x3_split_weights(wd.data(), hi.size(), hi.data(), lo.data());
    else if (ops == Ops::f16)
      cuda::tc_pack_weights(wd.data(), c.Cin, c.Cout, c.transposed, hi.data());
    else
      cuda::tf32x3_pack_weights(wd.data(), c.Cin, c.Cout, c.transposed, hi.data(), lo.data());
    auto d_hi = to_device(Tensor({int64_t(hi.size())}, hi), dt), d_lo = to_device(lo);
    cuda::TcConvArgs a;
    a.operands = ops;
    a.N = c.N;
    a.H = a.W = c.H;
    a.Cin = c.Cin;
    a.Cout = c.Cout;
    a.transposed = c.transposed;
    a.k = c.k;
    a.x = d_x.get();
    a.w_hi = d_hi.get();
    a.w_lo = ops == Ops::tf32x3 ? d_lo.as<float>() : nullptr;
    a.y = d_y.get();
    // split-K by 8: uneven ranges, and empty ones where a phase has fewer than 8 chunks
    if (impl == ConvImpl::tc_split8) a.splits = 8;
    a.impl = tc_impl;
    a.encode_tensor_map = gpu_caps().encode_tensor_map;
    cuda::DeviceBuffer partial(std::max<size_t>(cuda::tc_conv_workspace(a), 16), nullptr);
    SG2_CUDA_CHECK(cudaMemset(partial.get(), 0xff, partial.bytes()));  // NaN: every partial must be written
    a.partial = partial.as<float>();
    if (!cuda::tc_conv_supports(a)) {
      ADD_FAILURE() << "the tensor-core kernel refuses a shape it should take";
      return 1.0;
    }
    cuda::tc_conv(a, nullptr);
    SG2_CUDA_CHECK(cudaDeviceSynchronize());
    how = std::string(ops == Ops::tf32x3 ? "3xtf32"
                      : ops == Ops::tf32 ? "tf32"
                                         : "fp16") +
          (a.impl == cuda::TcConvArgs::Impl::wgmma ? " wgmma" : " mma.sync") + (a.splits > 1 ? " split-k 8" : "") +
          (c.k == 1 ? " 1x1" : "");
  } else if (impl == ConvImpl::simt) {
    cuda::SimtConvArgs a;
    a.N = c.N;
    a.H = a.W = c.H;
    a.Cin = c.Cin;
    a.Cout = c.Cout;
    a.transposed = c.transposed;
    a.x = d_x.as<float>();
    a.w = d_w.as<float>();
    a.y = d_y.as<float>();
    if (!cuda::conv2d_simt_supports(a)) {
      ADD_FAILURE() << "the SIMT kernel refuses a shape it should take";
      return 1.0;
    }
    cuda::conv2d_simt(a, nullptr);
    how = "simt";
  } else if (impl == ConvImpl::cudnn) {
    cuda::Stream stream;
    cuda::CudnnHandle h(stream.get());
    cuda::ConvShape s;
    s.N = c.N;
    s.H = s.W = c.H;
    s.Cin = c.Cin;
    s.Cout = c.Cout;
    s.k = c.k;
    s.pad = c.transposed ? 0 : c.k / 2;
    s.transposed = c.transposed;
    s.dtype = dt;
    cuda::ConvChoice cudnn_only;  // cuDNN's algorithms, then the direct kernel
    cudnn_only.impl = cuda::ConvImpl::cudnn;
    cudnn_only.fallback = cuda::ConvImpl::direct;
    cuda::Conv conv(h.get(), s, math, cudnn_only, gpu_caps(), size_t(256) << 20);
    cuda::DeviceBuffer ws(std::max<size_t>(conv.max_candidate_workspace(), 1), nullptr);
    conv.select(d_x.get(), d_w.get(), d_y.get(), ws.get(), ws.bytes(), stream.get());
    SG2_CUDA_CHECK(cudaMemset(d_y.get(), 0xff, d_y.bytes()));
    conv.run(d_x.get(), d_w.get(), d_y.get(), ws.get(), ws.bytes(), stream.get());
    stream.sync();
    how = conv.describe();
    std::cout << "  conv " << (c.transposed ? "transposed " : "forward ") << c.N << "x" << c.H << " " << c.Cin << "->"
              << c.Cout << " k" << c.k << " " << dt_name(dt) << ": " << how << "\n";
  } else {
    cuda::Conv2dArgs a;
    a.N = c.N;
    a.H = a.W = c.H;
    a.Cin = c.Cin;
    a.Cout = c.Cout;
    a.k = c.k;
    a.pad = c.k / 2;
    a.transposed = c.transposed;
    a.dtype = dt;
    a.x = d_x.get();
    a.w = d_w.get();
    a.y = d_y.get();
    cuda::conv2d_direct(a, nullptr);
    how = "direct";
  }
  // fp32: summation order only; tf32: 10-bit significand operands; fp16: output rounding
  const double tol = math == cuda::ConvMath::fp32_strict ? 2e-5 : 4e-3;
  const Tensor got = to_nchw(from_device(d_y.get(), {c.N, OH, OH, c.Cout}, dt));
  double err = 0.0;
  for (int64_t i = 0; i < got.numel(); ++i) err = std::max(err, double(std::fabs(got[i] - ref[i])));
  err /= scale_of(ref);
  EXPECT_TRUE(near_rel(got, ref, tol,
                       std::string(c.transposed ? "transposed" : "forward") + " N=" + std::to_string(c.N) +
                           " H=" + std::to_string(c.H) + " " + std::to_string(c.Cin) + "->" + std::to_string(c.Cout) +
                           " k=" + std::to_string(c.k) + " " + dt_name(dt) + " via " + how));
  return err;
}

const ConvCase kConvCases[] = {{1, 4, 3, 5, 3, false},   {3, 8, 13, 7, 3, false},   {2, 16, 32, 32, 3, false},
                               {1, 4, 5, 3, 3, true},    {3, 8, 16, 13, 3, true},   {2, 16, 64, 32, 3, true},
                               {2, 8, 24, 40, 1, false}, {1, 32, 64, 64, 3, false}, {1, 32, 64, 32, 3, true}};
// shapes the SIMT fp32 kernel takes (Cin % 8, Cout % 32): partial tiles, both channel tilings
const ConvCase kSimtCases[] = {{2, 16, 32, 32, 3, false}, {2, 16, 64, 32, 3, true},   {1, 32, 64, 64, 3, false},
                               {1, 32, 64, 32, 3, true},  {3, 8, 24, 96, 3, false},   {5, 8, 16, 32, 3, true},
                               {2, 4, 8, 64, 3, true},    {1, 4, 512, 128, 3, false}, {3, 64, 32, 32, 3, true},
                               {3, 5, 16, 128, 3, true},  {2, 7, 8, 256, 3, false},   {1, 3, 24, 384, 3, true}};

}  // namespace

TEST(GpuKernels, DirectConvMatchesReference) {
  SG2_REQUIRE_GPU();
  uint32_t seed = 500;
  for (const ConvCase& c : kConvCases) {
    check_conv(c, DType::f32, cuda::ConvMath::fp32_strict, ConvImpl::direct, seed += 2);
    check_conv(c, DType::f16, cuda::ConvMath::fp16, ConvImpl::direct, seed += 2);
  }
}

TEST(GpuKernels, CudnnConvMatchesReference) {
  SG2_REQUIRE_GPU();
  uint32_t seed = 700;
  for (const ConvCase& c : kConvCases) {
    check_conv(c, DType::f32, cuda::ConvMath::fp32_strict, ConvImpl::cudnn, seed += 2);
    check_conv(c, DType::f32, cuda::ConvMath::tf32, ConvImpl::cudnn, seed += 2);
    check_conv(c, DType::f16, cuda::ConvMath::fp16, ConvImpl::cudnn, seed += 2);
  }
}

TEST(GpuKernels, SimtFp32ConvMatchesReference) {
  SG2_REQUIRE_GPU();
  uint32_t seed = 900;
  for (const ConvCase& c : kSimtCases)
    check_conv(c, DType::f32, cuda::ConvMath::fp32_strict, ConvImpl::simt, seed += 2);
}

// shapes the 3xTF32 kernel takes (Cin % 32, Cout % 32): partial tiles, both channel tilings,
// several chunks per tap, odd sizes, phases of every size
const ConvCase kTcCases[] = {{2, 16, 32, 32, 3, false},  {2, 16, 64, 32, 3, true},   {1, 32, 64, 64, 3, false},
                             {1, 32, 64, 32, 3, true},   {3, 8, 96, 96, 3, false},   {5, 8, 32, 32, 3, true},
                             {2, 4, 32, 64, 3, true},    {1, 4, 512, 128, 3, false}, {3, 64, 32, 32, 3, true},
                             {3, 5, 32, 128, 3, true},   {2, 7, 64, 256, 3, false},  {1, 3, 96, 384, 3, true},
                             {1, 13, 160, 96, 3, false}, {2, 16, 64, 32, 1, false},  {3, 8, 128, 256, 1, false},
                             {1, 13, 96, 64, 1, false},  {2, 32, 512, 512, 1, false}};

/// The 3xTF32 kernel needs sm_80+ and 108 KiB of shared memory per block (not sm_86/sm_89).
constexpr const char* kNoTf32x3 =
    "this GPU cannot run the 3xTF32 kernel (sm_80+ with 108 KiB of shared memory per block)";

TEST(GpuKernels, TensorCoreConvMatchesReference) {
  SG2_REQUIRE_GPU();
  if (!tf32x3_runs_here(32, 64)) GTEST_SKIP() << kNoTf32x3;
  using Impl = cuda::TcConvArgs::Impl;
  const bool wgmma = gpu_caps().wgmma;
  std::cout << "  wgmma (sm_90a) kernel: " << (wgmma ? "tested" : "not available on this GPU or build") << "\n";
  uint32_t seed = 950;
  for (const ConvCase& c : kTcCases) {
    // fp32 (3xTF32), TF32, and fp16 where Cin is a multiple of 64 (128-byte chunks of fp16)
    for (cuda::ConvMath math : {cuda::ConvMath::fp32_strict, cuda::ConvMath::tf32, cuda::ConvMath::fp16}) {
      const bool f16 = math == cuda::ConvMath::fp16;
      if (f16 && c.Cin % 64 != 0) continue;
      const DType dt = f16 ? DType::f16 : DType::f32;
      check_conv(c, dt, math, ConvImpl::tc, seed += 2, Impl::mma);
      check_conv(c, dt, math, ConvImpl::tc_split8, seed += 2, Impl::mma);
      if (wgmma && c.Cout % 64 == 0 && c.k == 3) {  // the 1x1 runs on mma.sync only
        check_conv(c, dt, math, ConvImpl::tc, seed += 2, Impl::wgmma);
        check_conv(c, dt, math, ConvImpl::tc_split8, seed += 2, Impl::wgmma);
      }
    }
  }
}

// The property batch invariance rests on: an image's output from the tensor-core kernel has the same
// bits alone (N = 1) and at any position of a larger batch, with the same split-K, in every operand
// mode and both implementations, forward and transposed.
TEST(GpuKernels, TensorCoreConvIsBatchInvariant) {
  SG2_REQUIRE_GPU();
  if (!tf32x3_runs_here(32, 64)) GTEST_SKIP() << kNoTf32x3;
  using Ops = cuda::TcConvArgs::Operands;
  using Impl = cuda::TcConvArgs::Impl;
  const ConvCase cases[] = {{5, 8, 128, 128, 3, false},
                            {5, 8, 128, 64, 3, true},
                            {5, 13, 64, 128, 3, false},
                            {5, 4, 512, 128, 3, true},
                            {5, 16, 128, 64, 1, false}};
  int checked = 0;
  for (const ConvCase& c : cases)
    for (Ops ops : {Ops::tf32x3, Ops::tf32, Ops::f16})
      for (Impl impl : {Impl::mma, Impl::wgmma})
        for (int splits : {1, 4}) {
          if (impl == Impl::wgmma && (!gpu_caps().wgmma || c.Cout % 64 != 0 || c.k == 1)) continue;
          const size_t esz = ops == Ops::f16 ? 2 : 4;
          const int OH = c.transposed ? 2 * c.H + 1 : c.H;
          const size_t x_per = size_t(c.H) * c.H * c.Cin, y_per = size_t(OH) * OH * c.Cout;
          const Tensor x = randn({int64_t(c.N * x_per)}, 4000 + checked),
                       w = randn({int64_t(c.k) * c.k * c.Cin * c.Cout}, 17, 0.05f);
          const DType dt = ops == Ops::f16 ? DType::f16 : DType::f32;
          std::vector<float> hi(size_t(w.numel())), lo(size_t(w.numel()));
          cuda::tf32x3_split_weights(w.data(), size_t(w.numel()), hi.data(), lo.data());
          auto d_x = to_device(x, dt), d_hi = to_device(ops == Ops::f16 ? w : Tensor({w.numel()}, hi), dt),
               d_lo = to_device(lo);
          auto run = [&](int n, int first) {
            auto d_y = poisoned(size_t(n) * y_per, dt);
            cuda::TcConvArgs a;
            a.operands = ops;
            a.impl = impl;
            a.encode_tensor_map = gpu_caps().encode_tensor_map;
            a.N = n;
            a.H = a.W = c.H;
            a.Cin = c.Cin;
            a.Cout = c.Cout;
            a.transposed = c.transposed;
            a.k = c.k;
            a.x = static_cast<const char*>(d_x.get()) + size_t(first) * x_per * esz;
            a.w_hi = d_hi.get();
            a.w_lo = ops == Ops::tf32x3 ? d_lo.as<float>() : nullptr;
            a.y = d_y.get();
            a.splits = splits;
            cuda::DeviceBuffer partial(std::max<size_t>(cuda::tc_conv_workspace(a), 16), nullptr);
            a.partial = partial.as<float>();
            EXPECT_TRUE(cuda::tc_conv_supports(a));
            cuda::tc_conv(a, nullptr);
            std::vector<char> out(size_t(n) * y_per * esz);
            SG2_CUDA_CHECK(cudaMemcpy(out.data(), d_y.get(), out.size(), cudaMemcpyDeviceToHost));
            return out;
          };
          const std::vector<char> all = run(c.N, 0);
          for (int i : {0, 3, c.N - 1}) {
            const std::vector<char> one = run(1, i);
            EXPECT_EQ(std::memcmp(one.data(), all.data() + size_t(i) * y_per * esz, one.size()), 0)
                << "image " << i << " of " << c.N << ", ops " << int(ops) << ", impl " << int(impl) << ", splits "
                << splits << (c.transposed ? ", transposed" : ", forward") << " Cin " << c.Cin << " Cout " << c.Cout;
          }
          const std::vector<char> tail = run(2, c.N - 2);  // the last two images as a batch of 2
          EXPECT_EQ(std::memcmp(tail.data(), all.data() + size_t(c.N - 2) * y_per * esz, tail.size()), 0);
          ++checked;
        }
  std::cout << "  tensor-core conv batch invariance: " << checked << " configurations checked\n";
  EXPECT_GE(checked, 24);
}

// 256-pixel tiles (kernels/tc_conv_sm90.cu use_256_pixels: each warpgroup two 64-row halves with their
// own accumulator chains on the same filter tile) give the bits of 128-pixel tiles (checked against
// the CPU reference above) in the chained modes, 64 and 128 channels per block, every box shape (rows
// of 64 and 256, one and four samples per tile), split-K as partials, and last tiles partly outside
// the batch.
TEST(GpuKernels, TensorCoreWgmma256PixelTilesAgreeBitForBit) {
  SG2_REQUIRE_GPU();
  if (!gpu_caps().wgmma) GTEST_SKIP() << "the wgmma kernel does not run on this GPU or build";
  using Ops = cuda::TcConvArgs::Operands;
  struct Case {
    int N, H, Cin, Cout;
    Ops ops;
    int bn, splits;
  };
  const Case cases[] = {{5, 64, 64, 128, Ops::f16, 0, 1},    // four rows of 64 per tile
                        {5, 64, 64, 128, Ops::tf32, 0, 1},   //
                        {5, 64, 128, 64, Ops::f16, 64, 1},   // 64 channels per block
                        {2, 256, 64, 128, Ops::f16, 0, 1},   // one row of 256 per tile
                        {3, 8, 64, 128, Ops::f16, 0, 1},     // four samples per tile, the first tile partly outside
                        {9, 32, 256, 128, Ops::f16, 0, 4},   // split-K as partials
                        {9, 32, 128, 128, Ops::tf32, 0, 8},  // splits of 5 chunks, the last of 1
                        {5, 16, 64, 128, Ops::tf32, 0, 1},   // one sample per tile
                        {5, 8, 64, 64, Ops::tf32, 64, 1},    // four samples per tile, the second tile partly outside
                        {1, 512, 64, 128, Ops::f16, 0, 1}};  // half a row per tile (column origins 0 and 256)
  int checked = 0;
  for (const Case& c : cases) {
    const DType dt = c.ops == Ops::f16 ? DType::f16 : DType::f32;
    const size_t out = size_t(c.N) * c.H * c.H * c.Cout;
    const Tensor x = randn({int64_t(c.N) * c.H * c.H * c.Cin}, 7100 + checked),
                 w = randn({int64_t(9) * c.Cin * c.Cout}, 7200 + checked, 0.05f);
    std::vector<float> hi(size_t(w.numel())), lo(size_t(w.numel()));
    cuda::tf32x3_split_weights(w.data(), size_t(w.numel()), hi.data(), lo.data());
    auto d_x = to_device(x, dt), d_w = to_device(c.ops == Ops::f16 ? w : Tensor({w.numel()}, hi), dt);
    auto run = [&](int pixels) {
      cuda::TcConvArgs a = wgmma_conv_args(c.ops, c.N, c.H, c.Cin, c.Cout, false, d_x.get(), d_w.get(), nullptr);
      a.splits = c.splits;
      a.fold = 0;
      a.block_channels = c.bn;
      a.block_pixels = pixels;
      return run_tc_conv(a, out, dt);
    };
    {  // the launch really runs 256-pixel tiles for this case (no silent fallback to 128)
      cuda::TcConvArgs a = wgmma_conv_args(c.ops, c.N, c.H, c.Cin, c.Cout, false, nullptr, nullptr, nullptr);
      a.splits = c.splits;
      a.block_channels = c.bn;
      a.block_pixels = 256;
      EXPECT_EQ(cuda::tc_wgmma_block_pixels(a, cuda::tc_wgmma_bn(a)), 256) << c.N << "x" << c.H << " " << c.Cout;
    }
    const std::vector<char> tiles128 = run(128), tiles256 = run(256);
    EXPECT_EQ(std::memcmp(tiles128.data(), tiles256.data(), tiles128.size()), 0)
        << c.N << "x" << c.H << "x" << c.H << " " << c.Cin << "->" << c.Cout << ", ops " << int(c.ops) << ", " << c.bn
        << " channels per block, split-k " << c.splits;
    ++checked;
  }
  std::cout << "  256-pixel wgmma tiles: " << checked << " configurations bit for bit\n";
}

// The 3xTF32 kernel is as accurate as FMA fp32 (kernels/tc_conv.h) and far more accurate
// than plain TF32, on the shapes where it matters (512 channels: 4608 terms per output).
TEST(GpuKernels, Tf32x3ConvIsAsAccurateAsFma) {
  SG2_REQUIRE_GPU();
  if (!tf32x3_runs_here(32, 64)) GTEST_SKIP() << kNoTf32x3;
  const ConvCase cases[] = {{2, 8, 512, 64, 3, false},
                            {2, 8, 512, 64, 3, true},
                            {3, 16, 256, 96, 3, false},
                            {1, 16, 512, 512, 3, false},
                            {1, 7, 64, 32, 3, true}};
  uint32_t seed = 800;
  for (const ConvCase& c : cases) {
    const double fma = check_conv(c, DType::f32, cuda::ConvMath::fp32_strict, ConvImpl::simt, seed);
    const double tc =
        check_conv(c, DType::f32, cuda::ConvMath::fp32_strict, ConvImpl::tc, seed, cuda::TcConvArgs::Impl::mma);
    const double wg =
        gpu_caps().wgmma && c.Cout % 64 == 0
            ? check_conv(c, DType::f32, cuda::ConvMath::fp32_strict, ConvImpl::tc, seed, cuda::TcConvArgs::Impl::wgmma)
            : -1.0;
    const double tf32 = check_conv(c, DType::f32, cuda::ConvMath::tf32, ConvImpl::cudnn, seed);
    std::cout << "  conv " << c.Cin << "->" << c.Cout << (c.transposed ? " transposed" : " forward")
              << ": max|err|/scale simt (fma) " << fma << ", 3xtf32 mma.sync " << tc << ", 3xtf32 wgmma "
              << (wg < 0 ? std::string("-") : (std::ostringstream() << wg).str()) << ", cudnn tf32 " << tf32 << "\n";
    EXPECT_LE(tc, std::max(3.0 * fma, 1e-6)) << "3xTF32 should be as accurate as FMA fp32";
    EXPECT_LE(wg, std::max(3.0 * fma, 1e-6)) << "3xTF32 (wgmma) should be as accurate as FMA fp32";
    EXPECT_LT(tc * 30.0, tf32) << "3xTF32 should be far more accurate than plain TF32";
  }
}

// The host-side filter split of the 3xTF32 kernel (runs without a GPU): hi has 10 significand
// bits, hi + lo == w exactly, |lo| <= half an ulp of hi, and rounding never overflows.
// Which convolutions the wgmma kernel feeds by TMA (host only, runs without a GPU): each 128-pixel
// tile must be exactly one box of [N, H, W, Cin]; everything else keeps cp.async. Correctness of
// both paths: TensorCoreConvMatchesReference (W = 32, 16, 8, 4 take the TMA path, W = 7 and the
// transposed cases the cp.async one).
TEST(GpuKernels, TensorCoreWgmmaActivationBoxes) {
  struct Case {
    int N, H, W;
    bool transposed, tma;
    uint32_t box[4];
  };
  const Case cases[] = {
      {32, 64, 64, false, true, {32, 64, 2, 1}},  // b64: two rows per tile
      {1, 32, 32, false, true, {32, 32, 4, 1}},   // b32
      {2, 8, 8, false, true, {32, 8, 8, 2}},      // two whole samples per tile
      {1, 4, 4, false, true, {32, 4, 4, 8}},      // eight samples per tile (N = 1: the rest zero-filled)
      {1, 1, 256, false, true, {32, 128, 1, 1}},  // half a row per tile
      {3, 256, 512, false, true, {32, 128, 1, 1}},
      {1, 3, 32, false, false, {}},   // 4 rows per tile, H = 3: tiles would straddle samples
      {1, 6, 32, false, false, {}},   // 4 rows per tile, H = 6
      {2, 7, 7, false, false, {}},    // W does not divide 128
      {1, 1, 192, false, false, {}},  // 128 does not divide W
      {32, 32, 32, true, false, {}},  // transposed: phase tiles are not boxes
  };
  for (const Case& c : cases) {
    cuda::TcConvArgs a;
    a.N = c.N;
    a.H = c.H;
    a.W = c.W;
    a.Cin = 512;
    a.Cout = 512;
    a.transposed = c.transposed;
    uint32_t box[4] = {0, 0, 0, 0};
    const std::string what = std::to_string(c.N) + "x" + std::to_string(c.H) + "x" + std::to_string(c.W) +
                             (c.transposed ? " transposed" : "");
    ASSERT_EQ(cuda::tc_wgmma_activation_box(a, box), c.tma) << what;
    if (!c.tma) continue;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(box[i], c.box[i]) << what << " box[" << i << "]";
    EXPECT_EQ(box[1] * box[2] * box[3], 128u) << what << ": a tile is 128 pixels";
  }
}

// When the launch runs 256-pixel tiles (tc_wgmma_block_pixels; host only, no GPU needed): the
// chained modes over 64 or 128 channels per block, not folded, every 256-pixel tile a box; by
// default 128-channel blocks where the grid of 256-pixel tiles fills the GPU twice, or when asked.
TEST(GpuKernels, TensorCoreWgmma256PixelTileRule) {
  using Ops = cuda::TcConvArgs::Operands;
  struct Case {
    const char* what;
    int N, H, W, Cout, bn;
    Ops ops;
    int block_pixels, num_sms;
    bool transposed, fold;
    int want;
  };
  const Case cases[] = {
      {"ffhq b256.conv1, batch 32", 32, 256, 256, 128, 128, Ops::f16, 0, 132, false, false, 256},
      {"the same in tf32", 32, 256, 256, 128, 128, Ops::tf32, 0, 132, false, false, 256},
      {"the same in 3xTF32 (no registers for two halves)", 32, 256, 256, 128, 128, Ops::tf32x3, 0, 132, false, false,
       128},
      {"no SM count: no default", 32, 256, 256, 128, 128, Ops::f16, 0, 0, false, false, 128},
      {"one image: 256 tiles < 2 x 132", 1, 256, 256, 128, 128, Ops::f16, 0, 132, false, false, 128},
      {"two images: 512 tiles", 2, 256, 256, 128, 128, Ops::f16, 0, 132, false, false, 256},
      {"asked for 128", 32, 256, 256, 128, 128, Ops::f16, 128, 132, false, false, 128},
      {"asked for 256 on a small grid", 1, 8, 8, 128, 128, Ops::f16, 256, 132, false, false, 256},
      {"64 channels per block: only when asked", 32, 256, 256, 64, 64, Ops::f16, 0, 132, false, false, 128},
      {"64 channels per block, asked", 32, 256, 256, 64, 64, Ops::f16, 256, 132, false, false, 256},
      {"256 channels per block", 32, 64, 64, 512, 256, Ops::f16, 256, 132, false, false, 128},
      {"folded splits", 32, 256, 256, 128, 128, Ops::f16, 256, 132, false, true, 128},
      {"transposed (no boxes)", 32, 128, 128, 128, 128, Ops::f16, 256, 132, true, false, 128},
      {"no 256-pixel box (W = 192)", 4, 64, 192, 128, 128, Ops::f16, 256, 132, false, false, 128},
  };
  for (const Case& c : cases) {
    cuda::TcConvArgs a;
    a.operands = c.ops;
    a.N = c.N;
    a.H = c.H;
    a.W = c.W;
    a.Cin = 128;
    a.Cout = c.Cout;
    a.transposed = c.transposed;
    a.fold_splits = c.fold;
    a.block_pixels = c.block_pixels;
    a.num_sms = c.num_sms;
    EXPECT_EQ(cuda::tc_wgmma_block_pixels(a, c.bn), c.want) << c.what;
  }
}

TEST(GpuKernels, Tf32x3WeightSplitIsExact) {
  std::vector<float> w = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          1.0f + 0x1p-11f,
                          1.0f + 0x1p-12f,
                          0.1f,
                          -3.14159265f,
                          1e-30f,
                          -7.5e-39f /* subnormal */,
                          3.4028235e38f,
                          -3.4028235e38f,
                          65504.0f,
                          1.0f - 0x1p-24f};
  for (int i = 0; i < 1000; ++i)
    w.push_back(std::ldexp(static_cast<float>(std::sin(i * 12.9898) * 43758.5453), i % 60 - 30));
  std::vector<float> hi(w.size()), lo(w.size());
  cuda::tf32x3_split_weights(w.data(), w.size(), hi.data(), lo.data());
  for (size_t i = 0; i < w.size(); ++i) {
    uint32_t b = 0;
    std::memcpy(&b, &hi[i], 4);
    EXPECT_EQ(b & 0x1fffu, 0u) << w[i];
    EXPECT_TRUE(std::isfinite(hi[i])) << w[i];
    EXPECT_EQ(hi[i] + lo[i], w[i]) << w[i];
    EXPECT_LE(std::fabs(double(lo[i])), std::ldexp(std::fabs(double(w[i])), -10)) << w[i];
  }
}
