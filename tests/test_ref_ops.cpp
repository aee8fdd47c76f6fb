// The CPU reference ops against direct naive definitions (spec §3-§6), on random inputs and odd
// shapes, including asymmetric filters.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/plan.h"
#include "kernels/ref/bias_act.h"
#include "kernels/ref/fully_connected.h"
#include "kernels/ref/modulated_conv2d.h"
#include "kernels/ref/upfirdn2d.h"
#include "sg2/error.h"
#include "test_util.h"

using namespace sg2;
using namespace sg2::ref;

namespace {

Tensor randn(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Tensor t(std::move(shape));
  for (auto& v : t.vec()) v = d(g);
  return t;
}

// upfirdn2d by its definition: zero insertion, pad (negative crops), filter flipped unless
// flip_filter, valid correlation, downsample. Double accumulation.
Tensor naive_upfirdn2d(const Tensor& x, const std::vector<float>& f, int fh, int fw, const Upfirdn2dArgs& a) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t UH = H * a.up_y, UW = W * a.up_x;
  const int64_t PH = UH + a.pad_y0 + a.pad_y1, PW = UW + a.pad_x0 + a.pad_x1;
  std::vector<double> P(static_cast<size_t>(N * C * PH * PW), 0.0);
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) {
        const int64_t py = i * a.up_y + a.pad_y0, px = j * a.up_x + a.pad_x0;
        if (py >= 0 && py < PH && px >= 0 && px < PW) P[size_t((nc * PH + py) * PW + px)] = x[(nc * H + i) * W + j];
      }
  const int64_t ZH = PH - fh + 1, ZW = PW - fw + 1;
  const int64_t OH = (ZH - 1) / a.down_y + 1, OW = (ZW - 1) / a.down_x + 1;
  Tensor out({N, C, OH, OW});
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double acc = 0;
        for (int i = 0; i < fh; ++i)
          for (int j = 0; j < fw; ++j) {
            const double g = a.flip_filter ? f[size_t(i * fw + j)] : f[size_t((fh - 1 - i) * fw + (fw - 1 - j))];
            acc += P[size_t((nc * PH + oy * a.down_y + i) * PW + ox * a.down_x + j)] * g * a.gain;
          }
        out[(nc * OH + oy) * OW + ox] = static_cast<float>(acc);
      }
  return out;
}

// Modulated conv by its definition (spec §3.1, §3.4): per-sample weights; up = 2 as
// Z = upfirdn2d(x, f, up 2, pad (3,2,3,2), gain 4) followed by a valid true convolution.
Tensor naive_modconv(const Tensor& x, const Tensor& w, const Tensor& s, const std::vector<float>& f, int fs, int up,
                     bool demod, bool flip_weight, int padding) {
  const int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0), k = w.dim(2);
  Tensor z = x;
  int64_t pad = padding;
  if (up == 2) {
    Upfirdn2dArgs a;
    a.up_x = a.up_y = 2;
    a.pad_x0 = a.pad_y0 = padding + (fs + 1) / 2;
    a.pad_x1 = a.pad_y1 = padding + (fs - 2) / 2;
    a.gain = 4.0f;
    z = naive_upfirdn2d(x, f, fs, fs, a);
    pad = 0;
  }
  const int64_t H = z.dim(2), W = z.dim(3);
  const int64_t OH = H + 2 * pad - k + 1, OW = W + 2 * pad - k + 1;
  Tensor y({N, O, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      double ss = 0;
      for (int64_t i = 0; i < I; ++i)
        for (int64_t t = 0; t < k * k; ++t) {
          double v = double(w[(o * I + i) * k * k + t]) * s[n * I + i];
          ss += v * v;
        }
      const double d = demod ? 1.0 / std::sqrt(ss + 1e-8) : 1.0;
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = 0;
          for (int64_t i = 0; i < I; ++i)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t iy = oy + ky - pad, ix = ox + kx - pad;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const int64_t wy = flip_weight ? ky : k - 1 - ky, wx = flip_weight ? kx : k - 1 - kx;
                acc +=
                    double(w[((o * I + i) * k + wy) * k + wx]) * s[n * I + i] * d * z[((n * I + i) * H + iy) * W + ix];
              }
          y[((n * O + o) * OH + oy) * OW + ox] = static_cast<float>(acc);
        }
    }
  return y;
}

}  // namespace

