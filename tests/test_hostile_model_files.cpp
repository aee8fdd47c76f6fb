// Hostile and absurd model files and .npy files (issue 15, items 1, 4, 5, 6, 7): each is built
// here in the documented format and must end in a one-line Error naming the file — never a
// stack overflow, a wrapped-around number, a std::length_error, a raw terminal escape or a
// message of megabytes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/model.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;
using json = nlohmann::json;

namespace {

ModelConfig small_config() { return make_config(8, 64, 8, 4, 4, 0, 3, 2, Architecture::skip, 256.0f, 1); }

/// A valid model file split into its header (JSON) and data bytes, edited and written back.
struct ModelBytes {
  json header;
  std::string data;
  ModelBytes() {
    const std::string path = test::temp_dir("hostile_base") + "/m.safetensors";
    save_model_file(path, make_random_model(small_config(), 1));
    const auto bytes = detail::read_file(path);
    const uint64_t n = detail::load_le64(bytes.data());
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
    data.assign(bytes.begin() + 8 + static_cast<long>(n), bytes.end());
  }
  json config() const { return json::parse(header["__metadata__"]["config"].get<std::string>()); }
  void set_config(const json& c) { header["__metadata__"]["config"] = c.dump(); }
  /// The file with `header_text` (raw JSON text, for shapes nlohmann would not build or print).
  static std::string file(const std::string& header_text, const std::string& data) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = char((uint64_t(header_text.size()) >> (8 * i)) & 255);
    return out + header_text + data;
  }
  std::string file() const { return file(header.dump(), data); }
};

/// Writes `bytes` as dir/name and returns what loading it throws ("" when it loads).
struct LoadOutcome {
  std::string message;
  ErrorKind kind = ErrorKind::internal;
  std::string path;
};
LoadOutcome load_bytes(const std::string& bytes, const std::string& name) {
  LoadOutcome o;
  o.path = test::temp_dir("hostile_" + name) + "/" + name + ".safetensors";
  detail::write_file_atomic(o.path, bytes.data(), bytes.size());
  try {
    load_model_file(o.path);
  } catch (const Error& e) {
    o.message = e.what();
    o.kind = e.kind();
  }  // anything else (std::length_error, std::bad_alloc) escapes and fails the test
  return o;
}

/// The checks every refusal must pass: bad_file, names the file, one line, short, no escapes.
void expect_clean_refusal(const LoadOutcome& o, const std::string& says, const std::string& label) {
  ASSERT_FALSE(o.message.empty()) << label << ": loaded";
  EXPECT_EQ(o.kind, ErrorKind::bad_file) << label << ": " << o.message;
  EXPECT_EQ(o.message.rfind(o.path, 0), 0u) << label << ": " << o.message;
  EXPECT_EQ(o.message.find('\n'), std::string::npos) << label << ": " << o.message;
  EXPECT_EQ(o.message.find('\x1b'), std::string::npos) << label << ": " << o.message;
  EXPECT_LT(o.message.size(), 700u) << label << ": " << o.message.substr(0, 300);
  EXPECT_NE(o.message.find(says), std::string::npos) << label << ": " << o.message.substr(0, 300);
}

std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

