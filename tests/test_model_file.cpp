// The model file (design.md §5): round trip, and every validation error at once.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sg2/error.h"
#include "sg2/model.h"
#include "sg2/random_model.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;
using json = nlohmann::json;

namespace {

ModelConfig small_config(const std::string& arch = "skip", int c_dim = 0) {
  return make_config(16, 256, 32, 8, 12, c_dim, 3, 2, test::architecture(arch), 256.0f, 2);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Splits a model file into (header json, data bytes) and writes it back after an edit.
struct RawFile {
  json header;
  std::vector<uint8_t> data;
  explicit RawFile(const std::string& path) {
    auto bytes = detail::read_file(path);
    uint64_t n = detail::load_le64(bytes.data());
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
    data.assign(bytes.begin() + 8 + static_cast<long>(n), bytes.end());
  }
  void write(const std::string& path) const {
    std::string h = header.dump();
    std::vector<uint8_t> out(8);
    uint64_t n = h.size();
    for (int i = 0; i < 8; ++i) out[i] = uint8_t(n >> (8 * i));
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), data.begin(), data.end());
    detail::write_file_atomic(path, out.data(), out.size());
  }
};

}  // namespace

TEST(ModelFile, RoundTripIsExact) {
  for (const std::string arch : {"skip", "orig", "resnet"}) {
    Model m = make_random_model(small_config(arch, 3), 5);
    m.provenance = {"net.pkl", "abc", "stylegan2-ada-pytorch", ""};
    std::string path = test::temp_dir("rt") + "/m.safetensors";
    save_model_file(path, m);
    EXPECT_TRUE(is_model_file(path));
    Model r = load_model_file(path);
    EXPECT_EQ(config_to_json(r.config), config_to_json(m.config));
    EXPECT_EQ(r.provenance.source_family, "stylegan2-ada-pytorch");
    EXPECT_EQ(r.provenance.source_file, "net.pkl");
    EXPECT_EQ(r.provenance.converter, std::string("sg2 ") + version());
    ASSERT_EQ(r.tensors.size(), m.tensors.size()) << arch;
    for (const auto& [name, t] : m.tensors) {
      ASSERT_TRUE(r.has(name)) << name;
      EXPECT_EQ(r.at(name).shape(), t.shape()) << name;
      EXPECT_EQ(std::memcmp(r.at(name).data(), t.data(), t.numel() * 4), 0) << name;
    }
  }
}

TEST(ModelFile, IsStandardSafetensors) {
  Model m = make_random_model(small_config(), 1);
  std::string path = test::temp_dir("std") + "/m.safetensors";
  save_model_file(path, m);
  RawFile raw(path);
  const json& meta = raw.header["__metadata__"];
  EXPECT_EQ(meta["format"], "sg2");
  EXPECT_EQ(meta["format_version"], "1");
  for (auto it = meta.begin(); it != meta.end(); ++it) EXPECT_TRUE(it.value().is_string()) << it.key();
  json cfg = json::parse(meta["config"].get<std::string>());
  EXPECT_EQ(cfg["synthesis"]["channels"]["16"], 16);
  EXPECT_EQ(cfg["synthesis"]["conv_clamp"], 256.0);
  EXPECT_EQ(raw.header["mapping.w_avg"]["dtype"], "F32");
  EXPECT_EQ(raw.header["synthesis.b8.conv0.noise_strength"]["shape"], json::array());
  EXPECT_EQ(raw.header["synthesis.b4.const"]["shape"], json({32, 4, 4}));
  EXPECT_FALSE(raw.header.contains("synthesis.b4.resample_filter"));
}

