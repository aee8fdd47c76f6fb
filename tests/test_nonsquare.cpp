// Non-square networks (StyleGAN-Human's 1024x512 and the like; issue 25 item 4): the config's
// image height and width, the model file's format_version 2, the StyleGAN-Human pickle built
// with its own code (tests/data/nonsquare; its goldens are checked in test_goldens.cpp), the
// oneDNN path against the reference ops, every command's outputs at the network's aspect ratio,
// and the bad inputs (inconsistent noise or const shapes). The GPU: tests/gpu/test_gpu_nonsquare.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "readers/family_common.h"
#include "readers/zip_reader.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"
#include "test_cli_run.h"
#include "test_util.h"

using namespace sg2;
using namespace sg2::test;
using json = nlohmann::json;

namespace {

const std::string kHuman = "tests/data/nonsquare/human_skip32x16/network-snapshot.pkl";

GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  o.precision = Precision::fp32;
  return o;
}

/// A random 16-px network, `h` x `w` (one of them 16).
Model random_model(int h, int w, Architecture arch = Architecture::skip) {
  ModelConfig c = make_config(16, 64, 8, 8, 8, 0, 3, 2, arch, std::nullopt, 0);
  c.img_height = h;
  c.img_width = w;
  c.validate();
  return make_random_model(c, 3);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// The safetensors header of a model file as JSON, and a writer for an edited copy.
json header_of(const std::string& path) {
  const std::string b = slurp(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(b[size_t(i)])) << (8 * i);
  return json::parse(b.substr(8, n));
}

void write_with_header(const std::string& from, const std::string& to, const json& header) {
  const std::string b = slurp(from);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(b[size_t(i)])) << (8 * i);
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char(uint8_t(uint64_t(h.size()) >> (8 * i)));
  out += h;
  out += b.substr(8 + n);
  std::ofstream(to, std::ios::binary) << out;
}

}  // namespace

TEST(NonSquare, StyleGanHumanPickleIsReadAsItsOwnCodeBuildsIt) {
  const Model m = convert_checkpoint(source_path(kHuman));
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.img_resolution, 32);
  EXPECT_EQ(c.height(), 32);
  EXPECT_EQ(c.width(), 16);
  EXPECT_FALSE(c.square());
  EXPECT_EQ(m.at("synthesis.b4.const").shape(), (std::vector<int64_t>{8, 4, 2}));
  EXPECT_EQ(m.at("synthesis.b32.conv1.noise_const").shape(), (std::vector<int64_t>{32, 16}));
  // The fork's noise_const buffer, as its code stored it ([res, res // 2]).
  const Tensor golden = read_npy_tensor(source_path("tests/data/nonsquare/human_skip32x16/noise_const_b8_conv0.npy"));
  EXPECT_TRUE(tensors_near(m.at("synthesis.b8.conv0.noise_const"), golden, 0, "noise_const"));
  const auto layers = noise_layers(c);
  ASSERT_FALSE(layers.empty());
  EXPECT_EQ(layers.back().height, 32);
  EXPECT_EQ(layers.back().width, 16);
  EXPECT_EQ(layers.front().height, 4);
  EXPECT_EQ(layers.front().width, 2);
}