// Item 1: deep nesting is refused while parsing; a deep or huge value is never printed whole.
TEST(HostileModelFiles, DeepJsonNestingIsAnErrorNotAStackOverflow) {
  ModelBytes m;
  // The mapping settings of the config: 100,000 nested arrays inside the config string.
  json cfg = m.config();
  cfg["mapping"] = "@MAPPING@";
  std::string cfg_text = cfg.dump();
  cfg_text.replace(cfg_text.find("\"@MAPPING@\""), 11, nested_arrays(100000));
  m.header["__metadata__"]["config"] = cfg_text;  // a JSON string: its escaping is flat
  expect_clean_refusal(load_bytes(m.file(), "deep_config"), "model config nests deeper than 32 levels", "deep config");
  // The header itself: 100,000 levels in a tensor's shape.
  ModelBytes h;
  h.header["mapping.w_avg"]["shape"] = "@SHAPE@";
  std::string text = h.header.dump();
  text.replace(text.find("\"@SHAPE@\""), 9, nested_arrays(100000));
  expect_clean_refusal(load_bytes(ModelBytes::file(text, h.data), "deep_header"),
                       "safetensors header nests deeper than 32 levels", "deep header");
  // Nested within the limit in a numeric field, and a megabyte string there: described, not printed.
  ModelBytes n;
  json c2 = n.config();
  c2["z_dim"] = json::parse(nested_arrays(20));
  n.set_config(c2);
  expect_clean_refusal(load_bytes(n.file(), "nested_zdim"), "'z_dim' is not an integer in range: an array of 1 values",
                       "nested z_dim");
  c2["z_dim"] = std::string(1 << 20, '7');
  n.set_config(c2);
  expect_clean_refusal(load_bytes(n.file(), "long_zdim"), "'z_dim' is not an integer in range: '7777777", "long z_dim");
}

// Item 4: sizes from the file are multiplied in checked arithmetic.
TEST(HostileModelFiles, AbsurdShapesWithEmptyRangesAreRefused) {
  ModelBytes m;
  m.header["giant"] = {{"dtype", "F32"}, {"shape", {uint64_t(1) << 32, uint64_t(1) << 30}}, {"data_offsets", {0, 0}}};
  expect_clean_refusal(load_bytes(m.file(), "giant"), "0 bytes do not hold F32 [4294967296, 1073741824]",
                       "[2^32, 2^30]");
  ModelBytes f;
  f.header["giant16"] = {
      {"dtype", "F16"}, {"shape", {uint64_t(1) << 32, uint64_t(1) << 31, 2}}, {"data_offsets", {0, 0}}};
  expect_clean_refusal(load_bytes(f.file(), "giant16"), "do not hold F16", "[2^32, 2^31, 2] F16");
  // A zero-element tensor loads (and is then reported as unexpected), nothing is copied from it.
  ModelBytes z;
  z.header["empty"] = {{"dtype", "F32"}, {"shape", {0, 5}}, {"data_offsets", {0, 0}}};
  expect_clean_refusal(load_bytes(z.file(), "empty"), "empty: unexpected tensor [0, 5]", "zero elements");
}

// Item 5: no silent wrap-around of integers in the config.
TEST(HostileModelFiles, ConfigIntegersAreRangeCheckedNeverWrapped) {
  struct Case {
    std::string label, says;
    std::function<void(json&)> edit;
  };
  const std::vector<Case> cases = {
      {"channels 2^32+2", "synthesis.channels[4] is not an integer in range: 4294967298",
       [](json& c) { c["synthesis"]["channels"]["4"] = uint64_t(4294967298ull); }},
      {"z_dim 2^64-1", "'z_dim' is not an integer in range: 18446744073709551615",
       [](json& c) { c["z_dim"] = uint64_t(18446744073709551615ull); }},
      {"w_dim -2^63", "'w_dim' is not an integer in range: -9223372036854775808",
       [](json& c) { c["w_dim"] = int64_t(INT64_MIN); }},
      {"num_layers 2^32+2", "'mapping.num_layers' is not an integer in range: 4294967298",
       [](json& c) { c["mapping"]["num_layers"] = uint64_t(4294967298ull); }},
      {"fp16 resolution 2^32+8", "synthesis.fp16_resolutions holds 4294967304, not a resolution",
       [](json& c) { c["synthesis"]["fp16_resolutions"] = {uint64_t(4294967304ull)}; }},
      {"channels key 2^32+4", "synthesis.channels key '4294967300' is not a resolution",
       [](json& c) { c["synthesis"]["channels"]["4294967300"] = 8; }},
      {"img_channels 3.5", "'img_channels' is not an integer in range: 3.5", [](json& c) { c["img_channels"] = 3.5; }},
  };
  for (const Case& k : cases) {
    ModelBytes m;
    json c = m.config();
    k.edit(c);
    m.set_config(c);
    expect_clean_refusal(load_bytes(m.file(), "wrap"), k.says, k.label);
  }
}

