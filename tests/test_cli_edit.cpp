// Edit directions (sg2/edit.h, --edit of generate / interpolate / mix) and network blending (sg2/blend.h,
// sg2 blend) end to end: the built CLI on the bundled digits32 model and small random model files, checked
// bit for bit against the arithmetic the docs state (w + s * d as a float32 multiply then add; blend_models.py's
// layer shares), and every bad input refused with one line and nothing written.
#include <dirent.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "sg2/blend.h"
#include "sg2/edit.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/latents.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  return o;
}

std::string edits(const std::string& name) { return source_path("tests/data/edits/" + name); }

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), sizeof(float) * size_t(a.numel())) == 0;
}

/// w + s * d as the docs state it: the product rounded to float32, then the sum (never a fused multiply-add).
float mul_add(float w, float s, float d) {
  volatile float m = s * d;
  return w + m;
}

/// ws [N, num_ws, w_dim] moved by s x d (d [w_dim] / [1, w_dim] for every row, or [num_ws, w_dim]) on rows a..b.
void edit_expected(Tensor& ws, const Tensor& d, float s, int a, int b) {
  const int64_t R = ws.dim(1), W = ws.dim(2);
  const bool per_row = d.numel() == R * W && R > 1;
  for (int64_t n = 0; n < ws.dim(0); ++n)
    for (int64_t r = a; r <= b; ++r)
      for (int64_t k = 0; k < W; ++k) {
        float& w = ws[(n * R + r) * W + k];
        w = mul_add(w, s, d[(per_row ? r * W : 0) + k]);
      }
}

int count_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  int n = 0;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  ::closedir(d);
  return n;
}

bool has_text(const std::string& s, const std::string& t) { return s.find(t) != std::string::npos; }

}  // namespace

TEST(EditApi, MultiplyThenAddInOrderOnTheChosenRows) {
  const int N = 2, R = 4, W = 64;
  Tensor ws({N, R, W});
  for (int64_t i = 0; i < ws.numel(); ++i) ws[i] = std::sin(0.37f * float(i)) * 3.1f;
  Tensor rows({R, W}), vec({W});
  for (int64_t i = 0; i < rows.numel(); ++i) rows[i] = std::cos(0.11f * float(i)) * 0.77f;
  for (int64_t i = 0; i < vec.numel(); ++i) vec[i] = std::sin(1.3f * float(i) + 0.2f) * 1.9f;
  std::vector<WsEdit> e = {WsEdit{rows, 1.37f, 1, 2, "rows"}, WsEdit{vec.reshaped({1, W}), -2.113f, 0, -1, "vec"}};
  Tensor got = ws;
  apply_edits(got, e);
  Tensor want = ws;
  edit_expected(want, rows, 1.37f, 1, 2);
  edit_expected(want, vec, -2.113f, 0, R - 1);
  EXPECT_TRUE(same_bits(got, want));
  // and not one fused multiply-add: for these values some element differs in its last bit
  Tensor fused = ws;
  int differ = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t k = 0; k < W; ++k) {
        float& w = fused[(n * R + r) * W + k];
        if (r >= 1 && r <= 2) w = std::fma(1.37f, rows[r * W + k], w);
        w = std::fma(-2.113f, vec[k], w);
        differ += w != got[(n * R + r) * W + k];
      }
  EXPECT_GT(differ, 0);
  // shapes, rows, strengths that do not fit
  EXPECT_THROW(check_edits({WsEdit{Tensor({3, W}), 1, 0, -1, "x"}}, R, W), Error);
  EXPECT_THROW(check_edits({WsEdit{Tensor({1, W + 1}), 1, 0, -1, "x"}}, R, W), Error);
  EXPECT_THROW(check_edits({WsEdit{vec, NAN, 0, -1, "x"}}, R, W), Error);
  EXPECT_THROW(check_edits({WsEdit{vec, 1, 2, R, "x"}}, R, W), Error);
  EXPECT_NO_THROW(check_edits({WsEdit{Tensor({1, R, W}), 1, 0, -1, "x"}}, R, W));
  Tensor huge = ws;
  EXPECT_THROW(apply_edits(huge, {WsEdit{vec, 3e38f, 0, -1, "x"}}), Error);  // an overflow is refused
}