TEST(NonSquare, ModelFileIsFormatVersion2AndSquareFilesStayVersion1) {
  const std::string dir = temp_dir("ns_file");
  const Model m = convert_checkpoint(source_path(kHuman));
  save_model_file(dir + "/h.safetensors", m);
  const json h = header_of(dir + "/h.safetensors");
  EXPECT_EQ(h["__metadata__"]["format_version"], "2");
  const json cfg = json::parse(h["__metadata__"]["config"].get<std::string>());
  EXPECT_EQ(cfg["img_height"], 32);
  EXPECT_EQ(cfg["img_width"], 16);
  EXPECT_EQ(cfg["img_resolution"], 32);
  const Model back = load_model_file(dir + "/h.safetensors");
  EXPECT_EQ(back.config.height(), 32);
  EXPECT_EQ(back.config.width(), 16);
  for (const auto& [name, t] : m.tensors) EXPECT_TRUE(tensors_near(back.at(name), t, 0, name));
  // Square: version 1, no new keys (the text every sg2 reads).
  Model sq = make_random_model(make_config(16, 64, 8, 8, 8, 0, 3, 2, Architecture::skip, std::nullopt, 0), 1);
  save_model_file(dir + "/s.safetensors", sq);
  const json hs = header_of(dir + "/s.safetensors");
  EXPECT_EQ(hs["__metadata__"]["format_version"], "1");
  EXPECT_EQ(hs["__metadata__"]["config"].get<std::string>().find("img_height"), std::string::npos);
  // A version-1 file cannot hold a non-square config (an older reader would not see its keys).
  json v1 = h;
  v1["__metadata__"]["format_version"] = "1";
  write_with_header(dir + "/h.safetensors", dir + "/v1.safetensors", v1);
  EXPECT_NE(error_of([&] { load_model_file(dir + "/v1.safetensors"); }).find("non-square"), std::string::npos);
}