// Item 6: text from the file reaches messages (and inspect) escaped.
TEST(HostileModelFiles, TerminalEscapesFromTheFileAreEscaped) {
  const std::string evil = "\x1b]0;owned\x07\x1b[2J\nsg2 generate: 10 images";
  ModelBytes m;
  m.header[evil] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {0, 0}}};
  LoadOutcome o = load_bytes(m.file(), "escape_name");
  expect_clean_refusal(o, "\\x1b]0;owned\\x07\\x1b[2J\\x0asg2 generate", "tensor name");
  ModelBytes a;
  json c = a.config();
  c["synthesis"]["architecture"] = evil;
  a.set_config(c);
  expect_clean_refusal(load_bytes(a.file(), "escape_arch"), "unknown architecture '\\x1b]0;owned", "architecture");
  ModelBytes d;
  d.header["mapping.w_avg"]["dtype"] = evil;
  expect_clean_refusal(load_bytes(d.file(), "escape_dtype"), "dtype '\\x1b]0;owned", "dtype");
  ModelBytes f;
  f.header["__metadata__"]["format"] = evil;
  expect_clean_refusal(load_bytes(f.file(), "escape_format"), "__metadata__.format is '\\x1b]0;owned", "format");
  // A loadable file whose provenance holds escapes: inspect shows them escaped, on one line each.
  ModelBytes p;
  p.header["__metadata__"]["source_family"] = evil;
  p.header["__metadata__"]["source_file"] = evil;
  p.header["__metadata__"]["converter"] = evil;
  const std::string path = test::temp_dir("escape_inspect") + "/p.safetensors";
  const std::string bytes = p.file();
  detail::write_file_atomic(path, bytes.data(), bytes.size());
  const std::string text = inspect_to_text(inspect_file(path));
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_EQ(text.find("\nsg2 generate"), std::string::npos) << text;
  EXPECT_NE(text.find("\\x1b]0;owned"), std::string::npos) << text;
  const std::string js = inspect_to_json(inspect_file(path));
  EXPECT_EQ(js.find('\x1b'), std::string::npos) << js;  // JSON escapes control characters itself
}

// Item 7: what a message quotes is capped.
TEST(HostileModelFiles, MessagesQuoteAFewNamesAndShortNumbers) {
  ModelBytes m;
  for (int i = 0; i < 100000; ++i)
    m.header["extra." + std::to_string(i)] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {0, 0}}};
  LoadOutcome o = load_bytes(m.file(), "many_extra");
  expect_clean_refusal(o, "100000 problems with the tensors", "100,000 zero-size tensors");
  EXPECT_NE(o.message.find("(99992 more)"), std::string::npos) << o.message;
  // A 5,000-digit number where an integer belongs: in the config, in a .npy shape.
  ModelBytes n;
  json c = n.config();
  c["z_dim"] = "@NUM@";
  std::string cfg_text = c.dump();
  cfg_text.replace(cfg_text.find("\"@NUM@\""), 7, std::string(5000, '9'));
  n.header["__metadata__"]["config"] = cfg_text;
  expect_clean_refusal(load_bytes(n.file(), "digits"),
                       "model config is not valid JSON (a number beyond the range of a double)",
                       "5000 digits in the config");
  c["z_dim"] = "@NUM@";
  cfg_text = c.dump();
  cfg_text.replace(cfg_text.find("\"@NUM@\""), 7, std::string(300, '9'));  // a double, not an integer
  n.header["__metadata__"]["config"] = cfg_text;
  expect_clean_refusal(load_bytes(n.file(), "digits300"), "'z_dim' is not an integer in range: 1e+300",
                       "300 digits in the config");
  const std::string dir = test::temp_dir("npy_digits");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(5000, '9') + ",), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 255) + char(header.size() >> 8) + header;
  detail::write_file_atomic(dir + "/d.npy", npy.data(), npy.size());
  try {
    read_npy_tensor(dir + "/d.npy");
    ADD_FAILURE() << "a 5000-digit dimension was read";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_LT(msg.size(), 300u) << msg;
    EXPECT_NE(msg.find(dir + "/d.npy: malformed .npy shape (9999"), std::string::npos) << msg;
  }
}