TEST(RefOps, BiasActEveryActivationAndOrder) {
  const char* names[] = {"linear", "relu", "lrelu", "tanh", "sigmoid", "elu", "selu", "softplus", "swish"};
  Tensor x = randn({3, 5, 2, 3}, 1, 2.0f);
  Tensor b = randn({5}, 2);
  for (const char* nm : names) {
    ref::Activation act = ref::parse_activation(nm);
    for (float clamp : {-1.0f, 0.5f}) {
      Tensor y = bias_act(x, &b, 1, act, {}, 1.7f, clamp >= 0 ? std::optional<float>(clamp) : std::nullopt);
      for (int64_t i = 0; i < x.numel(); ++i) {
        double v = double(x[i]) + b[(i / 6) % 5];
        double a;
        std::string n(nm);
        if (n == "linear")
          a = v;
        else if (n == "relu")
          a = std::max(v, 0.0);
        else if (n == "lrelu")
          a = v > 0 ? v : 0.2 * v;
        else if (n == "tanh")
          a = std::tanh(v);
        else if (n == "sigmoid")
          a = 1 / (1 + std::exp(-v));
        else if (n == "elu")
          a = v >= 0 ? v : std::exp(v) - 1;
        else if (n == "selu")
          a = v >= 0 ? 1.0507009873554805 * v : 1.0507009873554805 * 1.6732632423543772 * (std::exp(v) - 1);
        else if (n == "softplus")
          a = std::log1p(std::exp(v));
        else
          a = v / (1 + std::exp(-v));
        a *= 1.7;
        if (clamp >= 0) a = std::min(std::max(a, -double(clamp)), double(clamp));
        ASSERT_NEAR(y[i], a, 1e-5 * (1 + std::fabs(a))) << nm << " i " << i;
      }
    }
  }
  EXPECT_FLOAT_EQ(default_gain(ref::Activation::lrelu), std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(default_alpha(ref::Activation::lrelu), 0.2f);
  // Defaults: lrelu with alpha 0.2, gain sqrt(2); dim selects the broadcast axis.
  Tensor f = randn({4, 3}, 3);
  Tensor fb = randn({3}, 4);
  Tensor g = bias_act(f, &fb, 1, ref::Activation::lrelu);
  for (int64_t i = 0; i < 12; ++i) {
    float v = f[i] + fb[i % 3];
    EXPECT_FLOAT_EQ(g[i], (v > 0 ? v : 0.2f * v) * std::sqrt(2.0f));
  }
  EXPECT_THROW(bias_act(f, &fb, 0, ref::Activation::linear), Error);
  EXPECT_THROW(ref::parse_activation("gelu"), Error);
}

TEST(RefOps, Upfirdn2dMatchesDefinitionOnOddShapes) {
  struct Case {
    int up_x, up_y, down_x, down_y, px0, px1, py0, py1, fh, fw;
    bool flip;
    float gain;
  };
  const Case cases[] = {
      {1, 1, 1, 1, 0, 0, 0, 0, 3, 3, false, 1.0f},   {2, 2, 1, 1, 2, 1, 2, 1, 4, 4, false, 4.0f},
      {2, 1, 1, 2, 3, 2, 1, 0, 4, 3, true, 2.5f},    {1, 1, 2, 2, 1, 1, 1, 1, 4, 4, false, 1.0f},
      {3, 2, 1, 1, -1, 2, 0, -1, 2, 5, false, 1.0f}, {1, 1, 3, 2, 0, 0, 2, 2, 1, 1, true, 1.0f},
  };
  int seed = 10;
  for (const Case& c : cases) {
    Tensor x = randn({2, 3, 7, 5}, seed++);
    Tensor ft = randn({c.fh, c.fw}, seed++);  // asymmetric
    std::vector<float> f = ft.vec();
    Upfirdn2dArgs a{c.up_x, c.up_y, c.down_x, c.down_y, c.px0, c.px1, c.py0, c.py1, c.flip, c.gain};
    Tensor got = upfirdn2d(x, f, c.fh, c.fw, a);
    Tensor want = naive_upfirdn2d(x, f, c.fh, c.fw, a);
    EXPECT_TRUE(test::tensors_near(got, want, 2e-5, "upfirdn2d case " + std::to_string(seed)));
  }
  EXPECT_THROW(upfirdn2d(Tensor({1, 1, 2, 2}), {1, 1, 1}, 2, 2, {}), Error);
}

TEST(RefOps, Upsample2dPadsTwoOneGainFour) {
  Tensor x = randn({1, 2, 3, 4}, 20);
  auto f = make_filter2d({1, 3, 3, 1});
  Tensor y = upsample2d(x, f, 4);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2, 6, 8}));
  Upfirdn2dArgs a;
  a.up_x = a.up_y = 2;
  a.pad_x0 = a.pad_y0 = 2;
  a.pad_x1 = a.pad_y1 = 1;
  a.gain = 4;
  EXPECT_TRUE(test::tensors_near(y, naive_upfirdn2d(x, f, 4, 4, a), 1e-5, "upsample2d"));
  // A constant image stays constant away from the borders (DC gain 1 after zero insertion).
  Tensor ones({1, 1, 6, 6}, 1.0f);
  Tensor u = upsample2d(ones, f, 4);
  EXPECT_NEAR(u[(0 * 12 + 5) * 12 + 5], 1.0f, 1e-6);
}

