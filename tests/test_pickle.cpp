// The safe pickle reader (readers/pickle.h): every protocol, the memo, frames, recorded
// calls, numpy decoding, and its limits. Files under tests/data/checkpoints/pickles were written by
// Python's own pickle (make_checkpoints.py); the rest are byte strings built here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "readers/numpy_decode.h"
#include "readers/pickle.h"
#include "readers/pickle_access.h"
#include "sg2/error.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;
using namespace sg2::readers::pickle;
using namespace std::string_literals;

namespace {

struct Parsed {
  explicit Parsed(std::string bytes)
      : data(std::move(bytes)), budget(Budget::for_file_size(data.size(), "test.pkl")), doc(&budget) {
    root = parse(doc, reinterpret_cast<const uint8_t*>(data.data()), data.size(), 0, "test.pkl");
  }
  std::string data;
  Budget budget;
  Document doc;
  Node* root = nullptr;
};

std::string file_bytes(const std::string& rel) {
  auto v = detail::read_file(test::source_path("tests/data/checkpoints/pickles/" + rel));
  return std::string(v.begin(), v.end());
}

/// The Error a parse of `bytes` throws (kind and message); kind internal when none.
std::pair<ErrorKind, std::string> parse_error(const std::string& bytes, const Limits& limits = {}) {
  Budget b = Budget::for_file_size(bytes.size(), "bad.pkl");
  Document doc(&b);
  try {
    parse(doc, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "bad.pkl", nullptr, limits);
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::internal, ""};
}

std::string u32(uint32_t v) {
  return std::string{char(v & 255), char((v >> 8) & 255), char((v >> 16) & 255), char(v >> 24)};
}
std::string u64(uint64_t v) { return u32(uint32_t(v)) + u32(uint32_t(v >> 32)); }

}  // namespace

class PicklePlain : public ::testing::TestWithParam<int> {};

TEST_P(PicklePlain, EveryProtocolGivesTheSameValues) {
  const int proto = GetParam();
  Parsed p(file_bytes("plain_p" + std::to_string(proto) + ".pkl"));
  const Node* r = p.root;
  ASSERT_TRUE(is_call(r, "collections.OrderedDict")) << describe(r);
  EXPECT_TRUE(is_dict_like(r));
  EXPECT_TRUE(is_none(dict_get(r, "none")));
  EXPECT_EQ(as_bool(dict_get(r, "true")), std::optional<bool>(true));
  EXPECT_EQ(as_bool(dict_get(r, "false")), std::optional<bool>(false));
  EXPECT_EQ(as_int(dict_get(r, "small")), std::optional<int64_t>(7));
  EXPECT_EQ(as_int(dict_get(r, "neg")), std::optional<int64_t>(-300));
  EXPECT_EQ(as_int(dict_get(r, "int32")), std::optional<int64_t>(2147483647));
  EXPECT_EQ(as_int(dict_get(r, "int64")), std::optional<int64_t>(-(int64_t(1) << 62)));
  const Node* big = dict_get(r, "big");  // 2**80 + 5
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->kind, Kind::big_integer);
  EXPECT_EQ(big_integer_bytes(big), std::string("\x05\0\0\0\0\0\0\0\0\0\x01", 11));
  ASSERT_NE(dict_get(r, "float"), nullptr);
  EXPECT_EQ(dict_get(r, "float")->f, 1.5);
  EXPECT_EQ(as_str(dict_get(r, "text")), std::optional<std::string_view>("h\xc3\xa9llo"));
  EXPECT_EQ(readers::bytes_of(dict_get(r, "bytes"), p.doc),
            std::optional<std::string_view>(std::string_view("\x00\x01\xff", 3)));
  const auto* tup = as_seq(dict_get(r, "tuple"));
  ASSERT_NE(tup, nullptr);
  ASSERT_EQ(tup->size(), 3u);
  EXPECT_EQ(as_int((*tup)[0]), std::optional<int64_t>(1));
  EXPECT_EQ(as_str((*tup)[1]), std::optional<std::string_view>("two"));
  const Node* lst = dict_get(r, "list");  // [1, [2, [3]]]
  ASSERT_EQ(as_seq(lst)->size(), 2u);
  EXPECT_EQ(as_int((*as_seq((*as_seq((*as_seq(lst))[1]))[1]))[0]), std::optional<int64_t>(3));
  const Node* set = dict_get(r, "set");
  if (proto >= 4) {
    ASSERT_EQ(set->kind, Kind::set);
    EXPECT_EQ(as_int(set->items.at(0)), std::optional<int64_t>(4));
    EXPECT_EQ(dict_get(r, "frozenset")->kind, Kind::frozenset);
  } else {
    EXPECT_TRUE(is_call(set, "builtins.set")) << describe(set);
  }
  EXPECT_EQ(as_int(dict_get(dict_get(dict_get(dict_get(r, "nested"), "a"), "b"), "c")), std::optional<int64_t>(1));
  EXPECT_EQ(dict_get(r, "shared1"), dict_get(r, "shared2")) << "memo references must give the same value";
  EXPECT_EQ(as_seq(dict_get(r, "empty"))->size(), 0u);
  EXPECT_EQ(key_list(r, 3), "'none', 'true', 'false', ...");
}

