// sg2 readers: the pickle stack machine (pickle.h). Opcode semantics follow CPython's
// Lib/pickle.py `_Unpickler` and Lib/pickletools.py, minus every call into Python.
#include "readers/pickle.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <unordered_map>

#include "sg2/error.h"
#include "util/text_util.h"

namespace sg2::readers::pickle {

void Budget::charge(uint64_t bytes, const char* context) {
  if (bytes > limit_ || used_ > limit_ - bytes)
    fail(ErrorKind::bad_file, what_, ": corrupt or hostile file: decoding it would need more than ", limit_ >> 20,
         " MiB (", context, "); sg2 limits memory to 64 MiB + 8x the file size");
  used_ += bytes;
}

Node* Document::make(Kind kind, size_t offset) {
  budget_->charge(sizeof(Node), "pickle values");
  Node& n = nodes_.emplace_back();
  n.kind = kind;
  n.offset = offset;
  return &n;
}

std::string_view Document::keep(std::string text) {
  budget_->charge(text.size() + 32, "pickle strings");
  return strings_.emplace_back(std::move(text));
}

std::string printable(std::string_view text, size_t max_len) { return detail::printable(text, max_len); }

std::string big_integer_bytes(const Node* n) {
  if (n == nullptr || n->kind != Kind::big_integer) return "";
  if (n->i != 1) return std::string(n->s);
  std::string_view digits = n->s;
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.remove_prefix(1);
  // Magnitude in base 2^32, nine decimal digits per step.
  std::vector<uint32_t> limbs{0};
  for (size_t i = 0; i < digits.size();) {
    const size_t take = std::min<size_t>(9, digits.size() - i);
    uint32_t chunk = 0, scale = 1;
    for (size_t k = 0; k < take; ++k, ++i) {
      chunk = chunk * 10 + static_cast<uint32_t>(digits[i] - '0');
      scale *= 10;
    }
    uint64_t carry = chunk;
    for (uint32_t& l : limbs) {
      const uint64_t v = uint64_t(l) * scale + carry;
      l = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
    if (carry) limbs.push_back(static_cast<uint32_t>(carry));
  }
  std::string mag;  // little-endian magnitude
  for (uint32_t l : limbs)
    for (int k = 0; k < 4; ++k) mag.push_back(static_cast<char>(l >> (8 * k)));
  mag.push_back(0);  // room for the sign bit
  if (negative) {    // two's complement
    unsigned carry = 1;
    for (char& c : mag) {
      const unsigned v = static_cast<uint8_t>(~static_cast<uint8_t>(c)) + carry;
      c = static_cast<char>(v & 0xff);
      carry = v >> 8;
    }
  }
  auto byte = [&](size_t k) { return static_cast<uint8_t>(mag[k]); };
  while (mag.size() > 1 && ((byte(mag.size() - 1) == 0 && !(byte(mag.size() - 2) & 0x80)) ||
                            (byte(mag.size() - 1) == 0xff && (byte(mag.size() - 2) & 0x80))))
    mag.pop_back();
  return mag;
}

const char* opcode_name(uint8_t op) {
  switch (op) {
    case '(':
      return "MARK";
    case '.':
      return "STOP";
    case '0':
      return "POP";
    case '1':
      return "POP_MARK";
    case '2':
      return "DUP";
    case 'F':
      return "FLOAT";
    case 'I':
      return "INT";
    case 'J':
      return "BININT";
    case 'K':
      return "BININT1";
    case 'L':
      return "LONG";
    case 'M':
      return "BININT2";
    case 'N':
      return "NONE";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 'R':
      return "REDUCE";
    case 'S':
      return "STRING";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'V':
      return "UNICODE";
    case 'X':
      return "BINUNICODE";
    case 'a':
      return "APPEND";
    case 'b':
      return "BUILD";
    case 'c':
      return "GLOBAL";
    case 'd':
      return "DICT";
    case '}':
      return "EMPTY_DICT";
    case 'e':
      return "APPENDS";
    case 'g':
      return "GET";
    case 'h':
      return "BINGET";
    case 'i':
      return "INST";
    case 'j':
      return "LONG_BINGET";
    case 'l':
      return "LIST";
    case ']':
      return "EMPTY_LIST";
    case 'o':
      return "OBJ";
    case 'p':
      return "PUT";
    case 'q':
      return "BINPUT";
    case 'r':
      return "LONG_BINPUT";
    case 's':
      return "SETITEM";
    case 't':
      return "TUPLE";
    case ')':
      return "EMPTY_TUPLE";
    case 'u':
      return "SETITEMS";
    case 'G':
      return "BINFLOAT";
    case 0x80:
      return "PROTO";
    case 0x81:
      return "NEWOBJ";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x85:
      return "TUPLE1";
    case 0x86:
      return "TUPLE2";
    case 0x87:
      return "TUPLE3";
    case 0x88:
      return "NEWTRUE";
    case 0x89:
      return "NEWFALSE";
    case 0x8a:
      return "LONG1";
    case 0x8b:
      return "LONG4";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 0x8e:
      return "BINBYTES8";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x94:
      return "MEMOIZE";
    case 0x95:
      return "FRAME";
    case 0x96:
      return "BYTEARRAY8";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    default:
      return nullptr;
  }
}

namespace {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::none:
      return "None";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
    case Kind::big_integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::bytes:
      return "bytes";
    case Kind::bytearray:
      return "bytearray";
    case Kind::tuple:
      return "tuple";
    case Kind::list:
      return "list";
    case Kind::dict:
      return "dict";
    case Kind::set:
      return "set";
    case Kind::frozenset:
      return "frozenset";
    case Kind::global:
      return "global";
    case Kind::object:
      return "object";
    case Kind::persistent_id:
      return "persistent id";
  }
  return "?";
}

/// Decodes the body of a Python 2 `repr(str)` (STRING opcode) to raw bytes.
bool decode_py_string_literal(std::string_view line, std::string* out) {
  if (line.size() < 2 || (line[0] != '\'' && line[0] != '"') || line.back() != line[0]) return false;
  std::string_view body = line.substr(1, line.size() - 2);
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      *out += c;
      continue;
    }
    if (++i >= body.size()) return false;
    char e = body[i];
    switch (e) {
      case 'n':
        *out += '\n';
        break;
      case 't':
        *out += '\t';
        break;
      case 'r':
        *out += '\r';
        break;
      case '\\':
        *out += '\\';
        break;
      case '\'':
        *out += '\'';
        break;
      case '"':
        *out += '"';
        break;
      case 'a':
        *out += '\a';
        break;
      case 'b':
        *out += '\b';
        break;
      case 'f':
        *out += '\f';
        break;
      case 'v':
        *out += '\v';
        break;
      case 'x': {
        if (i + 2 >= body.size()) return false;
        unsigned v = 0;
        auto r = std::from_chars(body.data() + i + 1, body.data() + i + 3, v, 16);
        if (r.ptr != body.data() + i + 3) return false;
        *out += static_cast<char>(v);
        i += 2;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          unsigned v = 0;
          size_t k = 0;
          while (k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7')
            v = v * 8 + unsigned(body[i + k++] - '0');
          *out += static_cast<char>(v & 0xff);
          i += k - 1;
        } else {
          *out += '\\';
          *out += e;
        }
    }
  }
  return true;
}