TEST(RefOps, ModulatedConvMatchesDefinition) {
  auto f_sym = make_filter2d({1, 3, 3, 1});
  auto f_asym = make_filter2d({1, 2, 4, 1});
  int seed = 30;
  struct Case {
    int N, I, O, H, W, k, up;
    bool demod;
    bool asym;
  };
  const Case cases[] = {{2, 3, 5, 6, 7, 3, 1, true, false}, {1, 4, 2, 5, 5, 3, 2, true, false},
                        {3, 5, 3, 4, 3, 3, 2, true, true},  {2, 6, 3, 5, 4, 1, 1, false, false},
                        {1, 1, 1, 1, 1, 3, 2, true, false}, {2, 3, 4, 3, 5, 3, 1, false, true}};
  for (const Case& c : cases) {
    Tensor x = randn({c.N, c.I, c.H, c.W}, seed++);
    Tensor w = randn({c.O, c.I, c.k, c.k}, seed++);
    Tensor s = randn({c.N, c.I}, seed++, 1.5f);
    const auto& f = c.asym ? f_asym : f_sym;
    ModConvArgs a;
    a.up = c.up;
    a.padding = c.k / 2;
    a.demodulate = c.demod;
    a.flip_weight = c.up == 1;
    Tensor got = modulated_conv2d(x, w, s, f, 4, a);
    Tensor want = naive_modconv(x, w, s, f, 4, c.up, c.demod, a.flip_weight, a.padding);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.dim(2), c.H * c.up);
    EXPECT_TRUE(test::tensors_near(got, want, 5e-5, "modconv case " + std::to_string(seed)));
  }
}

TEST(RefOps, DemodulationIsClosedFormOfStyledWeights) {
  Tensor w = randn({4, 3, 3, 3}, 50);
  Tensor s = randn({2, 3}, 51);
  Tensor d = demod_coefficients(w, s);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 4; ++o) {
      double q = 0;
      for (int i = 0; i < 3; ++i) {
        double qi = 0;
        for (int k = 0; k < 9; ++k) qi += double(w[(o * 3 + i) * 9 + k]) * w[(o * 3 + i) * 9 + k];
        q += double(s[n * 3 + i]) * s[n * 3 + i] * qi;  // sum_i s_i^2 Q[o,i]
      }
      EXPECT_NEAR(d[n * 4 + o], 1.0 / std::sqrt(q + 1e-8), 1e-5);
    }
}

