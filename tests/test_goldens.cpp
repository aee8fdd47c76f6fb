// Converted checkpoints on the CPU backend vs the official goldens.
//
// Every case of tests/data/fixtures (official code on CPU, float32; see its README),
// tests/data/official_extra (resnet, orig, RGBA, gray, cutoff, asymmetric filter), tests/data/nonsquare
// (StyleGAN-Human's non-square networks, made by its own code) and
// models/digits32 is converted from its checkpoint with sg2::convert_checkpoint, run with
// sg2::Generator on the CPU (the default oneDNN path; digits32 also on the reference ops of
// kernels/ref, the oracle test_cpu_backend.cpp compares the oneDNN path with), and compared with every golden its
// manifest lists:
//   ws (mapping with psi and cutoff) within 2e-5, images within 1e-4 (noise const and none),
//   PNGs at most 1 level apart on at most 0.2 % of the values, debug intermediates within
//   1e-4 + 1e-5 |ref|, W+ input, style mixing, the TF run_generator noise convention (tfrun_*),
//   and the rosinality calls (fixed / zero / explicit noise, W+, truncation toward latent_avg,
//   inject_index mixing). Tolerances are those of tests/data/fixtures/README.md.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sg2/convert.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "test_util.h"

using namespace sg2;
using json = nlohmann::json;