void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xc0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xe0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | ((cp >> 18) & 0x07));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

/// raw-unicode-escape (UNICODE opcode): \uXXXX and \UXXXXXXXX escapes, other bytes are latin-1.
bool decode_raw_unicode_escape(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(in[i]);
    if (c == '\\' && i + 1 < in.size() && (in[i + 1] == 'u' || in[i + 1] == 'U')) {
      size_t n = in[i + 1] == 'u' ? 4 : 8;
      if (i + 2 + n > in.size()) return false;
      uint32_t v = 0;
      auto r = std::from_chars(in.data() + i + 2, in.data() + i + 2 + n, v, 16);
      if (r.ptr != in.data() + i + 2 + n || v > 0x10ffff) return false;
      append_utf8(out, v);
      i += 1 + n;
    } else {
      append_utf8(out, c);
    }
  }
  return true;
}

class Machine {
 public:
  Machine(Document& doc, const uint8_t* data, size_t size, size_t base, const std::string& what, const Limits& limits)
      : doc_(doc), d_(data), n_(size), base_(base), what_(what), lim_(limits) {}

  Node* run(size_t* end);

 private:
  [[noreturn]] void broken(const std::string& detail) const {
    const char* name = opcode_name(op_);
    fail(ErrorKind::bad_file, what_, ": corrupt pickle at byte ", base_ + op_pos_, " (opcode ", name ? name : "?",
         "): ", detail);
  }
  [[noreturn]] void truncated(uint64_t want) const {
    const char* name = opcode_name(op_);
    fail(ErrorKind::bad_file, what_, ": truncated: the ", name ? name : "?", " opcode at byte ", base_ + op_pos_,
         " needs ", want, " more byte", want == 1 ? "" : "s", " but only ", n_ - pos_, " remain",
         n_ - pos_ == 1 ? "s" : "", " (the file is cut short or corrupt)");
  }
  void need(uint64_t k) const {
    if (k > n_ - pos_) truncated(k);
  }
  const uint8_t* take(uint64_t k) {
    need(k);
    const uint8_t* p = d_ + pos_;
    pos_ += static_cast<size_t>(k);
    return p;
  }
  uint8_t u8() { return *take(1); }
  uint16_t u16() {
    const uint8_t* p = take(2);
    return uint16_t(p[0] | (p[1] << 8));
  }
  uint32_t u32() {
    const uint8_t* p = take(4);
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
  }
  uint64_t u64() {
    uint64_t lo = u32();
    uint64_t hi = u32();
    return lo | (hi << 32);
  }
  std::string_view line() {
    const void* nl = std::memchr(d_ + pos_, '\n', n_ - pos_);
    if (nl == nullptr) truncated(1);
    size_t len = static_cast<size_t>(static_cast<const uint8_t*>(nl) - (d_ + pos_));
    std::string_view s(reinterpret_cast<const char*>(d_ + pos_), len);
    pos_ += len + 1;
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
  }
  std::string_view view(uint64_t k) { return {reinterpret_cast<const char*>(take(k)), static_cast<size_t>(k)}; }