TEST(EditFiles, FormatsAreReadByContent) {
  const EditDirection b = read_edit_direction(edits("boundary.npy"));
  EXPECT_EQ(b.values.shape(), (std::vector<int64_t>{1, 512}));
  const EditDirection g = read_edit_direction(edits("ganspace.npz"), 2);  // numpy.savez_compressed
  EXPECT_EQ(g.components, 4);
  EXPECT_TRUE(same_bits(g.values, read_npy_tensor(edits("ganspace_c2.expect.npy"))));
  EXPECT_TRUE(has_text(g.note, "1.25")) << g.note;  // its lat_stdev
  EXPECT_EQ(read_edit_direction(edits("ganspace_one.npz")).components, 1);
  EXPECT_TRUE(
      same_bits(read_edit_direction(edits("styleclip.pt")).values, read_npy_tensor(edits("styleclip.expect.npy"))));
  EXPECT_THROW(read_edit_direction(edits("ganspace.npz")), Error);     // several, none chosen
  EXPECT_THROW(read_edit_direction(edits("ganspace.npz"), 4), Error);  // out of range
  // a damaged GANSpace file: flipped bytes in lat_comp's deflated data, a cut file: refused, never a crash
  const std::string bytes = slurp(edits("ganspace.npz"));
  const std::string dir = temp_dir("edit_files");
  const size_t data_at = bytes.find("lat_comp.npy") + 12;  // the first local header's name, then its data
  for (size_t at : {data_at + 40, data_at + 400, data_at + 4000}) {
    std::string damaged = bytes;
    for (size_t k = at; k < at + 16; ++k) damaged[k] = static_cast<char>(damaged[k] ^ 0x5a);
    std::ofstream(dir + "/damaged.npz", std::ios::binary) << damaged;
    EXPECT_THROW(read_edit_direction(dir + "/damaged.npz", 0), Error) << at;
  }
  for (size_t len : {size_t(100), bytes.size() / 2, bytes.size() - 30}) {
    std::ofstream(dir + "/cut.npz", std::ios::binary) << bytes.substr(0, len);
    EXPECT_THROW(read_edit_direction(dir + "/cut.npz", 0), Error) << len;
  }
  // a member that claims more bytes than deflate can make of its data (a zip bomb's claim) is refused unread
  std::string bomb = bytes;
  for (size_t p = bomb.find("PK\x01\x02"); p != std::string::npos; p = bomb.find("PK\x01\x02", p + 4))
    if (bomb.compare(p + 46, 12, "lat_comp.npy") == 0) {
      const char claim[4] = {0, 0, 0, 0x10};  // 256 MiB, little-endian
      bomb.replace(p + 24, 4, claim, 4);
    }
  std::ofstream(dir + "/bomb.npz", std::ios::binary) << bomb;
  try {
    read_edit_direction(dir + "/bomb.npz", 0);
    ADD_FAILURE() << "the bomb was read";
  } catch (const Error& e) {
    EXPECT_TRUE(has_text(e.message(), "more than deflate can produce")) << e.message();
  }
  for (const char* bad : {"bad_int.npy", "bad_nan.npy", "bad_inf.pt"}) {
    try {
      read_edit_direction(edits(bad));
      ADD_FAILURE() << bad << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_file) << e.what();
      EXPECT_TRUE(has_text(e.message(), bad)) << e.message();
    }
  }
}

