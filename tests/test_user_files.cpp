// Real files StyleGAN2 users have (issue 15, items 12-18), rebuilt as small files by
// tests/data/checkpoints/make_user_files.py (its docstring says what each one is): TensorFlow fork
// pickles with training-only scalars and rectangular outputs, rosinality state dicts without noise
// buffers, state dicts under 'G_ema', a supplied w_avg; and the CLI around them (sg2 convert,
// inspect, generate: notices on stderr, --ws from .npz files and W+ latents without a batch axis).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

std::string ck(const std::string& name) { return source_path("tests/data/checkpoints/" + name); }
std::string user(const std::string& name) { return source_path("tests/data/checkpoints/users/" + name); }

bool has_text(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// The message of the Error converting `path` throws (empty, and a test failure, when it converts).
std::string refusal(const std::string& path, ErrorKind kind) {
  try {
    convert_checkpoint(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << path << " converted";
  return {};
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && (a.numel() == 0 || std::memcmp(a.data(), b.data(), size_t(a.numel()) * 4) == 0);
}

GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  return o;
}

}  // namespace

// --- item 14: TensorFlow fork pickles with training-only scalars --------------------------------

TEST(UserFiles, TfTrainingScalarsAreIgnoredWithANotice) {
  const ConvertResult base = convert_checkpoint_report(ck("tf_orig16_gray.pkl"));
  const ConvertResult fork = convert_checkpoint_report(user("tf_epochs16.pkl"));
  ASSERT_EQ(fork.model.tensors.size(), base.model.tensors.size());
  for (const auto& [name, t] : base.model.tensors) EXPECT_TRUE(same_bits(fork.model.at(name), t)) << name;
  EXPECT_EQ(config_to_json(fork.model.config), config_to_json(base.model.config));
  ASSERT_EQ(fork.report.warnings.size(), 1u);
  const std::string& w = fork.report.warnings[0];
  EXPECT_TRUE(has_text(w, "'epochs', 'epochs_1'") && has_text(w, "legacy.py")) << w;
  EXPECT_TRUE(base.report.warnings.empty());

  // What the network might need stays refused, by name.
  EXPECT_TRUE(has_text(refusal(user("tf_layer_scalar16.pkl"), ErrorKind::unsupported),
                       "unexpected TensorFlow variable 'synthesis/16x16/Conv1/gain'"));
  EXPECT_TRUE(has_text(refusal(user("tf_extra_tensor16.pkl"), ErrorKind::unsupported),
                       "unexpected TensorFlow variable 'extra' of shape [4]"));

  // sg2 convert and sg2 generate (which converts in memory) both say it on stderr.
  const std::string dir = temp_dir("tf_epochs");
  CliResult c = run_cli({"convert", user("tf_epochs16.pkl"), dir + "/m.safetensors"});
  ASSERT_EQ(c.status, 0) << describe(c);
  EXPECT_TRUE(
      has_text(c.err, "sg2 convert: warning: ignored TensorFlow variables the generator does not use: 'epochs'"))
      << c.err;
  CliResult g = run_cli({"generate", "--network", user("tf_epochs16.pkl"), "--device", "cpu", "--seeds", "0", "-q",
                         "--outdir", dir + "/out"});
  ASSERT_EQ(g.status, 0) << describe(g);
  EXPECT_TRUE(has_text(g.err, "sg2 generate: warning: ignored TensorFlow variables")) << g.err;
}

// --- item 18: recognisable unsupported files say what they are --------------------------------

TEST(UserFiles, RectangularTfForksAndStateDictsUnderGEmaSayWhatTheyAre) {
  // The rectangular TensorFlow forks: refused, saying why (they run on TensorFlow 1.x only, so no
  // goldens from their own code can check an implementation), the file named, one line.
  const std::string why =
      "); such forks (eps696/stylegan2 with init_res, size or scale_type; resolution_w / resolution_h) run on "
      "TensorFlow 1.x only, which cannot be run here, so there are no goldens from the fork's own code to check an "
      "implementation against, and sg2 does not read them (it runs StyleGAN-Human's non-square networks: its ADA "
      "pickles and rosinality-fork checkpoints)";
  const std::string rc = refusal(user("tf_rect_const16.pkl"), ErrorKind::unsupported);
  EXPECT_EQ(rc, user("tf_rect_const16.pkl") +
                    " (Gs): unsupported: a rectangular (non-square) generator from a StyleGAN2 fork (a 4x2 const" +
                    why);
  const std::string rk = refusal(user("tf_rect_kwarg16.pkl"), ErrorKind::unsupported);
  EXPECT_TRUE(has_text(rk, "rectangular (non-square) generator from a StyleGAN2 fork (static kwarg resolution_w)"))
      << rk;
  EXPECT_TRUE(has_text(rk, why)) << rk;
  // eps696/stylegan2's init_res = [4, 2]: a 4x2 const and [2^k * 4, 2^k * 2] noise variables, read
  // before as a square network would have failed on the const's shape as if the file were corrupt.
  const std::string ri = refusal(user("tf_init_res16.pkl"), ErrorKind::unsupported);
  EXPECT_TRUE(has_text(ri,
                       "tf_init_res16.pkl (Gs): unsupported: a rectangular (non-square) generator from a "
                       "StyleGAN2 fork (static kwarg init_res [4, 2], a 4x2 const: 16x8 images, height x width" +
                           why))
      << ri;
  // Its size / scale_type kwargs, which pad or scale the feature maps to another output size.
  const std::string rs = refusal(user("tf_size16.pkl"), ErrorKind::unsupported);
  EXPECT_TRUE(has_text(rs,
                       "tf_size16.pkl (Gs): unsupported: a rectangular (non-square) generator from a StyleGAN2 "
                       "fork (static kwargs size [16, 24], scale_type 'pad': 16x24 images, height x width" +
                           why))
      << rs;
  // The same kwargs where they change nothing (init_res [4, 4], size the network's own): a plain
  // square network, read as the pickle it was made from.
  const ConvertResult sq = convert_checkpoint_report(user("tf_init_res_square16.pkl"));
  const Model base = convert_checkpoint(ck("tf_orig16_gray.pkl"));
  EXPECT_EQ(config_to_json(sq.model.config), config_to_json(base.config));
  ASSERT_EQ(sq.model.tensors.size(), base.tensors.size());
  for (const auto& [name, t] : base.tensors) EXPECT_TRUE(same_bits(sq.model.at(name), t)) << name;
  // The CLI: exit 1, that one line, no output.
  const std::string dir = temp_dir("tf_rect");
  const CliResult g = run_cli({"generate", "--network", user("tf_init_res16.pkl"), "--device", "cpu", "--seeds", "0",
                               "-q", "--outdir", dir + "/out"});
  EXPECT_EQ(g.status, 1) << describe(g);
  EXPECT_TRUE(has_text(g.err, "static kwarg init_res [4, 2], a 4x2 const: 16x8 images") && has_text(g.err, why))
      << g.err;
  EXPECT_EQ(std::count(g.err.begin(), g.err.end(), '\n'), 1) << g.err;
  EXPECT_FALSE(file_exists(dir + "/out"));

  // {'G_ema': G.state_dict()} gets the bare state dict's explanation, not "a call of OrderedDict".
  const std::string sd = refusal(user("g_ema_official_sd.pt"), ErrorKind::unsupported);
  EXPECT_TRUE(has_text(sd, "'G_ema' is a bare state dict of an official generator (its module attributes are missing"))
      << sd;
  EXPECT_FALSE(has_text(sd, "OrderedDict")) << sd;

  // rosinality names under 'G_ema' are read as what they are.
  const ConvertResult r = convert_checkpoint_report(user("g_ema_rosinality_sd.pt"));
  const Model want = convert_checkpoint(ck("rosinality16.pt"));
  EXPECT_EQ(r.report.family, "rosinality");
  EXPECT_EQ(r.report.generator, "G_ema");
  for (const auto& [name, t] : want.tensors) EXPECT_TRUE(same_bits(r.model.at(name), t)) << name;
}

// --- item 15: rosinality files without noise buffers -------------------------------------------

TEST(UserFiles, RosinalityWithoutNoiseBuffersSaysWhatConstNoiseMeans) {
  const ConvertResult r = convert_checkpoint_report(user("rosinality16_nonoise.pt"));
  const Model full = convert_checkpoint(ck("rosinality16.pt"));
  EXPECT_TRUE(r.model.config.noise_const_missing);
  EXPECT_FALSE(full.config.noise_const_missing);
  ASSERT_EQ(r.model.tensors.size(), full.tensors.size());
  for (const auto& [name, t] : full.tensors) {
    const Tensor& got = r.model.at(name);
    if (name.size() > 12 && name.compare(name.size() - 12, 12, ".noise_const") == 0) {
      for (float v : got.vec()) ASSERT_EQ(v, 0.0f) << name;
    } else {
      EXPECT_TRUE(same_bits(got, t)) << name;
    }
  }
  EXPECT_TRUE(r.report.warnings.empty());
  ASSERT_EQ(r.report.config_warnings.size(), 1u);
  EXPECT_TRUE(has_text(r.report.config_warnings[0], "no noises.* buffers") &&
              has_text(r.report.config_warnings[0], "the same as none"))
      << r.report.config_warnings[0];

  // The flag survives a model file; inspect lists no noise maps that do not exist.
  const std::string dir = temp_dir("nonoise");
  save_model_file(dir + "/m.safetensors", r.model);
  EXPECT_TRUE(load_model_file(dir + "/m.safetensors").config.noise_const_missing);
  for (const std::string& f : {user("rosinality16_nonoise.pt"), dir + "/m.safetensors"}) {
    const InspectReport rep = inspect_file(f);
    EXPECT_TRUE(rep.noise_buffers.empty()) << f;
    const std::string text = inspect_to_text(rep);
    EXPECT_TRUE(has_text(text, "noise buffers     none stored (noise_const is zeros: noise mode const adds no noise)"))
        << text;
    EXPECT_FALSE(has_text(text, "noise_const maps")) << text;
    const nlohmann::json j = nlohmann::json::parse(inspect_to_json(rep));
    EXPECT_TRUE(j["noise_const_missing"].get<bool>());
    EXPECT_TRUE(j["noise_buffers"].empty());
    EXPECT_EQ(j["warnings"].size(), 1u) << j["warnings"];
  }
  EXPECT_EQ(inspect_file(ck("rosinality16.pt")).noise_buffers.size(), 5u);

  // generate with the default noise mode says it; the images are those of --noise-mode none.
  CliResult c = run_cli({"generate", "--network", dir + "/m.safetensors", "--device", "cpu", "--seeds", "3", "-q",
                         "--format", "npy", "--outdir", dir + "/const"});
  ASSERT_EQ(c.status, 0) << describe(c);
  EXPECT_TRUE(has_text(c.err, "sg2 generate: warning: this model stores no noise maps")) << c.err;
  EXPECT_EQ(std::count(c.err.begin(), c.err.end(), '\n'), 1) << c.err;
  CliResult direct = run_cli({"generate", "--network", user("rosinality16_nonoise.pt"), "--device", "cpu", "--seeds",
                              "3", "-q", "--outdir", dir + "/direct"});
  ASSERT_EQ(direct.status, 0) << describe(direct);
  EXPECT_EQ(direct.err, c.err);  // said once, for the run, also when the checkpoint is loaded directly
  CliResult n = run_cli({"generate", "--network", dir + "/m.safetensors", "--device", "cpu", "--seeds", "3", "-q",
                         "--format", "npy", "--noise-mode", "none", "--outdir", dir + "/none"});
  ASSERT_EQ(n.status, 0) << describe(n);
  EXPECT_TRUE(n.err.empty()) << n.err;
  EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/const/seed0003.npy"), read_npy_tensor(dir + "/none/seed0003.npy")));
  CliResult full_run = run_cli({"generate", "--network", ck("rosinality16.pt"), "--device", "cpu", "--seeds", "3", "-q",
                                "--outdir", dir + "/full"});
  ASSERT_EQ(full_run.status, 0) << describe(full_run);
  EXPECT_TRUE(full_run.err.empty()) << full_run.err;
}

TEST(UserFiles, OneMissingNoiseBufferIsNamed) {
  const std::string m = refusal(user("rosinality16_no_noise3.pt"), ErrorKind::bad_file);
  EXPECT_TRUE(
      has_text(m, "the state dict lacks 'noises.noise_3' (4 of the 5 noise buffers of a 16x16 generator are present)"))
      << m;
}

// --- item 16: the mean latent of files without one ---------------------------------------------

TEST(UserFiles, ConvertTakesASuppliedWAvg) {
  const std::string dir = temp_dir("w_avg");
  Tensor w({16});
  for (int i = 0; i < 16; ++i) w[i] = 0.25f * float(i) - 1.0f;
  write_npy(dir + "/w_avg.npy", w);
  write_npy(dir + "/w_avg_1x16.npy", w.reshaped({1, 16}));
  write_npy(dir + "/w_avg_15.npy", Tensor({15}));

  // The library: stored as given, not an estimate.
  ConvertOptions o;
  o.w_avg = w;
  const ConvertResult r = convert_checkpoint_report(ck("rosinality16_train.pt"), o);
  EXPECT_TRUE(same_bits(r.model.at("mapping.w_avg"), w));
  EXPECT_FALSE(r.model.config.w_avg_estimated);
  EXPECT_TRUE(r.report.w_avg_supplied);
  EXPECT_TRUE(r.report.w_avg_missing);
  o.w_avg = Tensor({2, 16});
  EXPECT_THROW(convert_checkpoint(ck("rosinality16_train.pt"), o), Error);

  // The CLI: [w_dim] and [1, w_dim]; a checkpoint's own w_avg replaced with a warning.
  for (const std::string& f : {dir + "/w_avg.npy", dir + "/w_avg_1x16.npy"}) {
    CliResult c = run_cli({"convert", ck("rosinality16_train.pt"), dir + "/m.safetensors", "--w-avg", f});
    ASSERT_EQ(c.status, 0) << describe(c);
    EXPECT_TRUE(c.err.empty()) << c.err;  // no "estimated" warning
    EXPECT_TRUE(has_text(c.out, "w_avg from " + f)) << c.out;
    const Model m = load_model_file(dir + "/m.safetensors");
    EXPECT_TRUE(same_bits(m.at("mapping.w_avg"), w));
    EXPECT_FALSE(m.config.w_avg_estimated);
  }
  CliResult own = run_cli({"convert", ck("rosinality16.pt"), dir + "/own.safetensors", "--w-avg", dir + "/w_avg.npy"});
  ASSERT_EQ(own.status, 0) << describe(own);
  EXPECT_TRUE(has_text(own.err, "warning: the supplied w_avg replaces the checkpoint's own")) << own.err;

  CliResult bad =
      run_cli({"convert", ck("rosinality16_train.pt"), dir + "/x.safetensors", "--w-avg", dir + "/w_avg_15.npy"});
  EXPECT_EQ(bad.status, 2) << describe(bad);
  EXPECT_TRUE(has_text(
      bad.err,
      "--w-avg " + dir + "/w_avg_15.npy: the supplied w_avg has shape [15]; this generator needs [16] or [1, 16]"))
      << bad.err;
  CliResult both = run_cli({"convert", ck("rosinality16_train.pt"), dir + "/x.safetensors", "--w-avg",
                            dir + "/w_avg.npy", "--w-avg-samples", "5"});
  EXPECT_EQ(both.status, 2) << describe(both);
  EXPECT_TRUE(has_text(both.err, "give one or the other")) << both.err;
  EXPECT_FALSE(file_exists(dir + "/x.safetensors"));
}

TEST(UserFiles, TruncationTowardAnEstimatedWAvgIsSaid) {
  const std::string dir = temp_dir("est");
  CliResult conv =
      run_cli({"convert", ck("rosinality16_train.pt"), dir + "/est.safetensors", "--w-avg-samples", "64", "-q"});
  ASSERT_EQ(conv.status, 0) << describe(conv);
  const std::string model = dir + "/est.safetensors";
  const std::string note = "warning: --trunc 0.7 truncates toward an estimated w_avg";
  CliResult g = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "1", "--trunc", "0.7", "-q",
                         "--outdir", dir + "/g"});
  ASSERT_EQ(g.status, 0) << describe(g);
  EXPECT_TRUE(has_text(g.err, "sg2 generate: " + note) && has_text(g.err, "sg2 convert --w-avg FILE.npy")) << g.err;
  CliResult plain =
      run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "1", "-q", "--outdir", dir + "/p"});
  ASSERT_EQ(plain.status, 0) << describe(plain);
  EXPECT_TRUE(plain.err.empty()) << plain.err;  // psi 1 does not use w_avg
  CliResult mix = run_cli({"mix", "--network", model, "--device", "cpu", "--rows", "1", "--cols", "2", "--trunc", "0.7",
                           "-q", "--outdir", dir + "/m"});
  ASSERT_EQ(mix.status, 0) << describe(mix);
  EXPECT_TRUE(has_text(mix.err, "sg2 mix: " + note)) << mix.err;
  CliResult walk = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "1,2", "--frames", "2",
                            "--trunc", "0.7", "--no-video", "-q", "--outdir", dir + "/i"});
  ASSERT_EQ(walk.status, 0) << describe(walk);
  EXPECT_TRUE(has_text(walk.err, "sg2 interpolate: " + note)) << walk.err;
  // A checkpoint loaded directly (the estimate made at load) says it too.
  CliResult direct = run_cli({"generate", "--network", ck("rosinality16_train.pt"), "--device", "cpu", "--seeds", "1",
                              "--trunc", "0.7", "-q", "--outdir", dir + "/d"});
  ASSERT_EQ(direct.status, 0) << describe(direct);
  EXPECT_TRUE(has_text(direct.err, note)) << direct.err;
  EXPECT_EQ(std::count(direct.err.begin(), direct.err.end(), '\n'), 1) << direct.err;  // not also at load
}