INSTANTIATE_TEST_SUITE_P(Protocols, PicklePlain, ::testing::Values(0, 1, 2, 3, 4, 5));

class PickleNumpy : public ::testing::TestWithParam<int> {};

TEST_P(PickleNumpy, ArraysAndScalars) {
  Parsed p(file_bytes("numpy_p" + std::to_string(GetParam()) + ".pkl"));
  Tensor expect({3, 4});
  for (int i = 0; i < 12; ++i) expect[i] = float(i) / 8;
  for (const char* name : {"f32", "f64", "f16", "fortran", "be"}) {
    auto v = readers::numpy_array(dict_get(p.root, name), p.doc, name);
    ASSERT_TRUE(v.has_value()) << name << ": " << describe(dict_get(p.root, name));
    EXPECT_TRUE(test::tensors_near(readers::to_float_tensor(*v, p.budget, name), expect, 0, name));
  }
  auto i64 = readers::numpy_array(dict_get(p.root, "i64"), p.doc, "i64");
  ASSERT_TRUE(i64.has_value());
  EXPECT_EQ(i64->dtype, readers::DType::i64);
  EXPECT_TRUE(test::tensors_near(readers::to_float_tensor(*i64, p.budget, "i64"), Tensor({3}, {0, 1, 2}), 0, "i64"));
  EXPECT_EQ(readers::numpy_scalar(dict_get(p.root, "scalar"), p.doc, "scalar"), std::optional<double>(2.5));
  EXPECT_EQ(readers::as_number(dict_get(p.root, "scalar"), p.doc, "scalar"), std::optional<double>(2.5));
  auto z = readers::numpy_array(dict_get(p.root, "zero_d"), p.doc, "zero_d");
  ASSERT_TRUE(z.has_value());
  EXPECT_TRUE(z->shape.empty());
  EXPECT_EQ(readers::to_float_tensor(*z, p.budget, "zero_d")[0], 3.25f);
}

INSTANTIATE_TEST_SUITE_P(Protocols, PickleNumpy, ::testing::Values(2, 4, 5));

TEST(PickleVm, RecordsCallsWithoutRunningThem) {
  // GLOBAL os.system + REDUCE: recorded as an object, never called.
  Parsed p(
      "\x80\x02"
      "cos\nsystem\nq\x00X\x04\x00\x00\x00"
      "echoq\x01\x85q\x02Rq\x03."s);
  EXPECT_EQ(p.root->kind, Kind::object);
  EXPECT_EQ(call_path(p.root), "os.system");
  EXPECT_EQ(as_str(call_args(p.root).at(0)), std::optional<std::string_view>("echo"));
  EXPECT_EQ(describe(p.root), "call of os.system");
  // NEWOBJ + BUILD state; attr() reads the state.
  Parsed q(
      "\x80\x04\x8c\x08"
      "argparse\x8c\x09Namespace\x93)\x81}\x8c\x04size\x4b\x10sb."s);
  EXPECT_EQ(q.root->make, Make::newobj);
  EXPECT_EQ(as_int(attr(q.root, "size")), std::optional<int64_t>(16));
  // INST / OBJ, PERSID, DUP / POP / POP_MARK, PUT / GET, FRAME.
  Parsed r("(I1\nimod\nCls\n.");
  EXPECT_EQ(call_path(r.root), "mod.Cls");
  EXPECT_EQ(r.root->make, Make::inst);
  Parsed s("(cmod\nK\nI3\no.");
  EXPECT_EQ(call_path(s.root), "mod.K");
  EXPECT_EQ(s.root->make, Make::obj);
  EXPECT_EQ(as_int(call_args(s.root).at(0)), std::optional<int64_t>(3));
  Parsed t("Pkey7\n.");
  EXPECT_EQ(t.root->kind, Kind::persistent_id);
  EXPECT_EQ(as_str(t.root->args), std::optional<std::string_view>("key7"));
  Parsed u("I5\n2(I6\n1p3\n0g3\n.");
  EXPECT_EQ(as_int(u.root), std::optional<int64_t>(5));
  Parsed f("\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00K\x2a."s);
  EXPECT_EQ(as_int(f.root), std::optional<int64_t>(42));
  // NEWOBJ_EX keeps its keyword arguments.
  Parsed x(
      "\x80\x04\x8c\x01m\x8c\x01"
      "C\x93)}\x8c\x01k\x4b\x01s\x92."s);
  EXPECT_EQ(x.root->make, Make::newobj_ex);
  EXPECT_EQ(as_int(dict_get(x.root->kwargs, "k")), std::optional<int64_t>(1));
}