TEST(CliEdit, GenerateMovesTheTruncatedWs) {
  const std::string dir = temp_dir("edit_gen");
  CliResult r = run_cli({"generate",
                         "--network",
                         digits32(),
                         "--device",
                         "cpu",
                         "--seeds",
                         "4,9",
                         "--class",
                         "3",
                         "--trunc",
                         "0.7",
                         "--edit",
                         edits("boundary.npy") + ":2.5",
                         "--edit",
                         edits("ganspace.npz") + ":-1.75",
                         "--edit-component",
                         "2",
                         "--edit",
                         edits("rows.npy:0.5"),
                         "--edit-layers",
                         "2-5",
                         "--save-ws",
                         "--format",
                         "both",
                         "--outdir",
                         dir + "/o"});
  ASSERT_EQ(r.status, 0) << describe(r);
  Generator gen(load_model(digits32()), cpu());
  const Tensor d1 = read_npy_tensor(edits("boundary.npy"));
  const Tensor d2 = read_npy_tensor(edits("ganspace_c2.expect.npy"));
  const Tensor d3 = read_npy_tensor(edits("rows.npy"));
  for (uint32_t seed : {4u, 9u}) {
    Truncation t;
    t.psi = 0.7f;
    Tensor ws = gen.map(z_from_seeds({seed}, 512), one_hot({3}, 10), t);
    edit_expected(ws, d1, 2.5f, 2, 5);
    edit_expected(ws, d2, -1.75f, 2, 5);
    edit_expected(ws, d3, 0.5f, 2, 5);
    const std::string stem = dir + "/o/seed000" + std::to_string(seed);
    EXPECT_TRUE(same_bits(read_npy_tensor(stem + "_ws.npy"), ws)) << seed;
    EXPECT_TRUE(same_bits(read_npy_tensor(stem + ".npy"), gen.synthesize(ws))) << seed;
  }
  // --ws input: the rows are moved the same way
  write_npy(dir + "/ws.npy", read_npy_tensor(dir + "/o/seed0004_ws.npy"));
  r = run_cli({"generate", "--network", digits32(), "--device", "cpu", "--ws", dir + "/ws.npy", "--edit",
               edits("vec64.npy") + ":-0.25", "--save-ws", "--outdir", dir + "/w"});
  ASSERT_EQ(r.status, 0) << describe(r);
  Tensor ws = read_npy_tensor(dir + "/ws.npy");
  edit_expected(ws, read_npy_tensor(edits("vec64.npy")), -0.25f, 0, 7);
  EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/w/ws0000_ws.npy"), ws));
  // StyleCLIP .pt [1, num_ws, w_dim] and its .npy copy give the same PNG
  for (const char* f : {"styleclip.pt", "styleclip.expect.npy"}) {
    r = run_cli({"generate", "--network", digits32(), "--device", "cpu", "--seeds", "1", "--class", "0", "--edit",
                 edits(f), "--outdir", dir + "/" + f, "-q"});
    ASSERT_EQ(r.status, 0) << describe(r);
  }
  EXPECT_EQ(slurp(dir + "/styleclip.pt/seed0001.png"), slurp(dir + "/styleclip.expect.npy/seed0001.png"));
  r = run_cli({"generate", "--network", digits32(), "--device", "cpu", "--seeds", "1", "--class", "0", "--outdir",
               dir + "/plain", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_NE(slurp(dir + "/plain/seed0001.png"), slurp(dir + "/styleclip.pt/seed0001.png"));
}

TEST(CliEdit, BadInputIsOneLineAndNothingIsWritten) {
  const std::string dir = temp_dir("edit_bad");
  struct Case {
    std::vector<std::string> extra;
    int status;
    std::string text;
  };
  const std::vector<Case> cases = {
      {{"--edit", edits("bad_int.npy")}, 1, "bad_int.npy: expected a float32/float64/float16 array"},
      {{"--edit", edits("bad_nan.npy")}, 1, "bad_nan.npy: contains NaN or infinite values"},
      {{"--edit", edits("bad_inf.pt")}, 1, "bad_inf.pt: contains NaN or infinite values"},
      {{"--edit", edits("bad_shape.npy")}, 2, "bad_shape.npy: a direction of shape [3, 512] does not fit"},
      {{"--edit", edits("bad_wdim.npy")}, 2, "bad_wdim.npy: a direction of shape [1, 100] does not fit"},
      {{"--edit", edits("boundary.npy:abc")}, 2, "boundary.npy:abc: the strength 'abc' is not a finite number"},
      {{"--edit", edits("boundary.npy:nan")}, 2, "the strength 'nan' is not a finite number"},
      {{"--edit", edits("boundary.npy:inf")}, 2, "the strength 'inf' is not a finite number"},
      {{"--edit", edits("boundary.npy:1e39")}, 2, "the strength '1e39' is not a finite float32 number"},
      {{"--edit", edits("ganspace.npz")}, 2, "holds 4 directions (components); choose one with --edit-component K"},
      {{"--edit", edits("ganspace.npz"), "--edit-component", "4"}, 2, "--edit-component 4 is out of range"},
      {{"--edit", edits("boundary.npy"), "--edit-component", "1"}, 2, "no --edit file holds several directions"},
      {{"--edit", edits("boundary.npy"), "--edit-layers", "3-8"}, 2, "--edit-layers 3-8: this model has ws rows 0-7"},
      {{"--edit", edits("boundary.npy"), "--edit-layers", "5-3"}, 2, "the first row 5 is after the last 3"},
      {{"--edit-layers", "0-3"}, 2, "--edit-layers needs --edit FILE"},
      {{"--edit", edits("missing.npy")}, 1, "missing.npy: cannot open"},
      // finite ws, but synthesis overflows: the message blames the edit, not the model's weights
      {{"--edit", edits("boundary.npy:1e38")},
       2,
       "gave NaN or infinite pixels: an edit direction (--edit) moved its latents far outside the range the mapping "
       "network produces: use a smaller strength"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"generate", "--network", digits32(), "--device", "cpu",     "--seeds",
                                     "0",        "--class",   "1",        "--outdir", dir + "/o"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, c.status) << describe(r);
    EXPECT_TRUE(has_text(r.err, c.text)) << c.text << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(count_files(dir + "/o"), 0) << c.text;
  }
}

TEST(CliEdit, InterpolateSweepsTheStrength) {
  const std::string dir = temp_dir("edit_sweep");
  CliResult r = run_cli({"interpolate",
                         "--network",
                         digits32(),
                         "--device",
                         "cpu",
                         "--seeds",
                         "7",
                         "--class",
                         "2",
                         "--edit",
                         edits("boundary.npy"),
                         "--strengths",
                         "-3:0.7",
                         "--frames",
                         "4",
                         "--format",
                         "npy",
                         "--no-video",
                         "--outdir",
                         dir + "/o"});
  ASSERT_EQ(r.status, 0) << describe(r);
  Generator gen(load_model(digits32()), cpu());
  const Tensor base = gen.map(z_from_seeds({7}, 512), one_hot({2}, 10));
  const Tensor d = read_npy_tensor(edits("boundary.npy"));
  const double a = -3, b = 0.7, step = (b - a) / 3;  // numpy.linspace(-3, 0.7, 4)
  for (int f = 0; f < 4; ++f) {
    Tensor ws = base;
    edit_expected(ws, d, static_cast<float>(f == 3 ? b : a + f * step), 0, 7);
    EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/o/frame0000" + std::to_string(f) + ".npy"), gen.synthesize(ws))) << f;
  }
  EXPECT_EQ(count_files(dir + "/o"), 4);
  // the same sweep of a --ws latent ([num_ws, w_dim]: one W+ latent here) gives the same frames
  write_npy(dir + "/one.npy", base.reshaped({8, 512}));
  r = run_cli({"interpolate", "--network", digits32(), "--device", "cpu", "--ws", dir + "/one.npy", "--edit",
               edits("boundary.npy"), "--strengths", "-3:0.7", "--frames", "4", "--format", "npy", "--no-video",
               "--outdir", dir + "/w", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  for (int f = 0; f < 4; ++f) {
    const std::string name = "/frame0000" + std::to_string(f) + ".npy";
    EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/w" + name), read_npy_tensor(dir + "/o" + name))) << f;
  }
  // --frames 1: strength A alone, one frame (and the summary says "1 frame")
  r = run_cli({"interpolate", "--network", digits32(), "--device", "cpu", "--ws", dir + "/one.npy", "--edit",
               edits("boundary.npy"), "--strengths", "-3:0.7", "--frames", "1", "--format", "npy", "--no-video",
               "--outdir", dir + "/w1"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out, "sg2 interpolate: 1 frame in " + dir + "/w1, ")) << r.out;
  EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/w1/frame00000.npy"), read_npy_tensor(dir + "/o/frame00000.npy")));
  write_npy(dir + "/two.npy", Tensor({2, 512}));
  for (const auto& bad : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--seeds", "1,2", "--edit", edits("boundary.npy"), "--strengths", "-3:3"}, "sweeps one seed"},
           {{"--seeds", "1", "--strengths", "-3:3"}, "give exactly one --edit FILE"},
           {{"--seeds", "1", "--edit", edits("boundary.npy:2"), "--strengths", "-3:3"}, "without :STRENGTH"},
           {{"--seeds", "1", "--edit", edits("boundary.npy"), "--strengths", "-3:nan"}, "'nan' is not a finite number"},
           {{"--seeds", "1", "--edit", edits("boundary.npy"), "--strengths", "3"}, "expected A:B"},
           {{"--ws", dir + "/two.npy", "--edit", edits("boundary.npy"), "--strengths", "0:1"}, "holds 2 latents"},
           {{"--ws", dir + "/one.npy", "--edit", edits("boundary.npy")}, "--ws is only used with --strengths"}}) {
    std::vector<std::string> args = {"interpolate", "--network",  digits32(), "--device",
                                     "cpu",         "--no-video", "--outdir", dir + "/bad"};
    args.insert(args.end(), bad.first.begin(), bad.first.end());
    if (bad.first[0] == "--seeds") args.insert(args.end(), {"--class", "1"});
    r = run_cli(args);
    EXPECT_EQ(r.status, 2) << describe(r);
    EXPECT_TRUE(has_text(r.err, bad.second)) << r.err;
    EXPECT_EQ(count_files(dir + "/bad"), 0);
  }
}

TEST(CliEdit, MixAndInterpolateMoveEveryW) {
  const std::string dir = temp_dir("edit_mix");
  const std::string e = edits("boundary.npy") + ":3";
  CliResult r = run_cli({"mix", "--network", digits32(), "--device", "cpu", "--rows", "5", "--cols", "6", "--class",
                         "4", "--edit", e, "--outdir", dir + "/m", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  r = run_cli({"generate", "--network", digits32(), "--device", "cpu", "--seeds", "5,6", "--class", "4", "--edit", e,
               "--outdir", dir + "/g", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(slurp(dir + "/m/5-5.png"), slurp(dir + "/g/seed0005.png"));
  EXPECT_EQ(slurp(dir + "/m/6-6.png"), slurp(dir + "/g/seed0006.png"));
  r = run_cli({"interpolate", "--network", digits32(), "--device", "cpu", "--seeds", "5,6", "--class", "4", "--frames",
               "2", "--edit", e, "--no-video", "--outdir", dir + "/i", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(slurp(dir + "/i/frame00000.png"), slurp(dir + "/g/seed0005.png"));
  EXPECT_EQ(slurp(dir + "/i/frame00002.png"), slurp(dir + "/g/seed0006.png"));
  // a strength that overflows synthesis: the error, and the hint that names --edit; nothing written
  const std::string huge = edits("boundary.npy") + ":1e38";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"mix", "--rows", "5", "--cols", "6", "--edit", huge, "--outdir", dir + "/hm"},
        std::vector<std::string>{"interpolate", "--seeds", "5", "--edit", edits("boundary.npy"), "--strengths",
                                 "0:1e38", "--frames", "2", "--no-video", "--outdir", dir + "/hi"}}) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--network", digits32(), "--device", "cpu", "--class", "4"});
    r = run_cli(full);
    EXPECT_EQ(r.status, 2) << describe(r);
    EXPECT_TRUE(has_text(r.err, "gave NaN or infinite pixels")) << r.err;
    EXPECT_TRUE(has_text(r.err,
                         ": hint: --edit moved these ws: a smaller strength keeps them in the mapping network's "
                         "range"))
        << r.err;
  }
  EXPECT_EQ(count_files(dir + "/hm"), 0);
  EXPECT_EQ(count_files(dir + "/hi"), 0);
}

namespace {

std::string write_model(const std::string& dir, const std::string& name, const ModelConfig& cfg, uint64_t seed) {
  const std::string path = dir + "/" + name;
  save_model_file(path, make_random_model(cfg, seed));
  return path;
}

ModelConfig blend_config(int w_dim = 8, int channel_max = 16, int res = 16) {
  return make_config(res, 128, channel_max, 8, w_dim, 0, 3, 2, Architecture::skip, 256.0f, 2);
}

}  // namespace

TEST(CliBlend, LayersComeFromEachSideAsStated) {
  const std::string dir = temp_dir("blend");
  const std::string a = write_model(dir, "a.safetensors", blend_config(), 5);
  const std::string b = write_model(dir, "b.safetensors", blend_config(), 11);
  const Model A = load_model_file(a), B = load_model_file(b);
  // --at 8, hard: b4 and the mapping from A, b8 and b16 from B
  CliResult r = run_cli({"blend", "--low", a, "--high", b, "--at", "8", "--out", dir + "/c8.safetensors"});
  ASSERT_EQ(r.status, 0) << describe(r);
  const Model C = load_model_file(dir + "/c8.safetensors");
  ASSERT_EQ(C.tensors.size(), A.tensors.size());
  for (const auto& [name, t] : C.tensors) {
    const bool from_a = name.rfind("mapping.", 0) == 0 || name.rfind("synthesis.b4.", 0) == 0;
    EXPECT_TRUE(same_bits(t, (from_a ? A : B).at(name))) << name;
  }
  // --at above the top block: A's images bit for bit
  r = run_cli({"blend", "--low", a, "--high", b, "--at", "32", "--out", dir + "/c32.safetensors", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  for (const auto& [net, out] :
       std::vector<std::pair<std::string, std::string>>{{a, "ga"}, {dir + "/c32.safetensors", "gc"}}) {
    r = run_cli({"generate", "--network", net, "--device", "cpu", "--seeds", "0-3", "--outdir", dir + "/" + out, "-q"});
    ASSERT_EQ(r.status, 0) << describe(r);
  }
  for (const char* f : {"seed0000.png", "seed0001.png", "seed0002.png", "seed0003.png"})
    EXPECT_EQ(slurp(dir + "/ga/" + f), slurp(dir + "/gc/" + f)) << f;
  // --at 4: the synthesis is B's (ws straight into synthesis give B's images)
  r = run_cli({"blend", "--low", a, "--high", b, "--at", "4", "--out", dir + "/c4.safetensors", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  Tensor ws({3, A.config.num_ws, A.config.w_dim});
  for (int64_t i = 0; i < ws.numel(); ++i) ws[i] = std::sin(0.7f * float(i));
  write_npy(dir + "/ws.npy", ws);
  for (const auto& [net, out] :
       std::vector<std::pair<std::string, std::string>>{{b, "wb"}, {dir + "/c4.safetensors", "wc"}}) {
    r = run_cli(
        {"generate", "--network", net, "--device", "cpu", "--ws", dir + "/ws.npy", "--outdir", dir + "/" + out, "-q"});
    ASSERT_EQ(r.status, 0) << describe(r);
  }
  for (const char* f : {"ws0000.png", "ws0001.png", "ws0002.png"})
    EXPECT_EQ(slurp(dir + "/wb/" + f), slurp(dir + "/wc/" + f)) << f;
  // --blend-width: blend_models.py's logistic per layer, a float32 mix; noise maps taken whole
  r = run_cli(
      {"blend", "--low", a, "--high", b, "--at", "8", "--blend-width", "1.5", "--out", dir + "/cw.safetensors", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  const Model W = load_model_file(dir + "/cw.safetensors");
  auto mixed = [&](const std::string& name, int x) {
    const float y = static_cast<float>(1.0 / (1.0 + std::exp(-x / 1.5)));
    const float ya = 1.0f - y;
    Tensor t = A.at(name);
    for (int64_t i = 0; i < t.numel(); ++i) {
      volatile float hb = B.at(name)[i] * y;
      volatile float la = A.at(name)[i] * ya;
      t[i] = hb + la;
    }
    return t;
  };
  EXPECT_TRUE(same_bits(W.at("synthesis.b16.conv1.weight"), mixed("synthesis.b16.conv1.weight", 3)));
  EXPECT_TRUE(same_bits(W.at("synthesis.b4.const"), mixed("synthesis.b4.const", -2)));
  EXPECT_TRUE(same_bits(W.at("synthesis.b8.torgb.weight"), mixed("synthesis.b8.torgb.weight", 1)));
  EXPECT_TRUE(same_bits(W.at("synthesis.b4.conv1.noise_const"), A.at("synthesis.b4.conv1.noise_const")));
  EXPECT_TRUE(same_bits(W.at("synthesis.b8.conv0.noise_const"), B.at("synthesis.b8.conv0.noise_const")));
  EXPECT_TRUE(same_bits(W.at("mapping.w_avg"), A.at("mapping.w_avg")));
  // checkpoints load too: digits32.pkl blended with itself makes digits32's images
  r = run_cli(
      {"blend", "--low", digits32(), "--high", digits32(), "--at", "16", "--out", dir + "/d.safetensors", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  for (const auto& [net, out] :
       std::vector<std::pair<std::string, std::string>>{{digits32(), "d0"}, {dir + "/d.safetensors", "d1"}}) {
    r = run_cli({"generate", "--network", net, "--device", "cpu", "--seeds", "3", "--class", "5", "--outdir",
                 dir + "/" + out, "-q"});
    ASSERT_EQ(r.status, 0) << describe(r);
  }
  EXPECT_EQ(slurp(dir + "/d0/seed0003.png"), slurp(dir + "/d1/seed0003.png"));
}

TEST(CliBlend, IncompatibleNetworksAndBadOptionsAreRefused) {
  const std::string dir = temp_dir("blend_bad");
  const std::string a = write_model(dir, "a.safetensors", blend_config(), 5);
  const std::string w16 = write_model(dir, "w16.safetensors", blend_config(16), 6);
  const std::string c32 = write_model(dir, "c32.safetensors", blend_config(8, 32), 7);
  const std::string r32 = write_model(dir, "r32.safetensors", blend_config(8, 16, 32), 8);
  const std::string out = dir + "/out.safetensors";
  const std::vector<std::pair<std::vector<std::string>, std::pair<int, std::string>>> cases = {
      {{"--low", a, "--high", w16, "--at", "8"}, {2, "(low) and " + w16 + " (high): w_dim 8 vs 16"}},
      {{"--low", a, "--high", c32, "--at", "8"}, {2, "block 4x4 has 16 vs 32 channels"}},
      {{"--low", r32, "--high", a, "--at", "8"},
       {2, "cannot blend " + r32 + " (low) and " + a + " (high): img_resolution 32 vs 16"}},
      {{"--low", a, "--high", a, "--at", "12"}, {2, "--at 12: the switch resolution must be a power of two"}},
      {{"--low", a, "--high", a, "--at", "64"},
       {2, "--at 64: the switch resolution must be a power of two from 4 to 32"}},
      {{"--low", a, "--high", a, "--at", "8", "--blend-width", "0"}, {2, "--blend-width 0: must be positive"}},
      {{"--low", a, "--high", a, "--at", "8", "--blend-width", "abc"}, {2, "--blend-width: 'abc' is not a number"}},
      {{"--low", dir + "/none.pkl", "--high", a, "--at", "8"}, {1, "none.pkl"}},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"blend", "--out", out};
    args.insert(args.end(), c.first.begin(), c.first.end());
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, c.second.first) << describe(r);
    EXPECT_TRUE(has_text(r.err, c.second.second)) << c.second.second << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(file_exists(out));
  }
  CliResult r = run_cli({"blend", "--low", a, "--high", a, "--at", "8"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has_text(r.err, "--out is required")) << r.err;
  r = run_cli({"blend", "--low", a, "--high", a, "--at", "8", "--out", dir});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has_text(r.err, "give a file name")) << r.err;
  // a checkpoint's extension on the model file it writes is refused, as sg2 convert does
  r = run_cli({"blend", "--low", a, "--high", a, "--at", "8", "--out", dir + "/c.pkl"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has_text(r.err, "has a checkpoint's extension, but sg2 blend writes a safetensors model file: name it " +
                                  dir + "/c.safetensors"))
      << r.err;
  EXPECT_EQ(count_files(dir), 4);  // the four models, nothing else
}