// --- item 17: --trunc 0 ------------------------------------------------------------------------

TEST(UserFiles, TruncZeroSaysEverySeedGivesTheSameImage) {
  const std::string dir = temp_dir("trunc0");
  const std::string model = write_tiny_model(dir);
  const std::string note = "sg2 generate: note: --trunc 0 replaces every w by w_avg: every seed gives the same image";
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-1", "--trunc", "0",
                         "--format", "npy", "--outdir", dir + "/a"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.err, note)) << r.err;
  EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/a/seed0000.npy"), read_npy_tensor(dir + "/a/seed0001.npy")));
  CliResult cut = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--trunc", "0",
                           "--trunc-cutoff", "2", "--outdir", dir + "/b"});
  ASSERT_EQ(cut.status, 0) << describe(cut);
  EXPECT_FALSE(has_text(cut.err, "same image")) << cut.err;  // rows from 2 on still differ
  CliResult q = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--trunc", "0", "-q",
                         "--outdir", dir + "/c"});
  ASSERT_EQ(q.status, 0) << describe(q);
  EXPECT_TRUE(q.err.empty()) << q.err;
}

// --- items 12 and 13: --ws files as users have them --------------------------------------------

TEST(UserFiles, WPlusWithoutItsBatchAxisIsNeverGuessed) {
  const std::string dir = temp_dir("wplus");
  const std::string model = write_tiny_model(dir);  // num_ws 6, w_dim 8
  Tensor one({6, 8});
  for (int64_t i = 0; i < one.numel(); ++i) one[i] = 0.1f * float(i % 7) - 0.3f;
  write_npy(dir + "/wplus.npy", one);
  write_npy(dir + "/w5.npy", one.slice0(0, 5));

  CliResult amb =
      run_cli({"generate", "--network", model, "--device", "cpu", "--ws", dir + "/wplus.npy", "--outdir", dir + "/x"});
  EXPECT_EQ(amb.status, 2) << describe(amb);
  EXPECT_TRUE(
      has_text(amb.err,
               "shape [6, 8] is ambiguous for this model (num_ws 6): one W+ latent saved without its batch "
               "axis, or 6 W latents. Add --ws-as w+ (one image) or --ws-as w (6 images), or save it as [1, 6, 8]"))
      << amb.err;
  EXPECT_FALSE(file_exists(dir + "/x"));

  Generator gen(load_model_file(model), cpu());
  CliResult wp = run_cli({"generate", "--network", model, "--device", "cpu", "--ws", dir + "/wplus.npy", "--ws-as",
                          "w+", "--format", "npy", "--outdir", dir + "/wp"});
  ASSERT_EQ(wp.status, 0) << describe(wp);
  EXPECT_TRUE(has_text(wp.out, "1 image ")) << wp.out;
  EXPECT_TRUE(
      tensors_near(read_npy_tensor(dir + "/wp/ws0000.npy"), gen.synthesize(one.reshaped({1, 6, 8})), 1e-6, "w+"));
  EXPECT_FALSE(file_exists(dir + "/wp/ws0001.npy"));

  CliResult w = run_cli({"generate", "--network", model, "--device", "cpu", "--ws", dir + "/wplus.npy", "--ws-as", "w",
                         "--outdir", dir + "/w"});
  ASSERT_EQ(w.status, 0) << describe(w);
  EXPECT_TRUE(has_text(w.out, "6 images")) << w.out;

  CliResult rows =
      run_cli({"generate", "--network", model, "--device", "cpu", "--ws", dir + "/w5.npy", "--outdir", dir + "/r"});
  ASSERT_EQ(rows.status, 0) << describe(rows);  // [5, 8] can only be W rows
  EXPECT_TRUE(has_text(rows.out, "5 images")) << rows.out;
  CliResult bad = run_cli({"generate", "--network", model, "--device", "cpu", "--ws", dir + "/w5.npy", "--ws-as", "w+",
                           "--outdir", dir + "/b"});
  EXPECT_EQ(bad.status, 2) << describe(bad);
  EXPECT_TRUE(has_text(bad.err, "--ws-as w+: " + dir + "/w5.npy is [5, 8], but one W+ latent of this model is [6, 8]"))
      << bad.err;
  CliResult alone = run_cli({"generate", "--network", model, "--seeds", "1", "--ws-as", "w", "--outdir", dir + "/b"});
  EXPECT_EQ(alone.status, 2) << describe(alone);
  EXPECT_TRUE(has_text(alone.err, "--ws-as is only used with --ws")) << alone.err;
}

