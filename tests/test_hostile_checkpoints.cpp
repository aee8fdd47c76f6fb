// Hostile checkpoints built here in the documented formats (issue 15, items 3, 4, 9): shared
// pickle nodes that expand exponentially ("billion laughs"), sizes that wrap around in 64 bits,
// zip directories that make work quadratic. Each must end quickly in a one-line Error naming the
// file; the amount of work is asserted by counting (memory charged, names looked up, bytes
// checked), never by timing.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "readers/checkpoint.h"
#include "readers/families.h"
#include "readers/pickle.h"
#include "readers/pickle_access.h"
#include "readers/zip_reader.h"
#include "sg2/error.h"
#include "sg2/model.h"
#include "test_util.h"

using namespace sg2;
using namespace std::string_literals;

namespace {

std::string le32(uint32_t v) {
  return std::string{char(v & 255), char((v >> 8) & 255), char((v >> 16) & 255), char(v >> 24)};
}
std::string le16(uint16_t v) { return std::string{char(v & 255), char(v >> 8)}; }
std::string le64(uint64_t v) { return le32(uint32_t(v)) + le32(uint32_t(v >> 32)); }

/// A few pickle opcodes (protocol 2), enough to write checkpoints by hand.
struct PickleWriter {
  std::string b = "\x80\x02"s;
  PickleWriter& str(const std::string& s) {
    b += "X" + le32(uint32_t(s.size())) + s;
    return *this;
  }
  PickleWriter& op(const std::string& o) {
    b += o;
    return *this;
  }
  PickleWriter& global(const std::string& module, const std::string& name) {
    b += "c" + module + "\n" + name + "\n";
    return *this;
  }
  PickleWriter& put(uint32_t i) {
    b += "r" + le32(i);
    return *this;
  }
  PickleWriter& get(uint32_t i) {
    b += "j" + le32(i);
    return *this;
  }
  PickleWriter& integer(int32_t v) {
    b += "J" + le32(uint32_t(v));
    return *this;
  }
  PickleWriter& long1(uint64_t v) {
    b += "\x8a\x08"s + le64(v);
    return *this;
  }  // v < 2^63
  /// An object made the plain way (NEWOBJ of a class, then BUILD with the dict on the stack).
  PickleWriter& new_object(const std::string& module, const std::string& name) {
    global(module, name);
    b += ")\x81";
    return *this;
  }
  std::string done() { return b + "."; }
};

std::string error_of(const std::string& bytes, const std::string& name, uint64_t* budget_used = nullptr) {
  std::unique_ptr<readers::Checkpoint> ck;
  try {
    ck = readers::open_checkpoint(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
    readers::detect_and_convert(*ck);
  } catch (const Error& e) {
    if (budget_used && ck) *budget_used = ck->budget.used();
    return e.what();
  }
  return "";
}

}  // namespace

// Item 3: an ADA-style module tree whose levels each name one memoised child ten times, five
// levels deep, the leaf holding 10,000 parameters: 10^9 names if expanded. Refused at the
// second visit of a module, after a budget charge proportional to the file.
TEST(HostileCheckpoints, SharedModulesAreVisitedOnce) {
  PickleWriter p;
  p.op("}").str("G_ema");
  // leaf module: memo 0
  p.new_object("torch_utils.ops", "Leaf").op("}(").str("_modules").op("}").str("_parameters").op("}(");
  for (int i = 0; i < 10000; ++i) p.str("p" + std::to_string(i)).integer(0);
  p.op("uu").op("b").put(0).op("0");
  for (int level = 1; level <= 5; ++level) {
    p.new_object("torch_utils.ops", "Level").op("}(").str("_parameters").op("}").str("_modules").op("}(");
    for (int k = 0; k < 10; ++k) p.str("c" + std::to_string(k)).get(uint32_t(level - 1));
    p.op("uu").op("b").put(uint32_t(level));
    if (level < 5) p.op("0");
  }
  p.op("s");
  const std::string bytes = p.done();
  ASSERT_LT(bytes.size(), 200000u);
  uint64_t used = 0;
  const std::string msg = error_of(bytes, "laughs.pkl", &used);
  EXPECT_EQ(msg.rfind("laughs.pkl", 0), 0u) << msg;
  EXPECT_NE(msg.find("is the same object as"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_LT(used, 64ull * bytes.size()) << "work charged beyond the file's size";
}

// Item 3: a TensorFlow Gs whose `components` name one child 200 times per level, four levels
// deep (1.6 x 10^9 visits if expanded).
TEST(HostileCheckpoints, SharedTensorFlowComponentsAreVisitedOnce) {
  PickleWriter p;
  p.op("}").str("Gs");
  for (int level = 0; level <= 4; ++level) {
    p.new_object("dnnlib.tflib.network", "Network").op("}(");
    p.str("name")
        .str(level == 4 ? "Gs" : "c")
        .str("version")
        .integer(4)
        .str("variables")
        .op("]")
        .str("static_kwargs")
        .op("}");
    p.str("components").op("}");
    if (level > 0) {
      p.op("(");
      for (int k = 0; k < 200; ++k) p.str("n" + std::to_string(k)).get(uint32_t(level - 1));
      p.op("u");
    }
    p.op("u").op("b").put(uint32_t(level));
    if (level < 4) p.op("0");
  }
  p.op("s");
  const std::string bytes = p.done();
  ASSERT_LT(bytes.size(), 20000u);
  uint64_t used = 0;
  const std::string msg = error_of(bytes, "tf_laughs.pkl", &used);
  EXPECT_EQ(msg.rfind("tf_laughs.pkl", 0), 0u) << msg;
  EXPECT_NE(msg.find("is the same network as"), std::string::npos) << msg;
  EXPECT_LT(used, 1ull << 20) << "work charged beyond the file's size";
}

namespace {

/// A legacy torch.save stream of one float32 tensor `t` with the given size and stride over a
/// storage of `storage_elements` floats (all zero).
std::string legacy_torch(const std::vector<uint64_t>& size, const std::vector<uint64_t>& stride,
                         uint64_t storage_elements) {
  const std::string magic = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19."s;
  const std::string version = "\x80\x02M\xe9\x03."s;
  const std::string info = "\x80\x02}."s;
  PickleWriter o;
  o.op("}").str("t").global("torch._utils", "_rebuild_tensor_v2").op("(");
  o.op("(").str("storage").global("torch", "FloatStorage").str("0").str("cpu").long1(storage_elements).op("tQ");
  o.integer(0).op("(");
  for (uint64_t d : size) o.long1(d);
  o.op("t(");
  for (uint64_t d : stride) o.long1(d);
  o.op("t\x89").global("collections", "OrderedDict").op(")R").op("tR").op("s");
  const std::string keys =
      "\x80\x02]X\x01\x00\x00\x00"
      "0a."s;
  return magic + version + info + o.done() + keys + le64(storage_elements) + std::string(storage_elements * 4, '\0');
}

std::string read_tensor_error(const std::string& bytes, const std::string& name) {
  try {
    auto ck = readers::open_checkpoint(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
    const readers::pickle::Node* t = readers::pickle::dict_get(ck->root, "t");
    if (t == nullptr) return "no tensor";
    ck->tensors->read(t, "t");
  } catch (const Error& e) {
    return e.what();
  }  // std::length_error and friends escape and fail the test
  return "";
}

}  // namespace

// Item 4: torch.zeros(1).expand(2**31, 2**31) reaches no byte outside its storage but would
// need 16 EiB as float32; the budget charge is computed without wrapping.
TEST(HostileCheckpoints, StrideZeroExpandIsChargedWithoutWrapping) {
  const std::string ok = legacy_torch({2, 3}, {0, 0}, 1);
  EXPECT_EQ(read_tensor_error(ok, "expand_small.pt"), "");  // a real expand: fine
  const std::string msg =
      read_tensor_error(legacy_torch({uint64_t(1) << 31, uint64_t(1) << 31}, {0, 0}, 1), "expand.pt");
  EXPECT_EQ(msg.rfind("expand.pt", 0), 0u) << msg;
  EXPECT_NE(msg.find("decoding it would need more than"), std::string::npos) << msg;
}

namespace {

/// A pickled numpy array (stylegan2 TF pickles store every variable so) of float32 with the
/// given dimensions, order and raw bytes.
std::string numpy_pickle(const std::vector<uint64_t>& shape, bool fortran, const std::string& raw) {
  PickleWriter p;
  p.op("}").str("a");
  p.global("numpy.core.multiarray", "_reconstruct")
      .global("numpy", "ndarray")
      .integer(0)
      .op("\x85")
      .op("C\x01"
          "b")
      .op("\x87R");
  p.op("(").integer(1).op("(");
  for (uint64_t d : shape) p.long1(d);
  p.op("t").global("numpy", "dtype").str("f4").integer(0).integer(1).op("\x87R");
  p.op(fortran ? "\x88" : "\x89").op("C" + std::string(1, char(raw.size()))).op(raw).op("tb").op("s");
  return p.done();
}

}  // namespace

TEST(HostileCheckpoints, NumpyArraySizesAreChecked) {
  auto err = [](const std::string& bytes) {
    try {
      auto ck = readers::open_checkpoint(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "np.pkl");
      ck->tensors->read(readers::pickle::dict_get(ck->root, "a"), "a");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err(numpy_pickle({2}, false, std::string(8, '\0'))), "");
  // (2^31, 2^31) float32 from an empty buffer: 2^62 * 4 bytes wraps to 0 in 64 bits.
  std::string msg = err(numpy_pickle({uint64_t(1) << 31, uint64_t(1) << 31}, false, ""));
  EXPECT_NE(msg.find("np.pkl: tensor 'a': numpy array [2147483648, 2147483648] of float32 holds 0 bytes"),
            std::string::npos)
      << msg;
  // Fortran order with dimensions whose product overflows: refused before any stride is formed.
  msg = err(numpy_pickle({uint64_t(1) << 40, uint64_t(1) << 40, uint64_t(1) << 40}, true, ""));
  EXPECT_NE(msg.find("impossibly large"), std::string::npos) << msg;
  EXPECT_EQ(err(numpy_pickle({0, uint64_t(1) << 40, uint64_t(1) << 40}, true, "")), "");  // no elements: fine
}

namespace {

/// A stored zip archive. Entries may point at shared data (`same_region`): the trick of zip
/// bombs; a real archive never has it.
struct ZipWriter {
  std::string body, directory;
  uint32_t count = 0;
  void add(const std::string& name, const std::string& data) {
    const uint32_t offset = uint32_t(body.size());
    const uint32_t crc = readers::crc32(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    body += le32(0x04034b50) + le16(20) + le16(0) + le16(0) + le32(0) + le32(crc) + le32(uint32_t(data.size())) +
            le32(uint32_t(data.size())) + le16(uint16_t(name.size())) + le16(0) + name + data;
    central(name, crc, uint32_t(data.size()), offset);
  }
  void central(const std::string& name, uint32_t crc, uint32_t size, uint32_t offset) {
    directory += le32(0x02014b50) + le16(20) + le16(20) + le16(0) + le16(0) + le32(0) + le32(crc) + le32(size) +
                 le32(size) + le16(uint16_t(name.size())) + le16(0) + le16(0) + le16(0) + le16(0) + le32(0) +
                 le32(offset) + name;
    ++count;
  }
  std::string done() const {
    return body + directory + le32(0x06054b50) + le16(0) + le16(0) + le16(uint16_t(count)) + le16(uint16_t(count)) +
           le32(uint32_t(directory.size())) + le32(uint32_t(body.size())) + le16(0);
  }
};

}  // namespace

// Item 9: a torch.save zip with 60,000 small storages (14 MB): each storage is found by one
// lookup in the directory index, and each entry's CRC is computed once.
TEST(HostileCheckpoints, ManyStoragesCostOneLookupEach) {
  constexpr int kStorages = 60000;
  // Memoised as torch's pickler does: the globals, "storage", "cpu", 1, 0, (1,), False, OrderedDict().
  PickleWriter p;
  p.op("}(");
  for (int i = 0; i < kStorages; ++i) {
    const bool first = i == 0;
    p.str("t" + std::to_string(i));
    if (first)
      p.global("torch._utils", "_rebuild_tensor_v2").put(0);
    else
      p.get(0);
    p.op("(").op("(");
    if (first)
      p.str("storage").put(2).global("torch", "FloatStorage").put(1);
    else
      p.get(2).get(1);
    p.str(std::to_string(i));
    if (first)
      p.str("cpu").put(3).integer(1).put(4);
    else
      p.get(3).get(4);
    p.op("tQ");
    if (first)
      p.integer(0).put(5).get(4).op("\x85").put(6).get(6).op("\x89").put(7);
    else
      p.get(5).get(6).get(6).get(7);
    if (first)
      p.global("collections", "OrderedDict").op(")R").put(8);
    else
      p.get(8);
    p.op("tR");
    if (i % 1000 == 999) p.op("u(");  // SETITEMS in batches of 1000, as pickle does
  }
  p.op("u");
  ZipWriter z;
  z.add("archive/data.pkl", p.done());
  for (int i = 0; i < kStorages; ++i) z.add("archive/data/" + std::to_string(i), std::string(4, '\0'));
  const std::string bytes = z.done();
  auto ck = readers::open_checkpoint(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "many.pt");
  std::vector<std::pair<const readers::pickle::Node*, const readers::pickle::Node*>> items;
  ASSERT_TRUE(readers::pickle::dict_items(ck->root, &items));
  ASSERT_EQ(items.size(), size_t(kStorages));
  for (const auto& [k, v] : items) ck->tensors->read(v, "t");  // twice each: the second is cached
  for (const auto& [k, v] : items) ck->tensors->read(v, "t");
  const readers::ZipStats& st = ck->zip->stats();
  EXPECT_LE(st.names_compared, uint64_t(kStorages) + 10) << "storages found by scanning the directory";
  EXPECT_LE(st.crc_bytes, bytes.size()) << "some bytes were CRC-checked more than once";
}

// Item 9: 5,000 directory entries over one 4 MB region (each read would re-check the whole
// region's CRC): refused at once as overlapping entries, before any CRC is computed.
TEST(HostileCheckpoints, EntriesSharingOneRegionAreRefused) {
  ZipWriter z;
  const std::string blob(4 << 20, 'x');
  z.add("archive/data/0", blob);
  const uint32_t crc = readers::crc32(reinterpret_cast<const uint8_t*>(blob.data()), blob.size());
  for (int i = 1; i < 5000; ++i) z.central("archive/data/" + std::to_string(i), crc, uint32_t(blob.size()), 0);
  const std::string bytes = z.done();
  try {
    readers::ZipArchive zip(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "overlap.pt");
    ADD_FAILURE() << "overlapping entries accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_file);
    EXPECT_NE(std::string(e.what()).find("overlap.pt: corrupt zip archive: entries 'archive/data/"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("overlap at byte 0"), std::string::npos) << e.what();
  }
}

// Item 9: a model file header of up to 100 MB would parse into gigabytes of JSON values; the
// parse is bounded by a memory estimate (64 MiB), counted while it reads.
TEST(HostileCheckpoints, HugeSafetensorsHeadersAreBounded) {
  std::string header = "{\"x\": [0";
  header.reserve(20000010);
  for (int i = 0; i < 10000000; ++i) header += ",0";
  header += "]}";
  std::string bytes = le64(header.size()) + header;
  const std::string path = test::temp_dir("huge_header") + "/h.safetensors";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  try {
    load_model_file(path);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "h.safetensors: not a model file: the safetensors header is too large: its parsed form would "
                  "need more than 64 MiB"),
              std::string::npos)
        << e.what();
  }
}

// Item 9: long decimal integers (protocol 0 writes Python ints as text) are checked in linear
// time and kept as digits; converting them is on demand only.
TEST(HostileCheckpoints, LongTextIntegersAreNotConvertedWhileReading) {
  std::string bytes = "(";
  const std::string digits(4300, '7');
  for (int i = 0; i < 1000; ++i) bytes += "L" + digits + "L\n";
  bytes += "l.";
  readers::pickle::Budget budget = readers::pickle::Budget::for_file_size(bytes.size(), "ints.pkl");
  readers::pickle::Document doc(&budget);
  const readers::pickle::Node* root =
      readers::pickle::parse(doc, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "ints.pkl");
  ASSERT_EQ(root->items.size(), 1000u);
  for (const readers::pickle::Node* n : root->items) {
    ASSERT_EQ(n->kind, readers::pickle::Kind::big_integer);
    EXPECT_EQ(n->i, 1);  // digits, unconverted
    EXPECT_EQ(n->s.size(), 4300u);
  }
  // On demand: -(2**80 + 5) as two's complement bytes.
  std::string neg = "L-1208925819614629174706181L\n.";
  readers::pickle::Node* v =
      readers::pickle::parse(doc, reinterpret_cast<const uint8_t*>(neg.data()), neg.size(), 0, "neg.pkl");
  EXPECT_EQ(readers::pickle::big_integer_bytes(v), std::string("\xfb\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfe", 11));
  std::string over = "L" + std::string(4301, '1') + "L\n.";
  try {
    readers::pickle::parse(doc, reinterpret_cast<const uint8_t*>(over.data()), over.size(), 0, "over.pkl");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u);
  }
}

// Item 6: names from a checkpoint reach messages escaped (here a rosinality state dict key).
TEST(HostileCheckpoints, NamesFromCheckpointsAreEscaped) {
  PickleWriter p;
  p.op("}").str("g_ema").op("}").str("\x1b]0;owned\x07\n.iwt.x").integer(0).op("s").op("s");
  const std::string msg = error_of(p.done(), "escape.pt");
  EXPECT_NE(msg.find("unsupported: a SWAGAN (wavelet) generator (\\x1b]0;owned\\x07\\x0a.iwt.x)"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}
