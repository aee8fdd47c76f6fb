// sg2 readers: numpy values decoded without numpy (numpy_decode.h).
#include "readers/numpy_decode.h"

#include <algorithm>
#include <cstring>

#include "readers/pickle_access.h"
#include "sg2/error.h"

namespace sg2::readers {

using pickle::Kind;
using pickle::Node;

namespace {

bool is_numpy_call(const Node* n, const char* module_tail, const char* name) {
  const std::string p = pickle::call_path(n);
  return p == std::string("numpy.core.") + module_tail + "." + name;
}

/// UTF-8 text whose code points are all < 256, re-encoded as latin-1 bytes.
std::optional<std::string> utf8_to_latin1(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((c & 0xe0) == 0xc0 && i + 1 < s.size()) {
      unsigned cp = ((c & 0x1fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3fu);
      if (cp > 0xff) return std::nullopt;
      out += static_cast<char>(cp);
      ++i;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string_view> bytes_of(const Node* n, pickle::Document& doc) {
  if (n == nullptr) return std::nullopt;
  if (n->kind == Kind::bytes || n->kind == Kind::bytearray) return n->s;
  if (n->kind == Kind::string && n->i == 1) return n->s;  // Python 2 str (latin-1 raw bytes)
  if (pickle::is_call(n, "_codecs.encode")) {
    const auto& a = pickle::call_args(n);
    if (a.size() == 2) {
      auto text = pickle::as_str(a[0]);
      auto enc = pickle::as_str(a[1]);
      if (text && enc && (*enc == "latin1" || *enc == "latin-1" || *enc == "iso-8859-1")) {
        if (a[0]->i == 1) return *text;
        if (auto raw = utf8_to_latin1(*text)) return doc.keep(std::move(*raw));
      }
    }
  }
  return std::nullopt;
}

std::optional<NumpyDType> numpy_dtype(const Node* n, const std::string& what) {
  if (pickle::call_path(n) != "numpy.dtype") return std::nullopt;
  const auto& a = pickle::call_args(n);
  auto code = a.empty() ? std::nullopt : pickle::as_str(a[0]);
  if (!code) fail(ErrorKind::bad_file, what, ": numpy dtype without a type code");
  NumpyDType d;
  const std::string c(*code);
  if (c == "f4")
    d.type = DType::f32;
  else if (c == "f8")
    d.type = DType::f64;
  else if (c == "f2")
    d.type = DType::f16;
  else if (c == "i1")
    d.type = DType::i8;
  else if (c == "u1")
    d.type = DType::u8;
  else if (c == "i2")
    d.type = DType::i16;
  else if (c == "i4")
    d.type = DType::i32;
  else if (c == "i8")
    d.type = DType::i64;
  else if (c == "b1")
    d.type = DType::boolean;
  else
    fail(ErrorKind::unsupported, what, ": unsupported: numpy dtype '", pickle::printable(c), "'");
  // State (version, byteorder, subarray, names, fields, elsize, alignment, flags[, metadata]).
  if (const Node* st = n->state) {
    if (const auto* items = pickle::as_seq(st); items != nullptr && items->size() >= 2) {
      if (auto order = pickle::as_str((*items)[1])) {
        if (*order == ">")
          d.big_endian = true;
        else if (*order != "<" && *order != "|" && *order != "=")
          fail(ErrorKind::bad_file, what, ": numpy dtype with byte order '", pickle::printable(*order), "'");
      }
    }
  }
  return d;
}

std::optional<double> numpy_scalar(const Node* n, pickle::Document& doc, const std::string& what) {
  if (!is_numpy_call(n, "multiarray", "scalar")) return std::nullopt;
  const auto& a = pickle::call_args(n);
  if (a.size() != 2) fail(ErrorKind::bad_file, what, ": numpy scalar with ", a.size(), " arguments");
  auto dt = numpy_dtype(a[0], what);
  auto raw = bytes_of(a[1], doc);
  if (!dt || !raw) fail(ErrorKind::bad_file, what, ": malformed numpy scalar");
  const int sz = dtype_size(dt->type);
  if (raw->size() != static_cast<size_t>(sz))
    fail(ErrorKind::bad_file, what, ": numpy ", dtype_name(dt->type), " scalar with ", raw->size(), " bytes");
  uint8_t b[8];
  for (int k = 0; k < sz; ++k) b[k] = static_cast<uint8_t>((*raw)[dt->big_endian ? sz - 1 - k : k]);
  switch (dt->type) {
    case DType::f64: {
      double v;
      std::memcpy(&v, b, 8);
      return v;
    }
    default: {
      ArrayView v;
      v.dtype = dt->type;
      v.data = b;
      v.storage_elements = 1;
      pickle::Budget tmp(1 << 10, what);
      return static_cast<double>(to_float_tensor(v, tmp, what)[0]);
    }
  }
}

std::optional<double> as_number(const Node* n, pickle::Document& doc, const std::string& what) {
  if (n == nullptr) return std::nullopt;
  if (n->kind == Kind::integer || n->kind == Kind::boolean) return static_cast<double>(n->i);
  if (n->kind == Kind::floating) return n->f;
  return numpy_scalar(n, doc, what);
}

std::optional<ArrayView> numpy_array(const Node* n, pickle::Document& doc, const std::string& what) {
  if (n == nullptr || n->kind != Kind::object) return std::nullopt;
  ArrayView v;
  std::optional<NumpyDType> dt;
  std::optional<std::string_view> raw;
  bool fortran = false;
  const Node* shape_node = nullptr;
  if (is_numpy_call(n, "multiarray", "_reconstruct")) {
    const Node* st = n->state;
    const auto* items = pickle::as_seq(st);
    if (items == nullptr || (items->size() != 5 && items->size() != 4))
      fail(ErrorKind::bad_file, what, ": numpy array without a valid state (", pickle::describe(st), ")");
    const size_t o = items->size() == 5 ? 1 : 0;
    shape_node = (*items)[o];
    dt = numpy_dtype((*items)[o + 1], what);
    auto f = pickle::as_bool((*items)[o + 2]);
    fortran = f && *f;
    if ((*items)[o + 3]->kind == Kind::list)
      fail(ErrorKind::unsupported, what, ": unsupported: a numpy array of Python objects");
    raw = bytes_of((*items)[o + 3], doc);
  } else if (is_numpy_call(n, "numeric", "_frombuffer")) {
    const auto& a = pickle::call_args(n);
    if (a.size() != 4) fail(ErrorKind::bad_file, what, ": numpy _frombuffer with ", a.size(), " arguments");
    raw = bytes_of(a[0], doc);
    dt = numpy_dtype(a[1], what);
    shape_node = a[2];
    auto order = pickle::as_str(a[3]);
    fortran = order && *order == "F";
  } else if (is_numpy_call(n, "multiarray", "scalar")) {
    const auto& a = pickle::call_args(n);
    if (a.size() != 2) fail(ErrorKind::bad_file, what, ": numpy scalar with ", a.size(), " arguments");
    dt = numpy_dtype(a[0], what);
    raw = bytes_of(a[1], doc);
    static const Node empty_tuple = [] {
      Node t;
      t.kind = Kind::tuple;
      return t;
    }();
    shape_node = &empty_tuple;
  } else {
    return std::nullopt;
  }
  if (!dt) fail(ErrorKind::bad_file, what, ": numpy array without a dtype");
  if (!raw) fail(ErrorKind::bad_file, what, ": numpy array without raw data");
  const auto* dims = pickle::as_seq(shape_node);
  if (dims == nullptr) fail(ErrorKind::bad_file, what, ": numpy array shape is a ", pickle::describe(shape_node));
  if (dims->size() > 16) fail(ErrorKind::bad_file, what, ": numpy array with ", dims->size(), " dimensions");
  for (const Node* d : *dims) {
    auto k = pickle::as_int(d);
    if (!k || *k < 0) fail(ErrorKind::bad_file, what, ": numpy array dimension is ", pickle::describe(d));
    v.shape.push_back(*k);
  }
  v.dtype = dt->type;
  v.big_endian = dt->big_endian;
  // The element count first, in checked arithmetic against the bytes present; the strides after
  // it (so their products cannot overflow either).
  const int64_t numel = checked_numel(v.shape, what);
  const uint64_t es = static_cast<uint64_t>(dtype_size(v.dtype));
  if (static_cast<uint64_t>(numel) > raw->size() / es || static_cast<uint64_t>(numel) * es != raw->size())
    fail(ErrorKind::bad_file, what, ": numpy array ", shape_to_string(v.shape), " of ", dtype_name(v.dtype), " holds ",
         raw->size(), " bytes, not ", numel, " elements of ", es, " bytes");
  v.strides = contiguous_strides(v.shape);
  if (fortran) {  // column-major: stride 1 on the first dimension
    int64_t acc = 1;
    for (size_t k = 0; k < v.shape.size(); ++k) {
      v.strides[k] = acc;
      if (numel > 0) acc *= v.shape[k];  // a partial product of numel (<= the byte count)
    }
  }
  v.data = reinterpret_cast<const uint8_t*>(raw->data());
  v.storage_elements = static_cast<uint64_t>(numel);
  return v;
}

}  // namespace sg2::readers