  Node* node(Kind k) { return doc_.make(k, base_ + op_pos_); }
  size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(Node* v) {
    if (stack_.size() >= lim_.max_stack)
      broken("more than " + std::to_string(lim_.max_stack) + " values on the stack (nesting too deep)");
    if (stack_.size() == stack_.capacity()) doc_.budget().charge(8 * stack_.size() + 64, "pickle stack");
    stack_.push_back(v);
  }
  Node* pop() {
    if (stack_.size() <= fence()) broken("stack underflow");
    Node* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Node* top() {
    if (stack_.size() <= fence()) broken("stack underflow");
    return stack_.back();
  }
  std::vector<Node*> pop_mark() {
    if (marks_.empty()) broken("no MARK to pop to");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Node*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void add_items(Node* target, std::vector<Node*>& items, Kind expected_a, Kind expected_b) {
    if (target->kind != expected_a && target->kind != expected_b && target->kind != Kind::object)
      broken(std::string("cannot add items to a ") + kind_name(target->kind));
    doc_.budget().charge(16 * items.size(), "pickle containers");
    target->items.insert(target->items.end(), items.begin(), items.end());
  }
  void add_entries(Node* target, const std::vector<Node*>& kv) {
    if (target->kind != Kind::dict && target->kind != Kind::object)
      broken(std::string("cannot set items on a ") + kind_name(target->kind));
    if (kv.size() % 2 != 0) broken("odd number of values for SETITEMS");
    doc_.budget().charge(16 * kv.size(), "pickle containers");
    for (size_t i = 0; i < kv.size(); i += 2) target->entries.emplace_back(kv[i], kv[i + 1]);
  }
  Node* make_seq(Kind k, std::vector<Node*> items) {
    Node* t = node(k);
    doc_.budget().charge(8 * items.size(), "pickle containers");
    t->items = std::move(items);
    return t;
  }
  Node* make_int(int64_t v) {
    Node* t = node(Kind::integer);
    t->i = v;
    return t;
  }
  Node* make_long(std::string_view raw) {
    if (raw.size() <= 8) {
      uint64_t v = 0;
      for (size_t k = 0; k < raw.size(); ++k) v |= uint64_t(static_cast<uint8_t>(raw[k])) << (8 * k);
      if (!raw.empty() && raw.size() < 8 && (static_cast<uint8_t>(raw.back()) & 0x80))
        v |= ~uint64_t(0) << (8 * raw.size());
      return make_int(static_cast<int64_t>(v));
    }
    Node* t = node(Kind::big_integer);
    t->s = raw;
    return t;
  }
  Node* text_int(std::string_view s, bool is_long) {
    if (is_long && !s.empty() && s.back() == 'L') s.remove_suffix(1);
    if (!is_long && s == "01") {
      Node* t = node(Kind::boolean);
      t->i = 1;
      return t;
    }
    if (!is_long && s == "00") return node(Kind::boolean);
    std::string_view digits = s;
    if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
    int64_t v = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v, 10);
    if (!digits.empty() && r.ec == std::errc() && r.ptr == digits.data() + digits.size()) return make_int(v);
    return text_big_int(digits);
  }
  /// A decimal integer beyond 64 bits, kept as its digits (i = 1; see Kind::big_integer): checked
  /// in linear time and never converted while reading (big_integer_bytes() converts on demand).
  /// At most 4300 digits, Python's own limit for int(str).
  Node* text_big_int(std::string_view digits) {
    std::string_view magnitude = digits;
    if (!magnitude.empty() && magnitude[0] == '-') magnitude.remove_prefix(1);
    if (magnitude.empty() || magnitude.size() > 4300 ||
        magnitude.find_first_not_of("0123456789") != std::string_view::npos)
      broken("not an integer: '" + printable(digits) + "'");
    Node* t = node(Kind::big_integer);
    t->s = digits;
    t->i = 1;
    return t;
  }
  uint64_t text_index(std::string_view s) {
    uint64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v, 10);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
      broken("bad memo index '" + printable(s) + "'");
    return v;
  }
  void memo_put(uint64_t idx, Node* v) {
    if (memo_.size() >= lim_.max_memo && memo_.find(idx) == memo_.end())
      broken("more than " + std::to_string(lim_.max_memo) + " memo entries");
    doc_.budget().charge(48, "pickle memo");
    memo_[idx] = v;
  }
  Node* memo_get(uint64_t idx) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) broken("memo entry " + std::to_string(idx) + " was never stored");
    return it->second;
  }
  Node* make_global(std::string_view module, std::string_view name) {
    Node* g = node(Kind::global);
    g->s = module;
    g->s2 = name;
    return g;
  }
  Node* make_pid(Node* pid) {
    Node* p = node(Kind::persistent_id);
    p->args = pid;
    doc_.budget().charge(16, "pickle persistent ids");
    doc_.persistent_ids().push_back(p);
    return p;
  }
  Node* make_object(Make how, Node* callable, Node* args, Node* kwargs = nullptr) {
    Node* o = node(Kind::object);
    o->make = how;
    o->callable = callable;
    o->args = args;
    o->kwargs = kwargs;
    return o;
  }

  Document& doc_;
  const uint8_t* d_;
  size_t n_;
  size_t base_;
  const std::string& what_;
  Limits lim_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  std::vector<Node*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Node*> memo_;
};

