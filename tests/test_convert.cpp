// Checkpoint conversion of the families and storage variants without public goldens, on small
// files written by tests/data/checkpoints/make_checkpoints.py (see its docstring). What each
// check is against is stated per test: the official converter's output (TensorFlow pickles),
// the official forward pass (goldens made by the script), or the same weights written another way.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/npy.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;

namespace {

std::string ck(const std::string& name) { return test::source_path("tests/data/checkpoints/" + name); }

GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  o.precision = Precision::fp32;
  return o;
}

/// Every tensor of `a` equals `b`'s after `round` (identity by default), bit for bit.
void expect_same_tensors(const Model& a, const Model& b, const std::string& label, float (*round)(float) = nullptr) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size()) << label;
  for (const auto& [name, t] : b.tensors) {
    ASSERT_TRUE(a.has(name)) << label << ": missing " << name;
    const Tensor& x = a.at(name);
    ASSERT_EQ(x.shape(), t.shape()) << label << ": " << name;
    int64_t bad = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float want = round ? round(t[i]) : t[i];
      const float got = x[i];
      if (std::memcmp(&got, &want, 4) != 0) ++bad;
    }
    EXPECT_EQ(bad, 0) << label << ": " << name << " differs in " << bad << " of " << t.numel() << " values";
  }
}

void expect_same_config(const Model& a, const Model& b, const std::string& label) {
  EXPECT_EQ(config_to_json(a.config), config_to_json(b.config)) << label;
}

float to_half(float v) { return detail::half_to_float(detail::float_to_half(v)); }
float to_bf16(float v) {  // round to nearest even, as torch's .to(bfloat16)
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

/// The official forward goldens made by the script: seed 0, class 1 (when conditional), psi 0.7, noise const.
void expect_official_golden(const Model& m, const std::string& prefix) {
  Generator gen(m, cpu());
  Tensor c = m.config.c_dim > 0 ? one_hot({1}, m.config.c_dim) : Tensor();
  Truncation t;
  t.psi = 0.7f;
  Tensor ws = gen.map(z_from_seed(0, m.config.z_dim), c, t);
  EXPECT_TRUE(test::tensors_near(ws, read_npy_tensor(ck(prefix + "_s0_ws.npy")), 2e-5, prefix + " ws"));
  EXPECT_TRUE(
      test::tensors_near(gen.synthesize(ws), read_npy_tensor(ck(prefix + "_s0_img.npy")), 1e-4, prefix + " img"));
}

}  // namespace

// Against the official stylegan2-ada-pytorch legacy.convert_tf_generator applied to the same
// file (tf_ada_resnet16_official.pkl), tensor by tensor and bit for bit, and the official
// forward pass of that network.
TEST(ConvertTf, TfAdaPickleMatchesTheOfficialConverter) {
  ConvertResult r = convert_checkpoint_report(ck("tf_ada_resnet16.pkl"));
  Model official = convert_checkpoint(ck("tf_ada_resnet16_official.pkl"));
  EXPECT_EQ(r.report.family, "stylegan2-ada-tf");
  EXPECT_EQ(r.model.provenance.source_family, "stylegan2-ada-tf");
  EXPECT_EQ(r.report.generator, "Gs");
  const ModelConfig& c = r.model.config;
  EXPECT_EQ(c.synthesis.architecture, Architecture::resnet);
  EXPECT_EQ(c.c_dim, 3);
  EXPECT_EQ(c.z_dim, 12);
  EXPECT_EQ(c.w_dim, 16);
  EXPECT_EQ(c.mapping.num_layers, 3);
  ASSERT_TRUE(c.synthesis.conv_clamp.has_value());
  EXPECT_EQ(*c.synthesis.conv_clamp, 256.0f);
  EXPECT_EQ(c.synthesis.fp16_resolutions, (std::vector<int>{8, 16}));
  expect_same_config(r.model, official, "tf_ada");
  expect_same_tensors(r.model, official, "tf_ada vs legacy.py");
  expect_official_golden(r.model, "tf_ada_resnet16");
}

TEST(ConvertTf, OriginalTfPickleMatchesTheOfficialConverter) {
  ConvertResult r = convert_checkpoint_report(ck("tf_orig16_gray.pkl"));
  Model official = convert_checkpoint(ck("tf_orig16_gray_official.pkl"));
  EXPECT_EQ(r.report.family, "stylegan2-tf");
  EXPECT_EQ(r.model.config.synthesis.architecture, Architecture::orig);
  EXPECT_EQ(r.model.config.img_channels, 1);
  EXPECT_FALSE(r.model.config.synthesis.conv_clamp.has_value());
  EXPECT_TRUE(r.model.config.synthesis.fp16_resolutions.empty());
  expect_same_config(r.model, official, "tf_orig");
  expect_same_tensors(r.model, official, "tf_orig vs legacy.py");
  expect_official_golden(r.model, "tf_orig16_gray");
}