TEST(ModelFile, ValidationReportsEveryProblemAtOnce) {
  Model m = make_random_model(small_config(), 2);
  m.tensors.erase("synthesis.b8.conv1.weight");
  m.tensors.erase("mapping.w_avg");
  m.tensors["synthesis.b16.torgb.bias"] = Tensor({4});
  m.tensors["synthesis.b4.resample_filter"] = Tensor({4, 4});
  auto problems = validate_model(m);
  ASSERT_EQ(problems.size(), 4u);
  std::string msg = error_of([&] { check_model(m, "x.safetensors"); });
  EXPECT_NE(msg.find("x.safetensors: 4 problems"), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthesis.b8.conv1.weight: missing, expected [32, 32, 3, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mapping.w_avg: missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthesis.b16.torgb.bias: expected [3], got [4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthesis.b4.resample_filter: unexpected tensor"), std::string::npos) << msg;
  EXPECT_THROW(save_model_file(test::temp_dir("bad") + "/m.safetensors", m), Error);
}

TEST(ModelFile, LoadRejectsBadTensorsWithEveryProblem) {
  Model m = make_random_model(small_config(), 3);
  std::string path = test::temp_dir("badt") + "/m.safetensors";
  save_model_file(path, m);
  RawFile raw(path);
  raw.header["synthesis.b16.extra"] = raw.header["synthesis.b16.conv1.bias"];  // renamed: one missing, one extra
  raw.header.erase("synthesis.b16.conv1.bias");
  raw.header["synthesis.b8.conv0.bias"]["shape"] = {8, 4};
  raw.write(path);
  std::string msg = error_of([&] { load_model_file(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthesis.b16.conv1.bias: missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthesis.b16.extra: unexpected"), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthesis.b8.conv0.bias: expected [32], got [8, 4]"), std::string::npos) << msg;
}

TEST(ModelFile, TruncatedAndLyingHeadersAreErrors) {
  Model m = make_random_model(small_config(), 4);
  std::string dir = test::temp_dir("trunc");
  std::string path = dir + "/m.safetensors";
  save_model_file(path, m);
  auto bytes = detail::read_file(path);
  // Truncated at many points: always a bad_file error naming the file, never a crash.
  for (size_t cut : {size_t(0), size_t(3), size_t(8), size_t(20), bytes.size() / 2, bytes.size() - 1}) {
    std::string p = dir + "/cut" + std::to_string(cut) + ".safetensors";
    detail::write_file_atomic(p, bytes.data(), cut);
    try {
      load_model_file(p);
      ADD_FAILURE() << "accepted a file cut at " << cut;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_file) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
  // Header length beyond the file.
  auto lying = bytes;
  lying[6] = 0x7f;
  detail::write_file_atomic(dir + "/len.safetensors", lying.data(), lying.size());
  EXPECT_NE(error_of([&] { load_model_file(dir + "/len.safetensors"); }).find("header length"), std::string::npos);
  // Offsets that lie.
  RawFile raw(path);
  raw.header["mapping.w_avg"]["data_offsets"] = {0, 1u << 30};
  raw.write(dir + "/off.safetensors");
  EXPECT_NE(error_of([&] { load_model_file(dir + "/off.safetensors"); }).find("data_offsets"), std::string::npos);
  RawFile raw2(path);
  raw2.header["mapping.w_avg"]["data_offsets"] = {0, 8};
  raw2.write(dir + "/size.safetensors");
  EXPECT_NE(error_of([&] { load_model_file(dir + "/size.safetensors"); }).find("do not hold"), std::string::npos);
  RawFile raw3(path);
  raw3.header["mapping.w_avg"]["data_offsets"] = raw3.header["synthesis.b4.const"]["data_offsets"];
  raw3.header["mapping.w_avg"]["shape"] = raw3.header["synthesis.b4.const"]["shape"];
  raw3.write(dir + "/overlap.safetensors");
  EXPECT_FALSE(error_of([&] { load_model_file(dir + "/overlap.safetensors"); }).empty());
}

TEST(ModelFile, MetadataErrors) {
  Model m = make_random_model(small_config(), 6);
  std::string dir = test::temp_dir("meta");
  std::string path = dir + "/m.safetensors";
  save_model_file(path, m);
  {
    RawFile raw(path);
    raw.header["__metadata__"]["format_version"] = "3";
    raw.write(dir + "/v2.safetensors");
    try {
      load_model_file(dir + "/v2.safetensors");
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsupported);
      EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
    }
  }
  {
    RawFile raw(path);
    raw.header.erase("__metadata__");
    raw.write(dir + "/plain.safetensors");
    EXPECT_NE(error_of([&] { load_model_file(dir + "/plain.safetensors"); }).find("sg2 convert"), std::string::npos);
  }
  {
    RawFile raw(path);
    raw.header["__metadata__"]["config"] = "{\"z_dim\": 8}";
    raw.write(dir + "/cfg.safetensors");
    EXPECT_NE(error_of([&] { load_model_file(dir + "/cfg.safetensors"); }).find("c_dim"), std::string::npos);
  }
  {
    RawFile raw(path);
    json cfg = json::parse(raw.header["__metadata__"]["config"].get<std::string>());
    cfg["num_ws"] = 9;
    raw.header["__metadata__"]["config"] = cfg.dump();
    raw.write(dir + "/nws.safetensors");
    EXPECT_NE(error_of([&] { load_model_file(dir + "/nws.safetensors"); }).find("num_ws"), std::string::npos);
  }
  {
    RawFile raw(path);
    json cfg = json::parse(raw.header["__metadata__"]["config"].get<std::string>());
    cfg["z_dim"] = (int64_t(1) << 32) + 8;  // must not wrap around to 8
    raw.header["__metadata__"]["config"] = cfg.dump();
    raw.write(dir + "/wrap.safetensors");
    EXPECT_NE(error_of([&] { load_model_file(dir + "/wrap.safetensors"); }).find("'z_dim' is not an integer in range"),
              std::string::npos);
  }
  {
    ASSERT_EQ(::mkfifo((dir + "/fifo.safetensors").c_str(), 0644), 0);  // must not block
    EXPECT_FALSE(is_model_file(dir + "/fifo.safetensors"));
    EXPECT_NE(error_of([&] { load_model_file(dir + "/fifo.safetensors"); }).find("not a regular file"),
              std::string::npos);
  }
  {
    RawFile raw(path);
    raw.header["mapping.w_avg"]["dtype"] = "I64";
    raw.write(dir + "/dt.safetensors");
    EXPECT_NE(error_of([&] { load_model_file(dir + "/dt.safetensors"); }).find("I64"), std::string::npos);
  }
  EXPECT_NE(error_of([&] { load_model_file(dir + "/missing.safetensors"); }).find("cannot open"), std::string::npos);
}

TEST(ModelFile, Float16TensorsAreWidened) {
  Model m = make_random_model(small_config(), 7);
  std::string path = test::temp_dir("f16") + "/m.safetensors";
  save_model_file(path, m);
  RawFile raw(path);
  // Re-encode w_avg as F16 at the end of the data block.
  auto& e = raw.header["mapping.w_avg"];
  const Tensor& w = m.at("mapping.w_avg");
  uint64_t begin = raw.data.size();
  for (float v : w.vec()) {
    uint16_t h = detail::float_to_half(v);
    raw.data.push_back(uint8_t(h & 0xff));
    raw.data.push_back(uint8_t(h >> 8));
  }
  e["dtype"] = "F16";
  e["data_offsets"] = {begin, raw.data.size()};
  raw.write(path);
  Model r = load_model_file(path);
  for (int64_t i = 0; i < w.numel(); ++i) EXPECT_NEAR(r.at("mapping.w_avg")[i], w[i], 1e-3 * std::fabs(w[i]) + 1e-6);
}

TEST(HalfFloat, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = detail::half_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(detail::float_to_half(f), uint16_t(h)) << h;
  }
  EXPECT_EQ(detail::float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(detail::float_to_half(1e-8f), 0);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(detail::sha256_hex(nullptr, 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char* abc = "abc";
  EXPECT_EQ(detail::sha256_hex(reinterpret_cast<const uint8_t*>(abc), 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(detail::sha256_file(test::source_path("models/digits32/digits32.pkl")),
            "56024fd5d1a64a9eac6d3c3b09bb9cfdb835b9f7aaad7602a58013601aed2f9b");
}

TEST(ModelConfig, NamedConfigsMatchPerformanceMd) {
  ModelConfig f = named_config("ffhq1024-f");
  EXPECT_EQ(f.num_ws, 18);
  EXPECT_EQ(f.channels_at(1024), 32);
  EXPECT_EQ(f.channels_at(64), 512);
  EXPECT_EQ(f.synthesis.fp16_resolutions, (std::vector<int>{128, 256, 512, 1024}));
  ModelConfig p = named_config("paper256");
  EXPECT_EQ(p.channels_at(64), 256);
  EXPECT_EQ(p.synthesis.fp16_resolutions, (std::vector<int>{32, 64, 128, 256}));
  Model m = make_random_model(f, 0);
  EXPECT_NEAR(double(parameter_count(m)) / 1e6, 30.37, 0.01);
  EXPECT_THROW(named_config("ffhq"), Error);
}