TEST(PickleVm, CyclesAndDeepMemoNestingAreHarmless) {
  // L = []; L.append(L)
  Parsed c(
      "\x80\x02]q\x00h\x00"
      "a."s);
  ASSERT_EQ(c.root->kind, Kind::list);
  EXPECT_EQ(c.root->items.at(0), c.root);
  EXPECT_EQ(describe(c.root), "list of 1");
  // 200000 lists nested through the memo (constant stack depth): parses, nothing recurses.
  std::string deep = "\x80\x02]r"s + u32(0);
  for (uint32_t i = 1; i < 200000; ++i) deep += "j" + u32(i - 1) + "]r" + u32(i) + "a0";
  deep += "j" + u32(0) + ".";
  Parsed d(deep);
  EXPECT_EQ(d.root->kind, Kind::list);
  int depth = 0;
  for (const Node* n = d.root; n != nullptr && !n->items.empty(); n = n->items[0]) ++depth;
  EXPECT_EQ(depth, 199999);
}

TEST(PickleVm, LimitsAndCorruptionAreClearErrors) {
  // Two million nested lists on the stack: an error, not a stack overflow.
  std::string nest = "\x80\x02" + std::string(2000000, ']') + std::string(1999999, 'a') + ".";
  auto e = parse_error(nest);
  EXPECT_EQ(e.first, ErrorKind::bad_file);
  EXPECT_NE(e.second.find("nesting too deep"), std::string::npos) << e.second;
  auto m = parse_error("\x80\x02" + std::string(2000000, '(') + ").");
  EXPECT_NE(m.second.find("open MARKs"), std::string::npos) << m.second;
  // Length fields claiming exabytes.
  for (const std::string& op : {std::string("\x8e") + u64(uint64_t(1) << 60), std::string("\x8d") + u64(~uint64_t(0)),
                                std::string("\x96") + u64(uint64_t(1) << 62), std::string("B") + u32(0xffffffffu),
                                std::string("\x95") + u64(uint64_t(1) << 61)}) {
    auto r = parse_error("\x80\x04" + op + ".");
    EXPECT_EQ(r.first, ErrorKind::bad_file);
    EXPECT_NE(r.second.find("truncated"), std::string::npos) << r.second;
  }
  auto neg = parse_error("\x80\x02\x8b" + u32(0x80000000u) + ".");
  EXPECT_NE(neg.second.find("negative byte count"), std::string::npos) << neg.second;
  // Memory budget: a million empty dicts in a tiny file.
  std::string many = "\x80\x02";
  for (int i = 0; i < 1000000; ++i) many += "}0";
  many += "N.";
  auto b = parse_error(many);
  EXPECT_NE(b.second.find("MiB"), std::string::npos) << b.second;
  // Opcode-level errors.
  EXPECT_NE(parse_error("\x80\x02\xff.").second.find("not a pickle opcode"), std::string::npos);
  EXPECT_NE(parse_error("\x80\x02h\x05.").second.find("memo entry 5"), std::string::npos);
  EXPECT_NE(parse_error("\x80\x02"
                        "a.")
                .second.find("stack underflow"),
            std::string::npos);
  EXPECT_NE(parse_error("\x80\x02"
                        "K\x01K\x02R.")
                .second.find("must be a tuple"),
            std::string::npos);
  EXPECT_NE(parse_error("\x80\x02"
                        "K\x01]s.")
                .second.find("stack underflow"),
            std::string::npos);
  EXPECT_NE(parse_error("\x80\x02"
                        ")K\x01K\x02s.")
                .second.find("cannot set items on a tuple"),
            std::string::npos);
  EXPECT_NE(parse_error("\x80\x09N.").second.find("protocol 9"), std::string::npos);
  EXPECT_EQ(parse_error("\x80\x02\x82\x01.").first, ErrorKind::unsupported);
  EXPECT_EQ(parse_error("\x80\x05\x97.").first, ErrorKind::unsupported);
  EXPECT_NE(parse_error("").second.find("empty"), std::string::npos);
  EXPECT_NE(parse_error("\x80\x02N").second.find("without its STOP"), std::string::npos);
  // Every message is one line and names the file.
  for (const std::string& bad : {std::string("\x80\x02\xff."), std::string("\x80\x02h\x05."), many}) {
    auto r = parse_error(bad);
    EXPECT_EQ(r.second.find('\n'), std::string::npos);
    EXPECT_EQ(r.second.rfind("bad.pkl: ", 0), 0u) << r.second;
  }
}

TEST(PickleVm, TruncatedAtEveryByte) {
  const std::string full = file_bytes("plain_p4.pkl");
  for (size_t n = 0; n < full.size(); ++n) {
    auto e = parse_error(full.substr(0, n));
    ASSERT_EQ(e.first, ErrorKind::bad_file) << "prefix " << n;
    EXPECT_TRUE(e.second.find("truncated") != std::string::npos || e.second.find("empty") != std::string::npos)
        << "prefix " << n << ": " << e.second;
  }
}

TEST(PickleVm, PrintableKeepsMessagesOnOneLine) {
  EXPECT_EQ(printable("a\nb\x01"), "a\\x0ab\\x01");
  EXPECT_EQ(printable(std::string(100, 'x'), 10), "xxxxxxxxxx...");
}