// Against the official forward pass (ada_base16_s0_*.npy), then the storage variants against
// the same weights stored contiguously in float32.
TEST(ConvertAda, StorageVariantsGiveTheSameWeights) {
  Model base = convert_checkpoint(ck("ada_base16.pkl"));
  EXPECT_EQ(base.config.synthesis.architecture, Architecture::resnet);
  EXPECT_EQ(base.config.c_dim, 3);
  expect_official_golden(base, "ada_base16");

  ConvertResult cl = convert_checkpoint_report(ck("ada_channels_last16.pkl"));
  expect_same_config(cl.model, base, "channels_last");
  expect_same_tensors(cl.model, base, "channels_last");

  ConvertResult h = convert_checkpoint_report(ck("ada_fp16_16.pkl"));
  EXPECT_EQ(h.report.stored_dtypes.count("float16"), 1u);
  EXPECT_EQ(h.report.stored_dtypes.count("float32"), 0u);
  expect_same_config(h.model, base, "fp16");
  expect_same_tensors(h.model, base, "fp16", to_half);

  // Modules without conv_clamp / use_fp16 / gain attributes: the constructor kwargs decide.
  ConvertResult bare = convert_checkpoint_report(ck("ada_bare16.pkl"));
  expect_same_config(bare.model, base, "bare attributes");
  expect_same_tensors(bare.model, base, "bare attributes");
  EXPECT_EQ(bare.report.notes.size(), 3u);

  ConvertResult b = convert_checkpoint_report(ck("ada_bf16_16.pkl"));
  EXPECT_EQ(b.report.stored_dtypes.count("bfloat16"), 1u);
  expect_same_config(b.model, base, "bf16");
  expect_same_tensors(b.model, base, "bf16", to_bf16);
}

// Legacy torch.save against the zip torch.save of the same dict; the training layout against
// both (apart from w_avg, which it lacks) and its w_avg against the documented estimate computed
// independently in float64 numpy by the script.
TEST(ConvertRosinality, LegacyZipAndTrainingLayouts) {
  ConvertResult zip = convert_checkpoint_report(ck("rosinality16.pt"));
  ConvertResult legacy = convert_checkpoint_report(ck("rosinality16_legacy.pt"));
  EXPECT_EQ(zip.report.container, "torch.save zip");
  EXPECT_EQ(legacy.report.container, "torch.save legacy");
  EXPECT_EQ(legacy.model.provenance.source_family, "rosinality");
  expect_same_config(legacy.model, zip.model, "legacy");
  expect_same_tensors(legacy.model, zip.model, "legacy vs zip");
  EXPECT_EQ(zip.model.config.synthesis.channels, (std::map<int, int>{{4, 8}, {8, 8}, {16, 4}}));
  EXPECT_EQ(zip.model.config.mapping.num_layers, 2);

  ConvertResult train = convert_checkpoint_report(ck("rosinality16_train.pt"));
  EXPECT_TRUE(train.report.w_avg_missing);
  EXPECT_TRUE(train.report.w_avg_estimated);
  EXPECT_TRUE(train.model.config.w_avg_estimated);
  EXPECT_EQ(train.report.w_avg_samples, 10000);
  EXPECT_TRUE(train.report.warnings.empty());  // the estimate is recorded in the config: a config warning
  ASSERT_EQ(train.report.config_warnings.size(), 1u);
  EXPECT_NE(train.report.config_warnings[0].find("RandomState(0)"), std::string::npos)
      << train.report.config_warnings[0];
  Model no_avg = train.model, zip_no_avg = zip.model;
  no_avg.tensors.erase("mapping.w_avg");
  zip_no_avg.tensors.erase("mapping.w_avg");
  expect_same_tensors(no_avg, zip_no_avg, "training layout");
  EXPECT_TRUE(test::tensors_near(train.model.at("mapping.w_avg"), read_npy_tensor(ck("rosinality16_train_w_avg.npy")),
                                 2e-5, "estimated w_avg vs numpy"));
  // The estimate follows the options and is deterministic.
  ConvertOptions o;
  o.w_avg_samples = 100;
  o.w_avg_seed = 7;
  Model a = convert_checkpoint(ck("rosinality16_train.pt"), o), b = convert_checkpoint(ck("rosinality16_train.pt"), o);
  EXPECT_TRUE(test::tensors_near(a.at("mapping.w_avg"), b.at("mapping.w_avg"), 0, "deterministic"));
  EXPECT_FALSE(test::tensors_near(a.at("mapping.w_avg"), train.model.at("mapping.w_avg"), 1e-7, "different seed"));
  ConvertOptions keep;
  keep.estimate_w_avg = false;
  Model z = convert_checkpoint(ck("rosinality16_train.pt"), keep);
  EXPECT_FALSE(z.config.w_avg_estimated);
  EXPECT_TRUE(test::tensors_near(z.at("mapping.w_avg"), Tensor({16}), 0, "zeros"));
}

