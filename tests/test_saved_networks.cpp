// Networks as users save them with torch (issue 23, items 5 and 7), written by
// tests/data/latents/make_latents.py into tests/data/checkpoints/users/: a whole module pickled by
// torch.save(g_ema), state dicts under a key prefix (DataParallel's 'module.'), and a checkpoint
// whose only NaN is in w_avg (latent_avg).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
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

// --- item 5: torch.save(g_ema), a module instead of its state dict ------------------------------

TEST(SavedNetworks, APickledModuleIsNamedWithHowToSaveItsStateDict) {
  const std::string hostile_words = "refused (sg2 never runs code from a pickle; Python would have run it on load)";
  for (const char* f : {"g_ema_module.pt", "g_ema_module_legacy.pt"}) {
    const std::string m = refusal(user(f), ErrorKind::unsupported);
    EXPECT_TRUE(has_text(m, user(f) +
                                ": a pickled torch module (class model.Generator), not a state dict: sg2 never runs "
                                "pickled code, so it cannot rebuild a module; save its weights with "
                                "torch.save(g_ema.state_dict(), 'g_ema.pt')"))
        << m;
    EXPECT_FALSE(has_text(m, hostile_words)) << m;
  }
  EXPECT_TRUE(has_text(refusal(user("g_ema_module_in_dict.pt"), ErrorKind::unsupported),
                       ": 'g_ema' is a pickled torch module (class model.Generator), not a state dict: sg2 never runs "
                       "pickled code, so it cannot rebuild a module; save its weights in its place: "
                       "torch.save({'g_ema': g_ema.state_dict(), ...}, 'checkpoint.pt')"));
  CliResult r =
      run_cli({"generate", "--network", user("g_ema_module.pt"), "--seeds", "0", "--outdir", temp_dir("out") + "/x"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.err, "sg2 generate: error: " + user("g_ema_module.pt") + ": a pickled torch module")) << r.err;
}

// --- item 7: key prefixes ------------------------------------------------------------------------

TEST(SavedNetworks, AModulePrefixIsRemovedWithANote) {
  const ConvertResult base = convert_checkpoint_report(ck("rosinality16.pt"));
  for (const char* f : {"rosinality16_dataparallel.pt", "rosinality16_module_bare.pt"}) {
    SCOPED_TRACE(f);
    const ConvertResult dp = convert_checkpoint_report(user(f));
    ASSERT_EQ(dp.model.tensors.size(), base.model.tensors.size());
    for (const auto& [name, t] : base.model.tensors)
      if (name != "mapping.w_avg") {
        EXPECT_TRUE(same_bits(dp.model.at(name), t)) << name;
      }
    ModelConfig cfg = dp.model.config;
    cfg.w_avg_estimated = false;  // the bare state dict has no latent_avg: estimated
    EXPECT_EQ(config_to_json(cfg), config_to_json(base.model.config));
    bool noted = false;
    for (const std::string& n : dp.report.notes)
      noted = noted || n == "every state dict key starts with 'module.' (a DataParallel / DistributedDataParallel "
                            "model's state dict): sg2 read the keys without it";
    EXPECT_TRUE(noted);
  }
  EXPECT_TRUE(same_bits(convert_checkpoint(user("rosinality16_dataparallel.pt")).at("mapping.w_avg"),
                        base.model.at("mapping.w_avg")));
  CliResult i = run_cli({"inspect", user("rosinality16_dataparallel.pt")});
  ASSERT_EQ(i.status, 0) << describe(i);
  EXPECT_TRUE(has_text(i.out, "every state dict key starts with 'module.'")) << i.out;
}

TEST(SavedNetworks, APrefixOverOtherKeysIsNamedInTheError) {
  EXPECT_TRUE(has_text(refusal(user("prefixed_unknown.pt"), ErrorKind::unsupported),
                       user("prefixed_unknown.pt") +
                           ": unsupported: every key starts with 'generator.' (the state dict of a model that holds "
                           "the network as 'generator'), and without it the keys ('fc.weight', 'fc.bias') are not a "
                           "StyleGAN2 generator's"));
  EXPECT_TRUE(has_text(refusal(user("g_ema_official_sd_module.pt"), ErrorKind::unsupported),
                       ": unsupported: 'G_ema' is a bare state dict of an official generator with every key under "
                       "'module.' (a DataParallel / DistributedDataParallel model's state dict); its module "
                       "attributes are missing"));
}

// --- item 7: a NaN only in w_avg -----------------------------------------------------------------