TEST(NonSquare, BadShapesAreRefusedWithOneLine) {
  const std::string dir = temp_dir("ns_bad");
  save_model_file(dir + "/h.safetensors", convert_checkpoint(source_path(kHuman)));
  const json h = header_of(dir + "/h.safetensors");
  // A noise_const stored transposed ([4, 8], the same bytes): the tensor and both shapes named.
  json bad = h;
  bad["synthesis.b8.conv0.noise_const"]["shape"] = {4, 8};
  write_with_header(dir + "/h.safetensors", dir + "/noise.safetensors", bad);
  std::string e = error_of([&] { load_model_file(dir + "/noise.safetensors"); });
  EXPECT_NE(e.find("synthesis.b8.conv0.noise_const"), std::string::npos) << e;
  EXPECT_NE(e.find("expected [8, 4], got [4, 8]"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // A width that is not img_resolution / 2 or / 4.
  json cfg = json::parse(h["__metadata__"]["config"].get<std::string>());
  cfg["img_width"] = 12;
  bad = h;
  bad["__metadata__"]["config"] = cfg.dump();
  write_with_header(dir + "/h.safetensors", dir + "/w12.safetensors", bad);
  e = error_of([&] { load_model_file(dir + "/w12.safetensors"); });
  EXPECT_NE(e.find("non-square image 32x12"), std::string::npos) << e;
  // Const shapes the readers refuse: not a power-of-two multiple, or wider than 4.
  ModelConfig c;
  c.img_resolution = 64;
  for (auto [ch, cw] : {std::pair<int64_t, int64_t>{4, 3}, {3, 4}, {4, 8}, {8, 4}, {2, 2}, {4, 0}}) {
    e = error_of([&] { readers::set_const_shape(c, ch, cw, "f.pkl", "synthesis.b4.const"); });
    EXPECT_NE(e.find("non-square"), std::string::npos) << ch << "x" << cw << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  readers::set_const_shape(c, 2, 4, "f.pkl", "synthesis.b4.const");
  EXPECT_EQ(c.height(), 32);
  EXPECT_EQ(c.width(), 64);
  // Noise maps given for the wrong shape.
  Generator gen(random_model(16, 8), cpu());
  NoiseSpec n;
  n.maps.push_back({});
  for (const NoiseLayer& l : noise_layers(gen.config())) n.maps[0].push_back(Tensor({l.resolution, l.resolution}));
  e = error_of([&] { gen.synthesize(gen.map(z_from_seed(1, 8), Tensor(), Truncation{}), n); });
  EXPECT_NE(e.find("must be [4, 2]"), std::string::npos) << e;
}

TEST(NonSquare, CpuExecutorMatchesTheReferenceOps) {
  // The default CPU path (oneDNN where built) against kernels/ref, every shape and architecture,
  // batch 1 and 3, noise const / random / none, with a clamp and fp16 blocks (run in float32).
  for (auto [h, w] : {std::pair<int, int>{16, 8}, {16, 4}, {8, 16}, {4, 16}})
    for (Architecture a : {Architecture::skip, Architecture::resnet, Architecture::orig}) {
      ModelConfig c = make_config(16, 128, 16, 8, 8, 0, 3, 2, a, 1.0f, 2);
      c.img_height = h;
      c.img_width = w;
      const Model m = make_random_model(c, 11);
      GeneratorOptions ref = cpu();
      ref.reference_cpu = true;
      Generator fast(m, cpu()), slow(m, ref);
      const Tensor ws = slow.map(z_from_seeds({4, 5, 6}, 8), Tensor(), Truncation{});
      for (NoiseMode mode : {NoiseMode::const_, NoiseMode::random, NoiseMode::none}) {
        NoiseSpec n;
        n.mode = mode;
        const Tensor want = slow.synthesize(ws, n);
        double peak = 1;
        for (float v : want.vec()) peak = std::max(peak, double(std::fabs(v)));
        const std::string label = std::to_string(h) + "x" + std::to_string(w) + " " + to_string(a);
        const Tensor got = fast.synthesize(ws, n);
        EXPECT_TRUE(tensors_near(got, want, 2e-5 * peak, label));
        NoiseSpec one = n;
        if (mode == NoiseMode::random) one.keys = {2};
        EXPECT_TRUE(tensors_near(fast.synthesize(ws.slice0(2, 3), one), got.slice0(2, 3), 0, label + " batch 1"));
      }
    }
}

TEST(NonSquare, EveryShapeRunsWithEveryNoiseMode) {
  for (auto [h, w] : {std::pair<int, int>{16, 8}, {16, 4}, {8, 16}, {4, 16}})
    for (Architecture a : {Architecture::skip, Architecture::resnet, Architecture::orig}) {
      Generator gen(random_model(h, w, a), cpu());
      const Tensor ws = gen.map(z_from_seeds({1, 2}, 8), Tensor(), Truncation{});
      for (NoiseMode mode : {NoiseMode::const_, NoiseMode::none, NoiseMode::random}) {
        NoiseSpec n;
        n.mode = mode;
        const Tensor img = gen.synthesize(ws, n);
        ASSERT_EQ(img.shape(), (std::vector<int64_t>{2, 3, h, w}));
        for (float v : img.vec()) ASSERT_TRUE(std::isfinite(v));
        // Batch invariance: the second image alone is the same bits.
        const Tensor one = gen.synthesize(ws.slice0(1, 2), [&] {
          NoiseSpec k = n;
          if (mode == NoiseMode::random) k.keys = {1};
          return k;
        }());
        EXPECT_TRUE(tensors_near(one, img.slice0(1, 2), 0, "batch invariance"));
      }
    }
  const Tensor r = random_noise_map(1, 2, 3, 4, 6);
  EXPECT_EQ(r.shape(), (std::vector<int64_t>{4, 6}));
  const Tensor sq = random_noise_map(1, 2, 3, 6);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(r[i], sq[i]);  // element i drawn as the square map's
}

TEST(NonSquareCli, EveryCommandWritesTheAspectRatio) {
  const std::string dir = temp_dir("ns_cli");
  const std::string pkl = source_path(kHuman);
  // convert + inspect
  CliResult r = run_cli({"convert", pkl, dir + "/h.safetensors"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("16x32x3"), std::string::npos) << r.out;
  const std::string model = dir + "/h.safetensors";
  r = run_cli({"inspect", model});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("16x32, 3 channels (width x height: a non-square network)"), std::string::npos) << r.out;
  r = run_cli({"inspect", "--json", pkl});
  ASSERT_EQ(r.status, 0) << r.err;
  const json ij = json::parse(r.out);
  EXPECT_EQ(ij["img_height"], 32);
  EXPECT_EQ(ij["img_width"], 16);
  // generate: PNGs, npy, a grid, a dataset zip
  r = run_cli(
      {"generate", "--network", model, "--device", "cpu", "--seeds", "0-3", "--grid", "2x2", "--outdir", dir + "/g"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(16x32, 3 channels, cpu)"), std::string::npos) << r.out;
  Image8 im = read_png(dir + "/g/seed0000.png");
  EXPECT_EQ(im.width, 16);
  EXPECT_EQ(im.height, 32);
  im = read_png(dir + "/g/grid.png");
  EXPECT_EQ(im.width, 32);
  EXPECT_EQ(im.height, 64);
  // the PNG is the CPU generator's image of the fork's network
  Generator gen(load_model(pkl), cpu());
  const Tensor img = gen.generate(z_from_seed(0, gen.config().z_dim), Tensor(), Truncation{}, NoiseSpec{});
  EXPECT_TRUE(read_png(dir + "/g/seed0000.png").pixels == to_image8(img, 0).pixels);
  r = run_cli(
      {"generate", "--network", pkl, "--device", "cpu", "--seeds", "0", "--format", "npy", "--outdir", dir + "/n"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_npy(dir + "/n/seed0000.npy").shape, (std::vector<int64_t>{1, 3, 32, 16}));
  r = run_cli(
      {"generate", "--network", pkl, "--device", "cpu", "--seeds", "0", "--format", "u8npy", "--outdir", dir + "/u"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_npy(dir + "/u/seed0000.npy").shape, (std::vector<int64_t>{1, 32, 16, 3}));
  r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-2", "--outdir", dir + "/d.zip"});
  ASSERT_EQ(r.status, 0) << r.err;
  {  // the archive's PNGs (stored entries) are 16 wide, 32 high: their IHDR
    const std::string zb = slurp(dir + "/d.zip");
    readers::ZipArchive zip(reinterpret_cast<const uint8_t*>(zb.data()), zb.size(), "d.zip");
    const readers::ZipEntry* e = zip.find("00000/img00000002.png");
    ASSERT_NE(e, nullptr);
    const std::string_view png = zip.data(*e);
    ASSERT_GT(png.size(), 24u);
    auto be32 = [&](size_t o) {
      return uint32_t(uint8_t(png[o])) << 24 | uint32_t(uint8_t(png[o + 1])) << 16 |
             uint32_t(uint8_t(png[o + 2])) << 8 | uint32_t(uint8_t(png[o + 3]));
    };
    EXPECT_EQ(be32(16), 16u);
    EXPECT_EQ(be32(20), 32u);
    EXPECT_NE(zip.find("dataset.json"), nullptr);
  }
  // mix: cells and grid at the aspect ratio
  r = run_cli({"mix", "--network", model, "--device", "cpu", "--rows", "1", "--cols", "2,3", "--outdir", dir + "/m"});
  ASSERT_EQ(r.status, 0) << r.err;
  im = read_png(dir + "/m/grid.png");  // (cols + 1) x (rows + 1) cells
  EXPECT_EQ(im.width, 3 * 16);
  EXPECT_EQ(im.height, 2 * 32);
  im = read_png(dir + "/m/1-2.png");
  EXPECT_EQ(im.width, 16);
  EXPECT_EQ(im.height, 32);
  // interpolate: frames
  r = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "0,1", "--frames", "2", "--no-video",
               "--outdir", dir + "/i"});
  ASSERT_EQ(r.status, 0) << r.err;
  im = read_png(dir + "/i/frame00001.png");
  EXPECT_EQ(im.width, 16);
  EXPECT_EQ(im.height, 32);
  // compare: the first frame is seed 0's image
  r = run_cli({"compare", dir + "/g/seed0000.png", dir + "/i/frame00000.png"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  // blend: the summary names the blended network's width x height
  r = run_cli({"blend", "--low", pkl, "--high", model, "--at", "16", "--out", dir + "/b.safetensors"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("b.safetensors (16x32):"), std::string::npos) << r.out;
  // bench on the CPU
  r = run_cli({"bench", "--network", model, "--device", "cpu", "--batch", "1", "--iters", "1", "--warmup", "0", "-q"});
  EXPECT_EQ(r.status, 0) << r.err;
}