Node* Machine::run(size_t* end) {
  if (n_ == 0) fail(ErrorKind::bad_file, what_, ": empty: no pickle data at byte ", base_);
  for (;;) {
    if (pos_ >= n_) {
      fail(ErrorKind::bad_file, what_, ": truncated: the pickle ends at byte ", base_ + n_,
           " without its STOP opcode (the file is cut short)");
    }
    op_pos_ = pos_;
    op_ = d_[pos_++];
    switch (op_) {
      case 0x80: {  // PROTO
        uint8_t proto = u8();
        if (proto > 5) broken("pickle protocol " + std::to_string(proto) + " is newer than 5");
        break;
      }
      case 0x95: {  // FRAME: a length prefix only; the opcodes inside are read as usual
        uint64_t len = u64();
        if (len > n_ - pos_) truncated(len);
        break;
      }
      case '.': {  // STOP
        Node* result = pop();
        if (end) *end = pos_;
        return result;
      }
      case '(':
        if (marks_.size() >= lim_.max_marks) broken("more than " + std::to_string(lim_.max_marks) + " open MARKs");
        if (marks_.size() == marks_.capacity()) doc_.budget().charge(8 * marks_.size() + 64, "pickle marks");
        marks_.push_back(stack_.size());
        break;
      case '0':  // POP
        if (stack_.size() > fence())
          stack_.pop_back();
        else
          pop_mark();
        break;
      case '1':
        pop_mark();
        break;  // POP_MARK
      case '2':
        push(top());
        break;  // DUP
      case 'N':
        push(node(Kind::none));
        break;
      case 0x88:
      case 0x89: {  // NEWTRUE / NEWFALSE
        Node* b = node(Kind::boolean);
        b->i = op_ == 0x88 ? 1 : 0;
        push(b);
        break;
      }
      case 'J':
        push(make_int(static_cast<int32_t>(u32())));
        break;  // BININT
      case 'K':
        push(make_int(u8()));
        break;  // BININT1
      case 'M':
        push(make_int(u16()));
        break;  // BININT2
      case 'I':
        push(text_int(line(), false));
        break;  // INT
      case 'L':
        push(text_int(line(), true));
        break;      // LONG
      case 0x8a: {  // LONG1
        uint8_t k = u8();
        push(make_long(view(k)));
        break;
      }
      case 0x8b: {  // LONG4
        int32_t k = static_cast<int32_t>(u32());
        if (k < 0) broken("negative byte count " + std::to_string(k));
        push(make_long(view(static_cast<uint32_t>(k))));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const uint8_t* p = take(8);
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | p[k];
        double v;
        std::memcpy(&v, &bits, 8);
        Node* f = node(Kind::floating);
        f->f = v;
        push(f);
        break;
      }
      case 'F': {  // FLOAT (text)
        std::string_view s = line();
        double v = 0;
        auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
          broken("not a float: '" + printable(s) + "'");
        Node* f = node(Kind::floating);
        f->f = v;
        push(f);
        break;
      }
      case 'C':
      case 'B':
      case 0x8e:
      case 0x96: {  // SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8
        uint64_t k = op_ == 'C' ? u8() : op_ == 'B' ? u32() : u64();
        Node* b = node(op_ == 0x96 ? Kind::bytearray : Kind::bytes);
        b->s = view(k);
        push(b);
        break;
      }
      case 0x8c:
      case 'X':
      case 0x8d: {  // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
        uint64_t k = op_ == 0x8c ? u8() : op_ == 'X' ? u32() : u64();
        Node* s = node(Kind::string);
        s->s = view(k);
        push(s);
        break;
      }
      case 'U':
      case 'T': {  // SHORT_BINSTRING, BINSTRING: Python 2 str, raw bytes read as latin-1
        int64_t k = op_ == 'U' ? u8() : static_cast<int32_t>(u32());
        if (k < 0) broken("negative string length " + std::to_string(k));
        Node* s = node(Kind::string);
        s->s = view(static_cast<uint64_t>(k));
        s->i = 1;  // latin-1 raw bytes
        push(s);
        break;
      }
      case 'S': {  // STRING (text repr)
        std::string out;
        if (!decode_py_string_literal(line(), &out)) broken("bad string literal");
        Node* s = node(Kind::string);
        s->s = doc_.keep(std::move(out));
        s->i = 1;
        push(s);
        break;
      }
      case 'V': {  // UNICODE (raw-unicode-escape text)
        std::string out;
        if (!decode_raw_unicode_escape(line(), &out)) broken("bad raw-unicode-escape text");
        Node* s = node(Kind::string);
        s->s = doc_.keep(std::move(out));
        push(s);
        break;
      }
      case ')':
        push(node(Kind::tuple));
        break;
      case ']':
        push(node(Kind::list));
        break;
      case '}':
        push(node(Kind::dict));
        break;
      case 0x8f:
        push(node(Kind::set));
        break;
      case 0x85: {
        Node* a = pop();
        push(make_seq(Kind::tuple, {a}));
        break;
      }
      case 0x86: {
        Node* b = pop();
        Node* a = pop();
        push(make_seq(Kind::tuple, {a, b}));
        break;
      }
      case 0x87: {
        Node* c = pop();
        Node* b = pop();
        Node* a = pop();
        push(make_seq(Kind::tuple, {a, b, c}));
        break;
      }
      case 't':
        push(make_seq(Kind::tuple, pop_mark()));
        break;
      case 'l':
        push(make_seq(Kind::list, pop_mark()));
        break;
      case 0x91:
        push(make_seq(Kind::frozenset, pop_mark()));
        break;
      case 'd': {
        std::vector<Node*> kv = pop_mark();
        Node* d = node(Kind::dict);
        add_entries(d, kv);
        push(d);
        break;
      }
      case 'a': {  // APPEND
        Node* v = pop();
        std::vector<Node*> one{v};
        add_items(top(), one, Kind::list, Kind::list);
        break;
      }
      case 'e': {  // APPENDS
        std::vector<Node*> items = pop_mark();
        add_items(top(), items, Kind::list, Kind::list);
        break;
      }
      case 0x90: {  // ADDITEMS
        std::vector<Node*> items = pop_mark();
        add_items(top(), items, Kind::set, Kind::set);
        break;
      }
      case 's': {  // SETITEM
        Node* v = pop();
        Node* k = pop();
        add_entries(top(), {k, v});
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Node*> kv = pop_mark();
        add_entries(top(), kv);
        break;
      }
      case 'c': {  // GLOBAL module\nname\n
        std::string_view module = line();
        std::string_view name = line();
        push(make_global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Node* name = pop();
        Node* module = pop();
        if (module->kind != Kind::string || name->kind != Kind::string) broken("STACK_GLOBAL needs two strings");
        push(make_global(module->s, name->s));
        break;
      }
      case 'R': {  // REDUCE: recorded, never called
        Node* args = pop();
        Node* callable = pop();
        if (args->kind != Kind::tuple)
          broken(std::string("REDUCE arguments must be a tuple, not a ") + kind_name(args->kind));
        push(make_object(Make::reduce, callable, args));
        break;
      }
      case 0x81: {  // NEWOBJ
        Node* args = pop();
        Node* cls = pop();
        if (args->kind != Kind::tuple)
          broken(std::string("NEWOBJ arguments must be a tuple, not a ") + kind_name(args->kind));
        push(make_object(Make::newobj, cls, args));
        break;
      }
      case 0x92: {  // NEWOBJ_EX
        Node* kwargs = pop();
        Node* args = pop();
        Node* cls = pop();
        if (args->kind != Kind::tuple || kwargs->kind != Kind::dict) broken("NEWOBJ_EX needs a tuple and a dict");
        push(make_object(Make::newobj_ex, cls, args, kwargs));
        break;
      }
      case 'i': {  // INST module\nname\n, arguments from the mark
        std::string_view module = line();
        std::string_view name = line();
        Node* args = make_seq(Kind::tuple, pop_mark());
        push(make_object(Make::inst, make_global(module, name), args));
        break;
      }
      case 'o': {  // OBJ: class and arguments from the mark
        std::vector<Node*> items = pop_mark();
        if (items.empty()) broken("OBJ without a class");
        Node* cls = items.front();
        items.erase(items.begin());
        push(make_object(Make::obj, cls, make_seq(Kind::tuple, std::move(items))));
        break;
      }
      case 'b': {  // BUILD: the state is recorded on the object
        Node* state = pop();
        top()->state = state;
        break;
      }
      case 'P': {  // PERSID (text)
        Node* pid = node(Kind::string);
        pid->s = line();
        push(make_pid(pid));
        break;
      }
      case 'Q': {  // BINPERSID
        Node* pid = pop();
        push(make_pid(pid));
        break;
      }
      case 0x94:
        memo_put(memo_.size(), top());
        break;  // MEMOIZE
      case 'p':
        memo_put(text_index(line()), top());
        break;
      case 'q':
        memo_put(u8(), top());
        break;
      case 'r':
        memo_put(u32(), top());
        break;
      case 'g':
        push(memo_get(text_index(line())));
        break;
      case 'h':
        push(memo_get(u8()));
        break;
      case 'j':
        push(memo_get(u32()));
        break;
      case 0x98:
        top();
        break;  // READONLY_BUFFER: no effect on a recorded value
      case 0x97:
        fail(ErrorKind::unsupported, what_, ": unsupported: the pickle uses out-of-band buffers (NEXT_BUFFER at byte ",
             base_ + op_pos_, ")");
      case 0x82:
      case 0x83:
      case 0x84:
        fail(ErrorKind::unsupported, what_, ": unsupported: the pickle uses the copyreg extension registry (",
             opcode_name(op_), " at byte ", base_ + op_pos_, ")");
      default: {
        static const char* hex = "0123456789abcdef";
        std::string b = "0x";
        b += hex[op_ >> 4];
        b += hex[op_ & 15];
        if (op_ >= 0x20 && op_ < 0x7f) b += std::string(" '") + static_cast<char>(op_) + "'";
        fail(ErrorKind::bad_file, what_, ": corrupt pickle: byte ", base_ + op_pos_, " (", b,
             ") is not a pickle opcode");
      }
    }
  }
}

}  // namespace

Node* parse(Document& doc, const uint8_t* data, size_t size, size_t base_offset, const std::string& what, size_t* end,
            const Limits& limits) {
  Machine m(doc, data, size, base_offset, what, limits);
  return m.run(end);
}

}  // namespace sg2::readers::pickle
