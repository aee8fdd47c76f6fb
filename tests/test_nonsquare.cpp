// Non-square networks (StyleGAN-Human's 1024x512 and the like; issue 25 item 4): the config's
// image height and width, the model file's format_version 2, the StyleGAN-Human pickle built
// with its own code (tests/data/nonsquare; its goldens are checked in test_goldens.cpp), the
// oneDNN path against the reference ops, every command's outputs at the network's aspect ratio
// (--size included), and the bad inputs (inconsistent noise or const shapes, in model files, in
// StyleGAN-Human's ADA pickles and in its rosinality fork's checkpoints). The GPU:
// tests/gpu/test_gpu_nonsquare.cpp and, through the CLI, tests/gpu/test_gpu_nonsquare_cli.cpp.
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
  r = run_cli({"inspect", pkl});  // the checkpoint's noise buffers, each map as width x height
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("7 noise_const maps (2x4, 4x8, 4x8, 8x16, 8x16, 16x32, 16x32; width x height)"),
            std::string::npos)
      << r.out;
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

// --- StyleGAN-Human's rosinality fork (torch_utils/models.py): a [1, C, 4, 2] input.input, noise
// buffers [1, 1, r, r / 2]; tests/data/nonsquare/human_rosinality32x16, its goldens in test_goldens.cpp.

namespace {

const std::string kHumanRos = "tests/data/nonsquare/human_rosinality32x16";

/// A pickle int as torch's pickler writes small ones (BININT1, BININT2).
std::string pint(int v) {
  if (v < 256) return std::string("K") + char(v);
  return std::string("M") + char(v & 255) + char(v >> 8);
}
/// The pickle text of a tuple of ints (MARK ... TUPLE).
std::string ptuple(std::initializer_list<int> v) {
  std::string s = "(";
  for (int x : v) s += pint(x);
  return s + "t";
}

/// One edit of the checkpoint's data.pkl: the first `from` after the key `after` (every `from`
/// when `after` is empty) becomes `to`, of the same length.
struct PklEdit {
  std::string after, from, to;
};

std::string pkl_key(const std::string& name) {
  std::string s = "X";
  for (int i = 0; i < 4; ++i) s += char(uint8_t(uint32_t(name.size()) >> (8 * i)));
  return s + name;
}

/// The fixture's checkpoint with data.pkl edited and its CRC-32s (the data descriptor's and the
/// central directory's) recomputed: tensors of other shapes or strides in the documented format.
/// `replaced` counts the replacements.
std::string edited_checkpoint(const std::vector<PklEdit>& edits, int* replaced = nullptr) {
  std::string b = slurp(source_path(kHumanRos + "/checkpoint.pt"));
  const readers::ZipArchive zip(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "checkpoint.pt");
  const readers::ZipEntry* e = zip.find("checkpoint/data.pkl");
  EXPECT_NE(e, nullptr);
  if (e == nullptr) return b;
  std::string pkl = b.substr(size_t(e->data_offset), size_t(e->size));
  int n = 0;
  for (const PklEdit& ed : edits) {
    EXPECT_EQ(ed.from.size(), ed.to.size());
    if (ed.after.empty()) {
      for (size_t at = pkl.find(ed.from); at != std::string::npos; at = pkl.find(ed.from, at + ed.to.size())) {
        pkl.replace(at, ed.to.size(), ed.to);
        ++n;
      }
      continue;
    }
    const size_t key = pkl.find(pkl_key(ed.after));
    EXPECT_NE(key, std::string::npos) << ed.after;
    const size_t at = key == std::string::npos ? key : pkl.find(ed.from, key);
    EXPECT_NE(at, std::string::npos) << ed.after;
    if (at == std::string::npos) continue;
    pkl.replace(at, ed.to.size(), ed.to);
    ++n;
  }
  b.replace(size_t(e->data_offset), pkl.size(), pkl);
  const uint32_t crc = readers::crc32(reinterpret_cast<const uint8_t*>(pkl.data()), pkl.size());
  auto put32 = [&](size_t o, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[o + size_t(i)] = char(uint8_t(v >> (8 * i)));
  };
  const size_t end = size_t(e->data_offset + e->size);  // data descriptor: [PK\7\8] crc csize usize
  put32(b.compare(end, 4, "PK\x07\x08") == 0 ? end + 4 : end, crc);
  const std::string central = std::string("PK\x01\x02");
  for (size_t at = b.find(central); at != std::string::npos; at = b.find(central, at + 4))
    if (b.compare(at + 46, e->name.size(), e->name) == 0) put32(at + 16, crc);
  if (replaced) *replaced = n;
  return b;
}

ConvertResult convert_bytes(const std::string& b) {
  return convert_checkpoint_memory(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "checkpoint.pt");
}

/// [1, C, H, W] -> [1, C, W, H].
Tensor transposed(const Tensor& t) {
  const int64_t C = t.dim(1), H = t.dim(2), W = t.dim(3);
  Tensor o({1, C, W, H});
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) o[(c * W + x) * H + y] = t[(c * H + y) * W + x];
  return o;
}

