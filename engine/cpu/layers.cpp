// sg2 CPU backend: preparing a model for the oneDNN path (layers.h).
#include "engine/cpu/layers.h"

#include <algorithm>
#include <cmath>

#include "sg2/error.h"

namespace sg2::cpu {

namespace {

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int ceil_div(int a, int b) { return -floor_div(-a, b); }

Dense dense(const Tensor& w, const Tensor* b, float weight_gain, float bias_gain) {
  Dense d;
  d.out = static_cast<int>(w.dim(0));
  d.in = static_cast<int>(w.dim(1));
  d.weight.resize(size_t(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) d.weight[size_t(i)] = w[i] * weight_gain;
  d.bias.assign(size_t(d.out), 0.0f);
  if (b)
    for (int o = 0; o < d.out; ++o) d.bias[size_t(o)] = bias_gain != 1.0f ? (*b)[o] * bias_gain : (*b)[o];
  return d;
}

/// Halves the band height while the band is above the unit size and stays at least
/// t.min_band_pixels (and even when asked).
int band_rows_for(int rows, int cols, int64_t macs_per_row, bool even_rows, int64_t target, const CpuTuning& t) {
  int br = rows;
  while (br % 2 == 0 && int64_t(br) * macs_per_row > target) {
    const int nb = br / 2;
    if (int64_t(nb) * cols < t.min_band_pixels || (even_rows && (nb % 2 != 0 || nb < t.min_up_band_rows))) break;
    br = nb;
  }
  return br;
}

}  // namespace

Split choose_split(int rows, int cols, int cout, int64_t macs_per_row, bool even_rows, const CpuTuning& t) {
  Split s;
  s.band_rows = band_rows_for(rows, cols, macs_per_row, even_rows, t.unit_macs, t);
  s.bands = rows / s.band_rows;
  s.oc_block = cout;
  while (int64_t(s.band_rows) * macs_per_row / (cout / s.oc_block) > t.unit_macs && s.oc_block % 2 == 0 &&
         s.oc_block / 2 >= t.min_channel_block && (s.oc_block / 2) % 16 == 0)
    s.oc_block /= 2;
  s.oc_blocks = cout / s.oc_block;
  return s;
}

CpuModel::CpuModel(const Model& m, ThreadPool& pool, const CpuTuning& tuning) : model(&m) {
  const ModelConfig& cfg = m.config;
  plan = make_synthesis_plan(cfg);
  const int f = plan.filter_size;
  fir_pad0 = (f + 1) / 2 - 1;  // conv2d_resample, up 2, 3x3 kernel, padding 1
  // conv0's phase a reads input rows i - off(a) .. i - off(a) + kh(a) - 1 for its output rows i;
  // the zero border must hold the rows (and columns) the first and last bands reach outside.
  auto off_of = [](int a) { return a == 0 ? 1 : 0; };
  auto k_of = [](int a) { return a == 0 ? 2 : 1; };
  border = 1;
  for (int a = 0; a < 2; ++a)
    border = std::max(
        {border, off_of(a) - ceil_div(-fir_pad0 - a, 2), floor_div(f - 2 - fir_pad0 - a, 2) - off_of(a) + k_of(a)});
  const int B = border;
  for (int i = 0; i < f; ++i) {
    fir_v.push_back(plan.filter1d[size_t(f - 1 - i)] * 2.0f);
    fir_h.push_back(plan.filter1d[size_t(f - 1 - i)] * 2.0f);
  }
  up_g.resize(size_t(f) * f);
  for (int i = 0; i < f; ++i)
    for (int j = 0; j < f; ++j) up_g[size_t(i) * f + j] = plan.filter[size_t(f - 1 - i) * f + (f - 1 - j)] * 4.0f;

  // mapping
  const float lr = cfg.mapping.lr_multiplier;
  for (int i = 0; i < cfg.mapping.num_layers; ++i) {
    const std::string p = "mapping.fc" + std::to_string(i);
    const Tensor& w = m.at(p + ".weight");
    mapping.push_back(dense(w, &m.at(p + ".bias"), static_cast<float>(double(lr) / std::sqrt(double(w.dim(1)))), lr));
  }
  if (cfg.c_dim > 0)
    embed = dense(m.at("mapping.embed.weight"), &m.at("mapping.embed.bias"),
                  static_cast<float>(1.0 / std::sqrt(double(cfg.c_dim))), 1.0f);

  const float affine_gain = static_cast<float>(1.0 / std::sqrt(double(cfg.w_dim)));
  auto affine = [&](const std::string& name) {
    return dense(m.at(name + ".affine.weight"), &m.at(name + ".affine.bias"), affine_gain, 1.0f);
  };
  const int ic = cfg.img_channels;
  auto conv_layer = [&](const LayerPlan& l) {
    ConvLayer c;
    c.plan = &l;
    c.up = l.up == 2;
    c.cin = l.in_channels;
    c.cout = l.out_channels;
    c.h = l.height;
    c.w = l.width;
    c.in_h = c.up ? c.h / 2 : c.h;
    c.in_w = c.up ? c.w / 2 : c.w;
    c.s_col = static_cast<int>(s_cols);
    c.d_col = static_cast<int>(d_cols);
    s_cols += c.cin;
    d_cols += c.cout;
    c.affine = affine(l.name);
    const Tensor& w = m.at(l.name + ".weight");
    if (w.dim(2) != 3 || w.dim(3) != 3) fail(ErrorKind::unsupported, l.name, ": only 3x3 convolutions are supported");
    c.q.assign(size_t(c.cout) * c.cin, 0.0f);
    for (int o = 0; o < c.cout; ++o)
      for (int i = 0; i < c.cin; ++i) {
        float sum = 0.0f;
        for (int k = 0; k < 9; ++k) {
          const float v = w[(int64_t(o) * c.cin + i) * 9 + k];
          sum += v * v;
        }
        c.q[size_t(o) * c.cin + i] = sum;
      }
    c.bias = m.at(l.name + ".bias").data();
    if (l.noise_index >= 0) {
      const float strength = m.at(l.name + ".noise_strength")[0];
      const Tensor& nc = m.at(l.name + ".noise_const");
      c.noise_const.resize(size_t(nc.numel()));
      for (int64_t i = 0; i < nc.numel(); ++i) c.noise_const[size_t(i)] = nc[i] * strength;
      c.noise_off = noise_floats;
      noise_floats += int64_t(c.h) * c.w;
    }
    const int64_t res2 = int64_t(c.h) * c.w;
    const int wp = c.in_w + 2 * B, hp = c.in_h + 2 * B;  // the padded input's width and height
    if (c.up) {
      c.macs = int64_t(c.cout) * c.cin * 9 * c.in_h * c.in_w;
      c.split = choose_split(c.h, c.w, c.cout, c.macs / c.h, true, tuning);
      const int br = c.split.band_rows, cb = c.split.oc_block;
      int64_t off = 0;
      for (int a = 0; a < 2; ++a)
        for (int b2 = 0; b2 < 2; ++b2) {
          ConvPart p;
          p.a = a;
          p.b = b2;
          p.kh = k_of(a);
          p.kw = k_of(b2);
          p.i0 = ceil_div(-fir_pad0 - a, 2);
          const int count = floor_div(br + f - 2 - fir_pad0 - a, 2) - p.i0 + 1;
          p.in_row0 = p.i0 - off_of(a) + B;
          p.j0 = off_of(b2) - B;
          p.scratch_off = off;
          off += int64_t(count) * (wp - p.kw + 1) * cb;
          c.parts.push_back(std::move(p));
        }
      c.t_rows = br + f - 1;
      c.t_cols = c.w + f - 1;
      c.t_off = off;
      c.tmp_off = c.t_off + int64_t(c.t_rows) * c.t_cols * cb;
      c.u_off = c.tmp_off + int64_t(c.w + f - 1) * cb;
      scratch_floats = std::max(scratch_floats, c.u_off + int64_t(c.w) * cb);
      xa_floats = std::max(xa_floats, int64_t(hp) * wp * c.cin);
    } else {
      c.macs = int64_t(c.cout) * c.cin * 9 * res2;
      c.split = choose_split(c.h, c.w, c.cout, c.macs / c.h, false, tuning);
      ConvPart p;
      p.in_row0 = -1 + B;
      c.parts.push_back(std::move(p));
      scratch_floats = std::max(scratch_floats, int64_t(c.split.band_rows) * (wp - 2) * c.split.oc_block);
      xb_floats = std::max(xb_floats, int64_t(hp) * wp * c.cin);
    }
    total_macs += c.macs;
    return c;
  };

  for (const BlockPlan& bp : plan.blocks) {
    Block b;
    b.plan = &bp;
    const int H = bp.height, W = bp.width;
    if (bp.skip) {
      SkipLayer s;
      s.plan = &*bp.skip;
      s.cin = bp.skip->in_channels;
      s.cout = bp.skip->out_channels;
      s.h = H;
      s.w = W;
      const Tensor& w = m.at(bp.skip->name + ".weight");
      s.weight.resize(size_t(w.numel()));
      for (int64_t i = 0; i < w.numel(); ++i) s.weight[size_t(i)] = w[i] * bp.skip->weight_gain;
      const int ih = H / 2, iw = W / 2;
      s.band_rows = band_rows_for(ih, iw, int64_t(iw) * s.cin * s.cout, false, tuning.unit_macs / 4, tuning);
      s.bands = ih / s.band_rows;
      s.up_band_rows = band_rows_for(H, W, int64_t(W) * s.cout * 4, false, tuning.unit_macs / 16, tuning);
      s.up_bands = H / s.up_band_rows;
      skip_r_floats = std::max(skip_r_floats, int64_t(ih) * iw * s.cout);
      skip_s_floats = std::max(skip_s_floats, int64_t(H) * W * s.cout);
      total_macs += int64_t(ih) * iw * s.cin * s.cout;
      b.skip = std::move(s);
    }
    if (bp.conv0) b.conv0 = conv_layer(*bp.conv0);
    b.conv1 = conv_layer(bp.conv1);
    raw_floats = std::max(raw_floats, int64_t(H) * W * bp.out_channels);
    if (bp.torgb) {
      TorgbLayer t;
      t.plan = &*bp.torgb;
      t.cin = bp.torgb->in_channels;
      t.out = bp.torgb->out_channels;
      t.h = H;
      t.w = W;
      t.affine = affine(bp.torgb->name);
      t.style_gain = bp.torgb->style_gain;
      t.weight = m.at(bp.torgb->name + ".weight").data();
      t.bias = m.at(bp.torgb->name + ".bias").data();
      t.clamp = bp.torgb->clamp;
      t.wmod_off = wmod_floats;
      wmod_floats += int64_t(t.out) * t.cin;
      t.band_rows = band_rows_for(H, W, int64_t(W) * t.cin * t.out * 4, false, tuning.unit_macs / 16, tuning);
      t.bands = H / t.band_rows;
      scratch_floats = std::max(scratch_floats, int64_t(t.out) * t.band_rows * W);
      total_macs += int64_t(H) * W * t.cin * t.out;
      b.torgb = std::move(t);
    }
    img_floats = std::max(img_floats, int64_t(H) * W * ic);
    blocks.push_back(std::move(b));
  }

  // The primitives and their weight layouts, made on the workers (one unit per conv layer).
  std::vector<ConvLayer*> convs;
  for (Block& b : blocks) {
    if (b.conv0) convs.push_back(&*b.conv0);
    convs.push_back(&b.conv1);
  }
  std::vector<size_t> pad_bytes(convs.size());
  pool.run(static_cast<int64_t>(convs.size()), [&](int64_t i, int) {
    ConvLayer& c = *convs[size_t(i)];
    const int wp = c.in_w + 2 * B, cb = c.split.oc_block, br = c.split.band_rows;
    const float* w = m.at(c.plan->name + ".weight").data();
    for (ConvPart& p : c.parts) {
      int rows_in = br + 2;  // conv1: the band and a row above and below
      if (c.up) rows_in = floor_div(br + f - 2 - fir_pad0 - p.a, 2) - p.i0 + 1 + p.kh - 1;
      p.band = std::make_shared<ConvBand>(rows_in, wp, c.cin, cb, p.kh, p.kw);
      std::vector<float> taps(size_t(cb) * c.cin * p.kh * p.kw);
      for (int k = 0; k < c.split.oc_blocks; ++k) {
        // conv1: the 3x3 weight as it is; conv0 phase (a, b): taps ky = 2 - 2 dy (a = 0) or 1,
        // kx likewise (the transposed convolution's flip)
        for (int o = 0; o < cb; ++o)
          for (int ci = 0; ci < c.cin; ++ci)
            for (int dy = 0; dy < p.kh; ++dy)
              for (int dx = 0; dx < p.kw; ++dx) {
                const int ky = !c.up ? dy : p.a == 0 ? 2 - 2 * dy : 1, kx = !c.up ? dx : p.b == 0 ? 2 - 2 * dx : 1;
                taps[((size_t(o) * c.cin + ci) * p.kh + dy) * p.kw + dx] =
                    w[((int64_t(k) * cb + o) * c.cin + ci) * 9 + ky * 3 + kx];
              }
        p.weights.push_back(p.band->prepare_weights(taps.data()));
      }
      pad_bytes[size_t(i)] = std::max(pad_bytes[size_t(i)], p.band->scratchpad_bytes());
    }
  });
  for (size_t b : pad_bytes) scratchpad_bytes = std::max(scratchpad_bytes, b);
}

}  // namespace sg2::cpu