TEST(SavedNetworks, ANanWAvgIsReadOnlyByTruncation) {
  const std::string nan_ck = user("rosinality16_nan_w_avg.pt");
  // inspect describes the file and says what is wrong with w_avg.
  CliResult i = run_cli({"inspect", nan_ck});
  ASSERT_EQ(i.status, 0) << describe(i);
  EXPECT_TRUE(has_text(i.out,
                       "stored, contains NaN or infinite values (truncation psi != 1 is refused; psi 1 never "
                       "reads it)"))
      << i.out;
  CliResult ij = run_cli({"inspect", nan_ck, "--json"});
  ASSERT_EQ(ij.status, 0) << describe(ij);
  const auto j = nlohmann::json::parse(ij.out);
  EXPECT_EQ(j["w_avg"]["finite"], false);
  EXPECT_TRUE(j["w_avg"]["norm"].is_null());

  // Runs at psi 1 never read it; psi != 1 is refused, saying why and what to do.
  const std::string dir = temp_dir("nan");
  CliResult g = run_cli(
      {"generate", "--network", nan_ck, "--device", "cpu", "--seeds", "0", "--format", "npy", "--outdir", dir + "/a"});
  ASSERT_EQ(g.status, 0) << describe(g);
  EXPECT_TRUE(has_text(g.err, "the checkpoint's w_avg contains NaN or infinite values")) << g.err;
  CliResult base = run_cli({"generate", "--network", ck("rosinality16.pt"), "--device", "cpu", "--seeds", "0",
                            "--format", "npy", "--outdir", dir + "/b"});
  ASSERT_EQ(base.status, 0) << describe(base);
  EXPECT_EQ(slurp(dir + "/a/seed0000.npy"), slurp(dir + "/b/seed0000.npy"));  // w_avg unused at psi 1
  CliResult t = run_cli(
      {"generate", "--network", nan_ck, "--device", "cpu", "--seeds", "0", "--trunc", "0.5", "--outdir", dir + "/t"});
  EXPECT_EQ(t.status, 2) << describe(t);
  EXPECT_TRUE(has_text(t.err,
                       "truncation psi 0.5 needs w_avg, and this model's w_avg contains NaN or infinite values "
                       "(the checkpoint's tracked average diverged?): use truncation psi 1, which never reads "
                       "it, or store another w_avg with sg2 convert CHECKPOINT OUT.safetensors --w-avg "
                       "W_AVG.npy"))
      << t.err;
  EXPECT_FALSE(file_exists(dir + "/t"));
  CliResult mix =
      run_cli({"mix", "--network", nan_ck, "--device", "cpu", "--rows", "1,2", "--cols", "3", "--outdir", dir + "/m"});
  EXPECT_EQ(mix.status, 0) << describe(mix);
  CliResult mix_t = run_cli({"mix", "--network", nan_ck, "--device", "cpu", "--rows", "1", "--cols", "3", "--trunc",
                             "0.7", "--outdir", dir + "/mt"});
  EXPECT_EQ(mix_t.status, 2) << describe(mix_t);
  EXPECT_TRUE(has_text(mix_t.err, "truncation psi 0.7 needs w_avg")) << mix_t.err;

  // Converted, the model file keeps it, and a supplied w_avg replaces it.
  CliResult c = run_cli({"convert", nan_ck, dir + "/nan.safetensors"});
  ASSERT_EQ(c.status, 0) << describe(c);
  EXPECT_TRUE(has_text(c.err, "sg2 convert: warning: the checkpoint's w_avg contains NaN or infinite values")) << c.err;
  Model m = load_model_file(dir + "/nan.safetensors");
  EXPECT_FALSE(w_avg_finite(m));
  Generator gen(std::move(m), cpu());
  const Tensor z = z_from_seed(0, 16);
  EXPECT_NO_THROW(gen.map(z, Tensor(), Truncation{}));
  Truncation half;
  half.psi = 0.5f;
  EXPECT_THROW(gen.map(z, Tensor(), half), Error);
  half.cutoff = 0;  // lerps no row: never reads w_avg
  EXPECT_NO_THROW(gen.map(z, Tensor(), half));
  CliResult fixed =
      run_cli({"convert", nan_ck, dir + "/fixed.safetensors", "--w-avg", ck("rosinality16_train_w_avg.npy")});
  ASSERT_EQ(fixed.status, 0) << describe(fixed);
  EXPECT_FALSE(has_text(fixed.err, "NaN")) << fixed.err;
  EXPECT_TRUE(w_avg_finite(load_model_file(dir + "/fixed.safetensors")));
  CliResult ft = run_cli({"generate", "--network", dir + "/fixed.safetensors", "--device", "cpu", "--seeds", "0",
                          "--trunc", "0.5", "--outdir", dir + "/ft"});
  EXPECT_EQ(ft.status, 0) << describe(ft);
}

TEST(SavedNetworks, ANanElsewhereIsStillRefused) {
  const std::string dir = temp_dir("nan_weight");
  Model m = load_model_file(write_tiny_model(dir));
  m.tensors["synthesis.b4.conv1.weight"][3] = std::numeric_limits<float>::quiet_NaN();
  m.tensors["mapping.w_avg"][0] = std::numeric_limits<float>::infinity();
  try {
    check_model(m, "m");
    ADD_FAILURE() << "a NaN weight passed";
  } catch (const Error& e) {
    EXPECT_TRUE(has_text(e.what(), "m: 1 problem with the tensors: synthesis.b4.conv1.weight: contains NaN"))
        << e.what();
  }
}