namespace {

constexpr double kWsTol = 2e-5, kImgTol = 1e-4, kPngFrac = 0.002;

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

Tensor read_z(const std::string& path) {
  std::vector<int64_t> shape;
  std::vector<double> z = read_npy_f64(path, &shape);
  Tensor t(shape);
  for (size_t i = 0; i < z.size(); ++i) t[static_cast<int64_t>(i)] = static_cast<float>(z[i]);
  return t;
}

std::string str_or(const json& j, const char* key, const std::string& def = "") {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : def;
}

Truncation trunc_of(const json& g, const char* key = "psi") {
  Truncation t;
  if (g.contains(key) && g[key].is_number()) t.psi = g[key].get<float>();
  if (g.contains("truncation_cutoff") && g["truncation_cutoff"].is_number_integer())
    t.cutoff = g["truncation_cutoff"].get<int>();
  return t;
}

NoiseSpec noise_of(const std::string& mode) {
  NoiseSpec n;
  n.mode = parse_noise_mode(mode.empty() ? "const" : mode);
  return n;
}

/// rows [0, k) of W+ from `a`, the rest from `b` (both [1, num_ws, w_dim]).
Tensor splice(const Tensor& a, const Tensor& b, const std::vector<int>& rows_from_b) {
  Tensor out = a;
  const int64_t w = a.dim(2);
  for (int k : rows_from_b)
    for (int64_t j = 0; j < w; ++j) out[k * w + j] = b[k * w + j];
  return out;
}

/// torchvision save_image(normalize=True, value_range=(-1, 1)) as rosinality's samples use:
/// uint8(clamp((clamp(x, -1, 1) + 1) / 2 * 255 + 0.5, 0, 255)).
Image8 rosinality_image8(const Tensor& img) {
  Image8 im;
  im.channels = static_cast<int>(img.dim(1));
  im.height = static_cast<int>(img.dim(2));
  im.width = static_cast<int>(img.dim(3));
  im.pixels.resize(static_cast<size_t>(im.channels * im.height * im.width));
  for (int c = 0; c < im.channels; ++c)
    for (int y = 0; y < im.height; ++y)
      for (int x = 0; x < im.width; ++x) {
        float v = img[(static_cast<int64_t>(c) * im.height + y) * im.width + x];
        v = std::min(1.0f, std::max(-1.0f, v));
        v = (v + 1.0f) / 2.0f;
        v = v * 255.0f + 0.5f;
        v = std::min(255.0f, std::max(0.0f, v));
        im.pixels[(static_cast<size_t>(y) * im.width + x) * im.channels + c] = static_cast<uint8_t>(v);
      }
  return im;
}

GeneratorOptions cpu(const std::string& dump = "") {
  GeneratorOptions o;
  o.device = Device{};
  o.precision = Precision::fp32;
  o.dump_dir = dump;
  return o;
}

struct Case {
  std::string name;
  std::string dir;  // relative to the source tree
};

std::vector<Case> nvlabs_cases() {
  return {{"tiny32", "tests/data/fixtures/tiny32"},
          {"cond64", "tests/data/fixtures/cond64"},
          {"fp16clamp64", "tests/data/fixtures/fp16clamp64"},
          {"gray32", "tests/data/fixtures/gray32"},
          {"tf_sg2_32", "tests/data/fixtures/tf_sg2_32"},
          {"sg3_sg2_32", "tests/data/fixtures/sg3_sg2_32"},
          {"ada_resnet32_rgba_cond", "tests/data/official_extra/ada_resnet32_rgba_cond"},
          {"ada_orig32_gray", "tests/data/official_extra/ada_orig32_gray"},
          {"sg3_resnet64", "tests/data/official_extra/sg3_resnet64"},
          {"sg3_skip16_filter", "tests/data/official_extra/sg3_skip16_filter"},
          // non-square: StyleGAN-Human's own code (tests/data/nonsquare/make_stylegan_human.py)
          {"human_skip32x16", "tests/data/nonsquare/human_skip32x16"},
          {"human_resnet16x8", "tests/data/nonsquare/human_resnet16x8"}};
}

class NvlabsGoldens : public ::testing::TestWithParam<Case> {};

TEST_P(NvlabsGoldens, ConvertedModelReproducesEveryGolden) {
  const Case& cs = GetParam();
  const std::string dir = test::source_path(cs.dir) + "/";
  const json m = read_json(dir + "manifest.json");
  Model model = convert_checkpoint(dir + m["model_file"].get<std::string>());
  Generator gen(model, cpu());
  const ModelConfig& cfg = gen.config();
  int checked = 0;
  for (const json& g : m["goldens"]) {
    const std::string type = str_or(g, "type", "image");
    if (type == "image") {
      const std::string label = cs.name + " " + str_or(g, "img");
      Tensor z = read_z(dir + g["z"].get<std::string>());
      Tensor c = g.contains("c") && g["c"].is_string() ? read_npy_tensor(dir + g["c"].get<std::string>()) : Tensor();
      Tensor ws = gen.map(z, c, trunc_of(g));
      const Tensor golden_ws = read_npy_tensor(dir + g["ws"].get<std::string>());
      EXPECT_TRUE(test::tensors_near(ws, golden_ws, kWsTol, label + " ws"));
      Tensor img = gen.synthesize(ws, noise_of(str_or(g, "noise_mode")));
      const Tensor golden_img = read_npy_tensor(dir + g["img"].get<std::string>());
      EXPECT_TRUE(test::tensors_near(img, golden_img, kImgTol, label));
      // W+ input: the golden ws themselves, straight into synthesis.
      EXPECT_TRUE(test::tensors_near(gen.synthesize(golden_ws, noise_of(str_or(g, "noise_mode"))), golden_img, kImgTol,
                                     label + " from W+"));
      if (g.contains("png") && g["png"].is_string()) {
        EXPECT_TRUE(test::images_near(to_image8(img, 0), read_png(dir + g["png"].get<std::string>()), kPngFrac,
                                      label + " png"));
      }
    } else if (type == "style_mixing") {
      // style_mixing.py: w = w_avg + (mapping(z) - w_avg) * psi, rows col_styles from the column seed.
      const int row = g["row_seed"].get<int>(), col = g["col_seed"].get<int>();
      const std::string label = cs.name + " mix " + std::to_string(row) + "-" + std::to_string(col);
      Tensor z = z_from_seeds({static_cast<uint32_t>(row), static_cast<uint32_t>(col)}, cfg.z_dim);
      Tensor all_w = gen.map(z, Tensor(), trunc_of(g));
      Tensor w_row = all_w.slice0(0, 1), w_col = all_w.slice0(1, 2);
      Tensor mixed = splice(w_row, w_col, g["col_styles"].get<std::vector<int>>());
      EXPECT_TRUE(test::tensors_near(mixed, read_npy_tensor(dir + g["ws"].get<std::string>()), kWsTol, label + " ws"));
      Tensor img = gen.synthesize(mixed, noise_of(str_or(g, "noise_mode")));
      EXPECT_TRUE(test::tensors_near(img, read_npy_tensor(dir + g["img"].get<std::string>()), kImgTol, label));
      EXPECT_TRUE(
          test::images_near(to_image8(img, 0), read_png(dir + g["png"].get<std::string>()), kPngFrac, label + " png"));
      Tensor diag = gen.synthesize(all_w, noise_of(str_or(g, "noise_mode")));  // the batched diagonal call
      const std::string kr = "diag_" + std::to_string(row) + "_img", kc = "diag_" + std::to_string(col) + "_img";
      EXPECT_TRUE(test::tensors_near(diag.slice0(0, 1), read_npy_tensor(dir + g[kr].get<std::string>()), kImgTol,
                                     label + " diag row"));
      EXPECT_TRUE(test::tensors_near(diag.slice0(1, 2), read_npy_tensor(dir + g[kc].get<std::string>()), kImgTol,
                                     label + " diag col"));
    } else if (type == "tf_run_generator") {
      // run_generator.py: z, then one noise draw per noise variable, from the same RandomState.
      const uint32_t seed = g["seed"].get<uint32_t>();
      const std::string label = cs.name + " tfrun seed " + std::to_string(seed);
      TfSeedInputs in = tf_seed_inputs(seed, cfg);
      EXPECT_TRUE(test::tensors_near(in.z, read_z(dir + g["z"].get<std::string>()), 0, label + " z"));
      const auto& files = g["noise"];
      ASSERT_EQ(files.size(), in.noise_maps.size());
      for (size_t k = 0; k < files.size(); ++k) {
        Tensor ref = read_z(dir + files[k].get<std::string>());
        EXPECT_TRUE(test::tensors_near(in.noise_maps[k], ref.reshaped(in.noise_maps[k].shape()), 0,
                                       label + " noise" + std::to_string(k)));
      }
      NoiseSpec noise;
      noise.maps = {in.noise_maps};
      Tensor img = gen.synthesize(gen.map(in.z, Tensor(), trunc_of(g)), noise);
      EXPECT_TRUE(test::tensors_near(img, read_npy_tensor(dir + g["img"].get<std::string>()), kImgTol, label));
      EXPECT_TRUE(
          test::images_near(to_image8(img, 0), read_png(dir + g["png"].get<std::string>()), kPngFrac, label + " png"));
    } else {
      ADD_FAILURE() << cs.name << ": unknown golden type " << type;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
  // Debug intermediates: mapping layer outputs and every block's x and img.
  if (m.contains("debug") && m["debug"].is_object()) {
    const json& d = m["debug"];
    const std::string dump = test::temp_dir(cs.name + "_dump");
    Generator dbg(model, cpu(dump));
    Tensor c;
    if (d.contains("class_idx") && d["class_idx"].is_number_integer())
      c = one_hot({d["class_idx"].get<int>()}, cfg.c_dim);
    Truncation t;
    t.psi = d["psi"].get<float>();
    dbg.generate(z_from_seed(d["seed"].get<uint32_t>(), cfg.z_dim), c, t, noise_of(str_or(d, "noise_mode")));
    auto compare = [&](const std::string& mine, const std::string& ref) {
      Tensor a = read_npy_tensor(dump + "/" + mine), b = read_npy_tensor(dir + ref);
      double peak = 0;
      for (float v : b.vec()) peak = std::max(peak, double(std::fabs(v)));
      EXPECT_TRUE(test::tensors_near(a, b, kImgTol + 1e-5 * peak, cs.name + " debug " + mine));
    };
    for (const json& l : d["mapping"])
      compare("mapping_fc" + std::to_string(l["layer"].get<int>()) + ".npy", l["out"].get<std::string>());
    for (const json& b : d["blocks"]) {
      const std::string tag = "b" + std::to_string(b["res"].get<int>());
      compare(tag + "_x.npy", b["x"].get<std::string>());
      if (b.contains("img") && b["img"].is_string()) compare(tag + "_img.npy", b["img"].get<std::string>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, NvlabsGoldens, ::testing::ValuesIn(nvlabs_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

namespace {

void check_digits32(const GeneratorOptions& options) {
  const std::string dir = test::source_path("models/digits32") + "/";
  const json m = read_json(dir + "manifest.json");
  Model model = convert_checkpoint(dir + m["model_file"].get<std::string>());
  EXPECT_EQ(model.provenance.source_family, "stylegan3");
  EXPECT_EQ(model.provenance.source_sha256, m["sha256"].get<std::string>());
  EXPECT_EQ(parameter_count(model), m["config"]["params_G_ema"].get<int64_t>());
  Generator gen(model, options);
  for (const json& g : m["goldens"]) {
    const std::string label = "digits32 " + g["img"].get<std::string>();
    Tensor c = one_hot({g["class_idx"].get<int>()}, model.config.c_dim);
    Tensor ws = gen.map(read_z(dir + g["z"].get<std::string>()), c, trunc_of(g, "truncation_psi"));
    EXPECT_TRUE(test::tensors_near(ws, read_npy_tensor(dir + g["ws"].get<std::string>()), kWsTol, label + " ws"));
    Tensor img = gen.synthesize(ws, noise_of(g["noise_mode"].get<std::string>()));
    EXPECT_TRUE(test::tensors_near(img, read_npy_tensor(dir + g["img"].get<std::string>()), kImgTol, label));
    EXPECT_TRUE(
        test::images_near(to_image8(img, 0), read_png(dir + g["png"].get<std::string>()), kPngFrac, label + " png"));
  }
}

}  // namespace

// The default CPU backend (oneDNN) and the reference ops (kernels/ref, the tests' oracle).
TEST(Digits32Goldens, ConvertedModelReproducesEveryGolden) { check_digits32(cpu()); }

TEST(Digits32Goldens, ReferenceOpsReproduceEveryGolden) {
  GeneratorOptions o = cpu();
  o.reference_cpu = true;
  check_digits32(o);
}

std::vector<Case> rosinality_cases() {
  return {{"rosinality64", "tests/data/fixtures/rosinality64"},
          // non-square: StyleGAN-Human's rosinality fork (tests/data/nonsquare/make_stylegan_human_rosinality.py)
          {"human_rosinality32x16", "tests/data/nonsquare/human_rosinality32x16"}};
}

class RosinalityGoldens : public ::testing::TestWithParam<Case> {};

TEST_P(RosinalityGoldens, ConvertedModelReproducesEveryCall) {
  const Case& cs = GetParam();
  const std::string dir = test::source_path(cs.dir) + "/";
  const json m = read_json(dir + "manifest.json");
  Model model = convert_checkpoint(dir + m["model_file"].get<std::string>());
  EXPECT_EQ(model.provenance.source_family, "rosinality");
  EXPECT_FALSE(model.config.w_avg_estimated);
  EXPECT_TRUE(test::tensors_near(model.at("mapping.w_avg"), read_npy_tensor(dir + "latent_avg.npy"), 0, "latent_avg"));
  Generator gen(model, cpu());
  const ModelConfig& cfg = gen.config();
  int checked = 0;
  for (const json& g : m["goldens"]) {
    const std::string label = cs.name + " " + g["img"].get<std::string>();
    const std::string call = g["call"].get<std::string>();
    Tensor img;
    if (g.contains("wplus")) {  // g_ema([wplus], input_is_latent=True, randomize_noise=False)
      img = gen.synthesize(read_npy_tensor(dir + g["wplus"].get<std::string>()));
    } else if (str_or(g, "type") == "style_mixing") {  // inject_index: rows < k from z1, the rest from z2
      const int k = g["inject_index"].get<int>();
      Tensor ws1 = gen.map(read_z(dir + g["z"][0].get<std::string>()), Tensor());
      Tensor ws2 = gen.map(read_z(dir + g["z"][1].get<std::string>()), Tensor());
      std::vector<int> rows;
      for (int r = k; r < cfg.num_ws; ++r) rows.push_back(r);
      Tensor latents = splice(ws1, ws2, rows);
      EXPECT_TRUE(test::tensors_near(latents, read_npy_tensor(dir + g["latents"].get<std::string>()), kWsTol,
                                     label + " latents"));
      img = gen.synthesize(latents);
    } else {
      const int seed = g["seed"].get<int>();
      Tensor z = read_z(dir + g["z"].get<std::string>());
      Truncation t;
      const double trunc = g.value("truncation", 1.0);
      if (trunc < 1) t.psi = static_cast<float>(trunc);  // rosinality truncates only below 1, toward latent_avg here
      Tensor ws = gen.map(z, Tensor(), t);
      const std::string tag = "_s" + std::to_string(seed) + (trunc < 1 ? "_trunc" + json(trunc).dump() : std::string());
      EXPECT_TRUE(test::tensors_near(ws, read_npy_tensor(dir + "latents" + tag + ".npy"), kWsTol, label + " latents"));
      if (trunc >= 1) {
        Tensor w = read_npy_tensor(dir + "w_s" + std::to_string(seed) + ".npy");
        EXPECT_TRUE(test::tensors_near(ws.slice0(0, 1).reshaped({cfg.num_ws, cfg.w_dim}).slice0(0, 1), w, kWsTol,
                                       label + " w"));
      }
      NoiseSpec noise;
      if (call.find("zeros") != std::string::npos) {
        noise.mode = NoiseMode::none;
      } else if (g.contains("noise")) {
        std::vector<Tensor> maps;
        const auto layers = noise_layers(cfg);
        for (size_t l = 0; l < g["noise"].size(); ++l)
          maps.push_back(
              read_npy_tensor(dir + g["noise"][l].get<std::string>()).reshaped({layers[l].height, layers[l].width}));
        noise.maps = {maps};
      }
      img = gen.synthesize(ws, noise);
    }
    EXPECT_TRUE(test::tensors_near(img, read_npy_tensor(dir + g["img"].get<std::string>()), kImgTol, label));
    if (g.contains("png") && g["png"].is_string()) {
      EXPECT_TRUE(test::images_near(rosinality_image8(img), read_png(dir + g["png"].get<std::string>()), kPngFrac,
                                    label + " png"));
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(m["goldens"].size()));
  if (m["config"].contains("img_height")) {  // a non-square fork: the image is height x width
    EXPECT_EQ(cfg.height(), m["config"]["img_height"].get<int>());
    EXPECT_EQ(cfg.width(), m["config"]["img_width"].get<int>());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RosinalityGoldens, ::testing::ValuesIn(rosinality_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