// Item 4 (.npy): a (2^31, 2^31) array from an empty payload, and Fortran order with absurd
// dimensions, are refused before any stride or byte count is computed.
TEST(HostileModelFiles, NpyShapesAreCheckedBeforeAnyArithmetic) {
  const std::string dir = test::temp_dir("npy_hostile");
  auto npy = [&](const std::string& name, const std::string& fortran, const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    const std::string bytes =
        std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 255) + char(header.size() >> 8) + header;
    detail::write_file_atomic(dir + "/" + name, bytes.data(), bytes.size());
    try {
      read_npy_tensor(dir + "/" + name);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_file) << e.what();
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(npy("big.npy", "False", "(2147483648, 2147483648)")
                .find("big.npy: .npy payload of 0 bytes is shorter than its shape"),
            std::string::npos);
  EXPECT_NE(npy("fortran.npy", "True", "(4294967296, 4294967296, 4294967296)").find("fortran.npy: .npy payload"),
            std::string::npos);
  EXPECT_NE(npy("huge.npy", "True", "(99999999999999999999, 2)").find("huge.npy: malformed .npy shape"),
            std::string::npos);
  EXPECT_EQ(npy("zero.npy", "True", "(0, 4294967296, 4294967296)"), "");  // no elements: fine
}

// Item 23.9: a sparse file (a few KB on disk, 64 GiB long) whose header points every tensor, and
// one huge extra tensor, into the same bytes. Every range, name and shape is checked before any
// data is copied: refused at once, without reading the 64 GiB (the test would take minutes or run
// out of memory otherwise).
TEST(HostileModelFiles, SparseFilesWithOverlappingOrHugeTensorsAreRefusedBeforeCopying) {
  const ModelBytes base;
  constexpr uint64_t kLen = uint64_t(64) << 30;
  auto sparse = [&](const json& header, const std::string& name) -> LoadOutcome {
    LoadOutcome o;
    o.path = test::temp_dir("sparse_" + name) + "/" + name + ".safetensors";
    const std::string head = ModelBytes::file(header.dump(), "");
    detail::write_file_atomic(o.path, head.data(), head.size());
    if (::truncate(o.path.c_str(), static_cast<off_t>(head.size() + kLen)) != 0) ADD_FAILURE() << "truncate";
    try {
      load_model_file(o.path);
    } catch (const Error& e) {
      o.message = e.what();
      o.kind = e.kind();
    }
    return o;
  };
  // Every tensor at offset 0 (overlapping), plus a 16 GiB tensor over all of them.
  json overlap = base.header;
  for (auto it = overlap.begin(); it != overlap.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const uint64_t bytes = (*it)["data_offsets"][1].get<uint64_t>() - (*it)["data_offsets"][0].get<uint64_t>();
    (*it)["data_offsets"] = {0, bytes};
  }
  overlap["junk"] = {{"dtype", "F32"}, {"shape", {uint64_t(1) << 32}}, {"data_offsets", {0, uint64_t(16) << 30}}};
  LoadOutcome o = sparse(overlap, "overlap");
  expect_clean_refusal(o, "overlap", "overlapping ranges");
  // No overlap, but a 16 GiB tensor the config does not have: refused by name before copying.
  json huge = base.header;
  const uint64_t end = base.data.size();
  huge["junk"] = {
      {"dtype", "F32"}, {"shape", {uint64_t(1) << 32}}, {"data_offsets", {end, end + (uint64_t(16) << 30)}}};
  o = sparse(huge, "huge");
  expect_clean_refusal(o, "junk: unexpected tensor [4294967296]", "an unexpected huge tensor");
}