/// Edits that turn noise buffer `i` of h x w into its w x h transpose (the same storage).
std::vector<PklEdit> transpose_noise(int i, int h, int w) {
  const std::string k = "noises.noise_" + std::to_string(i);
  return {{k, ptuple({1, 1, h, w}), ptuple({1, 1, w, h})},
          {k, ptuple({h * w, h * w, w, 1}), ptuple({h * w, h * w, 1, w})}};
}

}  // namespace

TEST(NonSquareRosinality, ForkCheckpointIsReadAsItsCodeBuildsIt) {
  const ConvertResult r = convert_checkpoint_report(source_path(kHumanRos + "/checkpoint.pt"));
  const Model& m = r.model;
  EXPECT_EQ(m.provenance.source_family, "rosinality");
  EXPECT_EQ(m.config.img_resolution, 32);
  EXPECT_EQ(m.config.height(), 32);
  EXPECT_EQ(m.config.width(), 16);
  EXPECT_EQ(m.at("synthesis.b4.const").shape(), (std::vector<int64_t>{8, 4, 2}));
  EXPECT_EQ(m.at("synthesis.b4.conv1.noise_const").shape(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(m.at("synthesis.b32.conv1.noise_const").shape(), (std::vector<int64_t>{32, 16}));
  // noises.noise_1 (b8.conv0) as the fork stored it: [1, 1, 8, 4]
  const Tensor golden = read_npy_tensor(source_path(kHumanRos + "/noise_l1.npy"));
  EXPECT_TRUE(tensors_near(m.at("synthesis.b8.conv0.noise_const"), golden.reshaped({8, 4}), 0, "noise_1"));
  // The model file keeps it: format_version 2, the same tensors.
  const std::string dir = temp_dir("ns_ros");
  save_model_file(dir + "/r.safetensors", m);
  const Model back = load_model_file(dir + "/r.safetensors");
  EXPECT_EQ(back.config.height(), 32);
  EXPECT_EQ(back.config.width(), 16);
  for (const auto& [name, t] : m.tensors) EXPECT_TRUE(tensors_near(back.at(name), t, 0, name));
}

TEST(NonSquareRosinality, TheMirroredLayoutIsTheTransposedImage) {
  // The fork's checkpoint with every spatial tensor transposed in place (shapes and strides over
  // the same storage): input.input [1, 8, 2, 4], noise maps [1, 1, r / 2, r], 3x3 kernels
  // transposed. The blur kernel is symmetric, so the network draws the transposed image.
  std::vector<PklEdit> edits = {{"input.input", ptuple({1, 8, 4, 2}), ptuple({1, 8, 2, 4})},
                                {"input.input", ptuple({64, 8, 2, 1}), ptuple({64, 8, 1, 2})},
                                {"", pint(9) + pint(3) + pint(1) + "t", pint(9) + pint(1) + pint(3) + "t"}};
  for (int i = 0; i < 7; ++i) {
    const int r = 4 << ((i + 1) / 2);
    for (const PklEdit& e : transpose_noise(i, r, r / 2)) edits.push_back(e);
  }
  int replaced = 0;
  const std::string b = edited_checkpoint(edits, &replaced);
  EXPECT_EQ(replaced, 2 + 7 + 14);  // the const, 7 conv kernels, 7 noise maps
  const ConvertResult r = convert_bytes(b);
  EXPECT_EQ(r.model.config.height(), 16);
  EXPECT_EQ(r.model.config.width(), 32);
  EXPECT_EQ(r.model.at("synthesis.b16.conv0.noise_const").shape(), (std::vector<int64_t>{8, 16}));
  Generator gen(r.model, cpu());
  const std::string dir = source_path(kHumanRos) + "/";
  for (int seed : {0, 5}) {
    const std::string s = std::to_string(seed);
    for (const auto& [ws, img] :
         {std::pair<std::string, std::string>{"latents_s" + s, "img_s" + s + "_trunc1_fixednoise"},
          {"wplus_s" + s, "img_s" + s + "_wplus_fixednoise"}}) {
      const Tensor got = gen.synthesize(read_npy_tensor(dir + ws + ".npy"));
      ASSERT_EQ(got.shape(), (std::vector<int64_t>{1, 3, 16, 32}));
      EXPECT_TRUE(tensors_near(got, transposed(read_npy_tensor(dir + img + ".npy")), 1e-4, "mirrored " + img));
    }
  }
}

TEST(NonSquareRosinality, InconsistentShapesAreRefusedWithOneLine) {
  auto refused = [](const std::vector<PklEdit>& edits) {
    const std::string b = edited_checkpoint(edits);
    std::string e = error_of([&] { convert_bytes(b); });
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.rfind("checkpoint.pt", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    return e;
  };
  // A noise map stored transposed ([1, 1, 8, 16] in a 32x16 network).
  std::string e = refused(transpose_noise(3, 16, 8));
  EXPECT_NE(e.find("'noises.noise_3' has shape [1, 1, 8, 16], expected [1, 1, 16, 8]"), std::string::npos) << e;
  EXPECT_NE(e.find("inconsistent with input.input's 4x2 (height x width), which makes block 16's maps 16x8"),
            std::string::npos)
      << e;
  // The const mirrored but the noise maps left as they are.
  e = refused({{"input.input", ptuple({1, 8, 4, 2}), ptuple({1, 8, 2, 4})},
               {"input.input", ptuple({64, 8, 2, 1}), ptuple({64, 8, 1, 2})}});
  EXPECT_NE(e.find("'noises.noise_0' has shape [1, 1, 4, 2], expected [1, 1, 2, 4]"), std::string::npos) << e;
  // Consts no fork has: 4x1 and 1x4 (views of the same storage), refused as non-square.
  for (auto [h, w] : {std::pair<int, int>{4, 1}, {1, 4}}) {
    e = refused({{"input.input", ptuple({1, 8, 4, 2}), ptuple({1, 8, h, w})},
                 {"input.input", ptuple({64, 8, 2, 1}), ptuple({64, 8, w, 1})}});
    EXPECT_NE(e.find("unsupported non-square network: input.input is " + std::to_string(h) + "x" + std::to_string(w)),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("StyleGAN-Human"), std::string::npos) << e;
  }
}

TEST(NonSquareRosinalityCli, GenerateMatchesTheForksGoldens) {
  const std::string dir = temp_dir("ns_ros_cli");
  const std::string ck = source_path(kHumanRos + "/checkpoint.pt"), gold = source_path(kHumanRos) + "/";
  CliResult r = run_cli(
      {"generate", "--network", ck, "--device", "cpu", "--seeds", "0,5", "--format", "npy", "--outdir", dir + "/n"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli({"generate", "--network", ck, "--device", "cpu", "--seeds", "0,5", "--trunc", "0.7", "--format", "npy",
               "--outdir", dir + "/t"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"0", "5"}) {
    const std::string f = std::string("/seed000") + s + ".npy";
    EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/n" + f),
                             read_npy_tensor(gold + "img_s" + s + "_trunc1_fixednoise.npy"), 1e-4, f));
    EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/t" + f),
                             read_npy_tensor(gold + "img_s" + s + "_trunc0.7_fixednoise.npy"), 1e-4, f));
  }
  r = run_cli({"generate", "--network", ck, "--device", "cpu", "--seeds", "0", "--noise-mode", "none", "--format",
               "npy", "--outdir", dir + "/z"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(tensors_near(read_npy_tensor(dir + "/z/seed0000.npy"),
                           read_npy_tensor(gold + "img_s0_trunc1_zeronoise.npy"), 1e-4, "noise none"));
  r = run_cli({"generate", "--network", ck, "--device", "cpu", "--seeds", "0", "--outdir", dir + "/p"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(16x32, 3 channels, cpu)"), std::string::npos) << r.out;
  const Image8 im = read_png(dir + "/p/seed0000.png");
  EXPECT_EQ(im.width, 16);
  EXPECT_EQ(im.height, 32);
  r = run_cli({"inspect", ck});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("16x32, 3 channels (width x height: a non-square network)"), std::string::npos) << r.out;
}

// --- --size on a non-square network (docs/bulk.md "Smaller images"): N is the larger side, or WxH
// (width first); every image is the box filter of the full-size one, in integers.

TEST(NonSquareCli, SizeDownscalesAtTheAspectRatio) {
  const std::string dir = temp_dir("ns_size");
  const std::string pkl = source_path(kHuman);  // 16 wide, 32 high
  auto generate = [&](const std::string& out, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"generate", "--network", pkl, "--device", "cpu", "--seeds", "0-2", "--outdir", out};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_cli(a);
  };
  CliResult r = generate(dir + "/full", {"-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  const char* seeds[] = {"seed0000.png", "seed0001.png", "seed0002.png"};
  struct Case {
    std::string size;
    int f;
  };
  for (const Case& c :
       {Case{"16", 2}, Case{"8x16", 2}, Case{"8", 4}, Case{"4x8", 4}, Case{"32", 1}, Case{"16x32", 1}}) {
    const std::string out = dir + "/s" + c.size;
    r = generate(out, {"--size", c.size});
    ASSERT_EQ(r.status, 0) << describe(r);
    // the summary names the images as written, width x height
    EXPECT_NE(r.out.find(std::to_string(16 / c.f) + "x" + std::to_string(32 / c.f)), std::string::npos) << r.out;
    for (const char* s : seeds) {
      const std::string what = std::string("--size ") + c.size + ", " + s;
      EXPECT_EQ(png_size(slurp(out + "/" + s)), std::make_pair(uint32_t(16 / c.f), uint32_t(32 / c.f))) << what;
      const Image8 full = read_png(dir + "/full/" + s), small = read_png(out + "/" + s);
      EXPECT_TRUE(same_pixels(small, box_downscale(full, c.f))) << what;
    }
  }
  // u8npy and a dataset zip take the same size
  r = generate(dir + "/u8", {"--size", "8x16", "--format", "u8npy", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(read_npy(dir + "/u8/seed0001.npy").shape, (std::vector<int64_t>{1, 16, 8, 3}));
  r = generate(dir + "/d.zip", {"--size", "8", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  {
    const std::string zb = slurp(dir + "/d.zip");
    readers::ZipArchive zip(reinterpret_cast<const uint8_t*>(zb.data()), zb.size(), "d.zip");
    const readers::ZipEntry* e = zip.find("00000/img00000002.png");
    ASSERT_NE(e, nullptr);
    EXPECT_TRUE(std::string(zip.data(*e)) == slurp(dir + "/s8/seed0002.png"));  // the folder run's bytes
  }
  // Sizes that do not divide the image, or not at its aspect ratio: exit 2, one line, nothing written.
  for (const std::string bad : {"12", "3", "16x16", "5x10", "8x32"}) {
    r = generate(dir + "/bad", {"--size", bad});
    EXPECT_EQ(r.status, 2) << bad << ": " << describe(r);
    EXPECT_NE(r.err.find("--size " + bad + ": not a divisor of the model's 16x32 resolution"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("sizes that work: 16x32, 8x16, 4x8, 2x4, 1x2"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(file_exists(dir + "/bad/seed0000.png")) << bad;
  }
}

// --- StyleGAN-Human ADA pickles edited to be inconsistent (issue 25, "Bad input and faults"): a
// noise buffer of the wrong shape, and a `square` attribute that contradicts the const. The fork's
// pickle (tests/data/nonsquare/human_skip32x16) is edited in place: the tensor's size and stride
// tuples (the same storage), or the value after the attribute's name.

namespace {

/// `bytes` with the `nth` (0-based) occurrence of `from` replaced by `to` (same length); counts the
/// occurrences in `count`.
std::string replace_nth(std::string bytes, const std::string& from, const std::string& to, int nth, int* count) {
  EXPECT_EQ(from.size(), to.size());
  int n = 0;
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1), ++n)
    if (n == nth) bytes.replace(at, to.size(), to);
  *count = n;
  return bytes;
}

/// Runs `sg2 generate` on the pickle `bytes` (written to dir/name): its exit status and stderr,
/// checking that nothing was written to its --outdir.
CliResult generate_from(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
  const CliResult r = run_cli({"generate", "--network", dir + "/" + name, "--device", "cpu", "--seeds", "0-1",
                               "--outdir", dir + "/out_" + name});
  EXPECT_FALSE(file_exists(dir + "/out_" + name + "/seed0000.png")) << name;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << name << ": " << r.err;
  return r;
}

}  // namespace

TEST(NonSquareCli, InconsistentStyleGanHumanPicklesAreOneLine) {
  const std::string dir = temp_dir("ns_hostile_pkl");
  const std::string pkl = slurp(source_path(kHuman));
  // synthesis.b8.conv0.noise_const ([8, 4], the first [8, 4] tensor of the pickle: its storage, then
  // REDUCE, offset 0, size (8, 4), stride (4, 1)) given as [4, 8] and as [4, 4] (views of its storage).
  const std::string b8 = std::string("R\x94K\x00K\x08K\x04\x86\x94K\x04K\x01\x86\x94\x89", 17);
  const std::string transposed = std::string("R\x94K\x00K\x04K\x08\x86\x94K\x08K\x01\x86\x94\x89", 17);
  const std::string square = std::string("R\x94K\x00K\x04K\x04\x86\x94K\x04K\x01\x86\x94\x89", 17);
  int count = 0;
  CliResult r = generate_from(dir, "noise_t.pkl", replace_nth(pkl, b8, transposed, 0, &count));
  EXPECT_EQ(count, 2);  // b8.conv0 and b8.conv1
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find(dir + "/noise_t.pkl (G_ema): tensor 'synthesis.b8.conv0.noise_const' has shape [4, 8], "
                             "expected [8, 4]"),
            std::string::npos)
      << r.err;
  r = generate_from(dir, "noise_sq.pkl", replace_nth(pkl, b8, square, 1, &count));
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("noise_sq.pkl (G_ema): tensor 'synthesis.b8.conv1.noise_const' has shape [4, 4], "
                       "expected [8, 4]"),
            std::string::npos)
      << r.err;
  // square = True where the const is [8, 4, 2]. The pickle names 'square' once (memo 239, its value
  // False) and refers to it 25 times after: 13 modules (b4.conv1, b4, b8.conv0, ..., b32, synthesis,
  // G_ema) keep it twice, as a constructor kwarg (the persistence pickle's init_kwargs) and as an
  // attribute; reference 21 (from 0) is the synthesis network's attribute, the one sg2 reads.
  const std::string named = std::string("\x8c\x06square\x94\x89", 10);
  const std::string ref = std::string("h\xef\x89", 3), ref_true = std::string("h\xef\x88", 3);
  replace_nth(pkl, named, named, -1, &count);
  ASSERT_EQ(count, 1);
  const std::string edited = replace_nth(pkl, ref, ref_true, 21, &count);
  ASSERT_EQ(count, 25);
  r = generate_from(dir, "square.pkl", edited);
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find(dir + "/square.pkl (G_ema): attribute synthesis.square = True contradicts the const's shape "
                             "[8, 4, 2]"),
            std::string::npos)
      << r.err;
}