TEST(RefOps, FullyConnectedAndNormalize) {
  Tensor x = randn({3, 7}, 60);
  Tensor w = randn({5, 7}, 61, 100.0f);
  Tensor b = randn({5}, 62);
  const float wg = static_cast<float>(0.01 / std::sqrt(7.0));
  Tensor y = fully_connected(x, w, &b, wg, 0.01f, ref::Activation::lrelu);
  for (int n = 0; n < 3; ++n)
    for (int o = 0; o < 5; ++o) {
      double acc = 0;
      for (int i = 0; i < 7; ++i) acc += double(x[n * 7 + i]) * w[o * 7 + i] * 0.01 / std::sqrt(7.0);
      acc += 0.01 * b[o];
      double a = (acc > 0 ? acc : 0.2 * acc) * std::sqrt(2.0);
      EXPECT_NEAR(y[n * 5 + o], a, 1e-5 * (1 + std::fabs(a)));
    }
  Tensor nrm = normalize_2nd_moment(x);
  for (int n = 0; n < 3; ++n) {
    double ms = 0;
    for (int i = 0; i < 7; ++i) ms += double(x[n * 7 + i]) * x[n * 7 + i];
    ms /= 7;
    for (int i = 0; i < 7; ++i) EXPECT_NEAR(nrm[n * 7 + i], x[n * 7 + i] / std::sqrt(ms + 1e-8), 1e-6);
  }
}

TEST(RefOps, PlanFollowsOfficialWsIndexing) {
  for (const char* arch : {"skip", "orig", "resnet"}) {
    ModelConfig c;
    c.img_resolution = 64;
    c.num_ws = 10;
    c.synthesis.architecture = test::architecture(arch);
    c.mapping.layer_features = 512;
    for (int r = 4; r <= 64; r *= 2) c.synthesis.channels[r] = 16;
    SynthesisPlan p = make_synthesis_plan(c);
    ASSERT_EQ(p.blocks.size(), 5u);
    EXPECT_EQ(p.blocks[0].conv1.w_index, 0);
    for (size_t i = 1; i < p.blocks.size(); ++i) {
      const int k = static_cast<int>(i) + 2;  // resolution 2^k
      EXPECT_EQ(p.blocks[i].conv0->w_index, 2 * k - 5);
      EXPECT_EQ(p.blocks[i].conv1.w_index, 2 * k - 4);
      if (p.blocks[i].torgb) {
        EXPECT_EQ(p.blocks[i].torgb->w_index, 2 * k - 3);
      }
      EXPECT_EQ(p.blocks[i].conv0->noise_index, 2 * k - 5);
      EXPECT_EQ(p.blocks[i].conv1.noise_index, 2 * k - 4);
      EXPECT_EQ(bool(p.blocks[i].skip), std::string(arch) == "resnet");
    }
    EXPECT_EQ(p.blocks.back().torgb->w_index, 9);
    EXPECT_EQ(bool(p.blocks[0].torgb), std::string(arch) == "skip");
    if (std::string(arch) == "resnet") {
      EXPECT_FLOAT_EQ(p.blocks[2].conv1.act_gain, 1.0f);
      EXPECT_FLOAT_EQ(p.blocks[2].conv0.value().act_gain, std::sqrt(2.0f));
    }
  }
}

// The plan's 1-D resample taps (the CUDA up-conv epilogue's separable FIR): normalised to sum 1,
// and their outer product is the 2-D filter up to float rounding, for symmetric and other taps.
TEST(RefOps, PlanFilter1dFactorsTheFilter) {
  for (const std::vector<float>& taps :
       {std::vector<float>{1, 3, 3, 1}, std::vector<float>{1, 2, 4, 1}, std::vector<float>{1, 1}}) {
    ModelConfig c;
    c.img_resolution = 16;
    c.num_ws = 6;
    c.mapping.layer_features = 512;
    for (int r = 4; r <= 16; r *= 2) c.synthesis.channels[r] = 8;
    c.synthesis.resample_filter = taps;
    const SynthesisPlan p = make_synthesis_plan(c);
    const size_t n = taps.size();
    ASSERT_EQ(p.filter1d.size(), n);
    double sum = 0;
    for (float t : p.filter1d) sum += t;
    EXPECT_NEAR(sum, 1.0, 1e-7);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        EXPECT_NEAR(p.filter1d[i] * p.filter1d[j], p.filter[i * n + j], 2e-7 * std::fabs(p.filter[i * n + j]) + 1e-9)
            << "taps " << n << " (" << i << ", " << j << ")";
  }
}