TEST(ConvertProvenance, ModelFileRoundTripAndLoadModel) {
  const std::string src = ck("tf_ada_resnet16.pkl");
  Model m = convert_checkpoint(src);
  EXPECT_EQ(m.provenance.source_file, "tf_ada_resnet16.pkl");
  EXPECT_EQ(m.provenance.source_sha256, detail::sha256_file(src));
  EXPECT_EQ(m.provenance.converter, std::string("sg2 ") + version());
  const std::string out = test::temp_dir("roundtrip") + "/m.safetensors";
  save_model_file(out, m);
  Model back = load_model_file(out);
  expect_same_config(back, m, "roundtrip");
  expect_same_tensors(back, m, "roundtrip");
  EXPECT_EQ(back.provenance.source_family, "stylegan2-ada-tf");
  EXPECT_EQ(back.provenance.source_sha256, m.provenance.source_sha256);
  // Converting a model file again is a clear error; load_model takes either.
  try {
    convert_checkpoint(out);
    ADD_FAILURE() << "a model file converted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("safetensors file"), std::string::npos) << e.what();
  }
  expect_same_tensors(load_model(src), m, "load_model(checkpoint)");
  expect_same_tensors(load_model(out), m, "load_model(model file)");
}

TEST(ConvertInspect, ReportAndJson) {
  InspectReport r = inspect_file(test::source_path("tests/data/fixtures/fp16clamp64/network-snapshot.pkl"));
  EXPECT_EQ(r.family, "stylegan2-ada-pytorch");
  EXPECT_EQ(r.generator, "G_ema");
  EXPECT_EQ(r.config.img_resolution, 64);
  EXPECT_EQ(r.config.num_ws, 10);
  EXPECT_EQ(r.config.mapping.num_layers, 2);
  EXPECT_EQ(r.config.synthesis.fp16_resolutions, (std::vector<int>{32, 64}));
  EXPECT_EQ(r.noise_buffers.size(), 9u);
  EXPECT_TRUE(r.w_avg_present);
  auto j = nlohmann::json::parse(inspect_to_json(r));
  for (const char* key :
       {"family", "img_resolution", "num_ws", "mapping_layers", "c_dim", "img_channels", "channels", "fp16_resolutions",
        "conv_clamp", "noise_buffers", "w_avg", "parameter_count", "config", "sha256"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["conv_clamp"].get<double>(), 256.0);
  EXPECT_EQ(j["channels"]["64"].get<int>(), 16);
  EXPECT_EQ(j["parameter_count"].get<int64_t>(), parameter_count(convert_checkpoint(r.file)));
  const std::string text = inspect_to_text(r);
  EXPECT_NE(text.find("fp16 blocks       32, 64"), std::string::npos) << text;
  // A checkpoint without w_avg says so (and is not estimated by inspect).
  InspectReport t = inspect_file(ck("rosinality16_train.pt"));
  EXPECT_FALSE(t.w_avg_present);
  EXPECT_NE(inspect_to_text(t).find("absent"), std::string::npos);
  // A model file is inspected too, with its provenance.
  const std::string out = test::temp_dir("inspect") + "/m.safetensors";
  save_model_file(out, convert_checkpoint(ck("rosinality16.pt")));
  InspectReport mf = inspect_file(out);
  EXPECT_EQ(mf.format, "sg2 model file");
  EXPECT_EQ(mf.family, "rosinality");
  EXPECT_EQ(mf.provenance.source_file, "rosinality16.pt");
}

TEST(ConvertUnsupported, NamedInAClearError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"unsupported_stylegan1_tf.pkl", "StyleGAN (v1)"},
      {"unsupported_progressive_tf.pkl", "progressive"},
      {"unsupported_stylegan3.pkl", "StyleGAN3"},
      {"unsupported_discriminator.pkl", "discriminator-only"},
      {"unsupported_swagan.pt", "SWAGAN"},
  };
  for (const auto& [file, words] : cases) {
    try {
      convert_checkpoint(ck(file));
      ADD_FAILURE() << file << " converted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::unsupported) << msg;
      EXPECT_NE(msg.find("unsupported: "), std::string::npos) << msg;
      EXPECT_NE(msg.find(words), std::string::npos) << msg;
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

TEST(ConvertSpeed, Digits32WellUnderASecond) {
  const auto t0 = std::chrono::steady_clock::now();
  Model m = convert_checkpoint(test::source_path("models/digits32/digits32.pkl"));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("digits32.pkl (26 MB) converted in %.3f s\n", s);
  EXPECT_EQ(parameter_count(m), 2552083);
  EXPECT_LT(s, 5.0);  // ~0.15 s on one core of the dev machine; generous for sanitizer builds
}