TEST(UserFiles, ProjectedWNpzIsRead) {
  const std::string dir = temp_dir("npz");
  const std::string model = write_tiny_model(dir);  // num_ws 6, w_dim 8
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--ws", user("projected_w.npz"), "--format",
                         "npy", "--outdir", dir + "/a"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(
      has_text(r.err, "sg2 generate: note: --ws " + user("projected_w.npz") + ": array 'w' of the .npz, [1, 6, 8]"))
      << r.err;
  CliResult same = run_cli({"generate", "--network", model, "--device", "cpu", "--ws", user("projected_w_as.npy"),
                            "--format", "npy", "--outdir", dir + "/b"});
  ASSERT_EQ(same.status, 0) << describe(same);
  EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/a/ws0000.npy"), read_npy_tensor(dir + "/b/ws0000.npy")));

  CliResult one = run_cli(
      {"generate", "--network", model, "--device", "cpu", "--ws", user("one_array.npz"), "--outdir", dir + "/c"});
  ASSERT_EQ(one.status, 0) << describe(one);
  EXPECT_TRUE(has_text(one.err, "array 'latents' of the .npz, [2, 8]")) << one.err;  // as stored (W rows)
  EXPECT_TRUE(has_text(one.out, "2 images")) << one.out;

  CliResult two = run_cli(
      {"generate", "--network", model, "--device", "cpu", "--ws", user("two_arrays.npz"), "--outdir", dir + "/d"});
  EXPECT_EQ(two.status, 1) << describe(two);
  EXPECT_TRUE(has_text(two.err, "an .npz with arrays 'a', 'b', none called 'w'")) << two.err;
  // numpy.savez_compressed (issue 25): inflated with zlib, the same latents as the stored archive
  CliResult zipped = run_cli({"generate", "--network", model, "--device", "cpu", "--ws",
                              user("projected_w_compressed.npz"), "--format", "npy", "--outdir", dir + "/e"});
  ASSERT_EQ(zipped.status, 0) << describe(zipped);
  EXPECT_TRUE(has_text(zipped.err, "array 'w' of the .npz, [1, 6, 8]")) << zipped.err;
  EXPECT_TRUE(same_bits(read_npy_tensor(dir + "/a/ws0000.npy"), read_npy_tensor(dir + "/e/ws0000.npy")));
  EXPECT_FALSE(file_exists(dir + "/d"));
}
