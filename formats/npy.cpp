// sg2: .npy reading and writing (npy.h).
#include "sg2/npy.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <string>

#include "formats/npy_header.h"
#include "sg2/error.h"
#include "util/file_util.h"
#include "util/text_util.h"

namespace sg2 {

namespace {

// The header dict of a .npy file, read as numpy reads it (numpy.lib.format: ast.literal_eval, then
// exactly the keys descr, fortran_order and shape; descr a string, fortran_order a bool, shape a
// tuple of integers). Stricter where numpy would guess: a key given twice (numpy keeps the last,
// and sg2 once kept the first: two readers then see two arrays) is refused, and so are values
// spelled in ways numpy's own writer never uses (hex or underscored integers, nested containers).
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : t_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    blanks();
    expect('{');
    for (;;) {
      blanks();
      if (peek() == '}') break;
      const std::string key = string_literal();
      blanks();
      expect(':');
      blanks();
      auto once = [&](bool& seen) {
        if (seen)
          bad("the .npy header gives '" + detail::printable(key, 24) +
              "' twice (numpy would read the last one): refused as ambiguous");
        seen = true;
      };
      if (key == "descr") {
        once(seen_descr);
        if (peek() != '\'' && peek() != '"')
          bad("the .npy header's descr is not a string (a structured dtype is not supported)");
        h.descr = string_literal();
      } else if (key == "fortran_order") {
        once(seen_fortran);
        if (word("True"))
          h.fortran_order = true;
        else if (word("False"))
          h.fortran_order = false;
        else
          bad("the .npy header's fortran_order is not True or False");
      } else if (key == "shape") {
        once(seen_shape);
        h.shape = tuple();
      } else {
        bad("the .npy header has the key '" + detail::printable(key, 24) +
            "' (numpy reads only descr, fortran_order and shape)");
      }
      blanks();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      blanks();
      if (peek() != '}') bad("malformed .npy header (expected ',' or '}')");
    }
    ++i_;  // '}'
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r' || t_[i_] == '\0'))
      ++i_;
    if (i_ != t_.size()) bad("malformed .npy header (text after the dict)");
    if (!seen_descr || !seen_fortran || !seen_shape)
      bad(std::string(".npy header has no '") +
          (!seen_descr     ? "descr"
           : !seen_fortran ? "fortran_order"
                           : "shape") +
          "'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(ErrorKind::bad_file, path_, ": ", what); }
  char peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void blanks() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("malformed .npy header (expected '") + c + "')");
    ++i_;
  }
  bool word(const char* w) {
    const size_t n = std::strlen(w);
    if (t_.compare(i_, n, w) != 0) return false;
    const char next = i_ + n < t_.size() ? t_[i_ + n] : '\0';
    if (std::isalnum(static_cast<unsigned char>(next)) || next == '_') return false;
    i_ += n;
    return true;
  }
  // 'text' or "text", without escapes (numpy's keys and dtype strings have none).
  std::string string_literal() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("malformed .npy header (expected a quoted key)");
    const size_t end = t_.find(q, i_ + 1);
    if (end == std::string::npos) bad("malformed .npy header string");
    std::string out = t_.substr(i_ + 1, end - i_ - 1);
    if (out.find('\\') != std::string::npos) bad("malformed .npy header string (an escape)");
    i_ = end + 1;
    return out;
  }
  // (2, 3), (5,), (): non-negative decimal integers below 2^63, at most 32.
  std::vector<int64_t> tuple() {
    const size_t start = i_;
    if (peek() != '(') bad("the .npy header's shape is not a tuple");
    ++i_;
    std::vector<int64_t> dims;
    auto malformed = [&]() {
      const size_t end = t_.find(')', start);
      bad("malformed .npy shape " +
          detail::printable(t_.substr(start, end == std::string::npos ? 40 : end - start + 1), 40) +
          " (at most 32 dimensions, each an integer in [0, 2^63))");
    };
    bool trailing_comma = false;
    for (;;) {
      blanks();
      if (peek() == ')') break;
      int64_t v = 0;
      const auto r = std::from_chars(t_.data() + i_, t_.data() + t_.size(), v);
      if (r.ptr == t_.data() + i_ || r.ec != std::errc() || v < 0 || dims.size() >= 32) malformed();
      i_ = static_cast<size_t>(r.ptr - t_.data());
      if (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '.') malformed();
      dims.push_back(v);
      trailing_comma = false;
      blanks();
      if (peek() == ',') {
        ++i_;
        trailing_comma = true;
        continue;
      }
      if (peek() != ')') malformed();
    }
    if (dims.size() == 1 && !trailing_comma) malformed();  // "(5)" is the integer 5 in Python, not a tuple
    ++i_;
    return dims;
  }

  const std::string& t_;
  const std::string& path_;
  size_t i_ = 0;
};

size_t dtype_size(const std::string& dtype, const std::string& path) {
  if (dtype.size() < 3)
    fail(ErrorKind::bad_file, path, ": unsupported .npy dtype '", detail::printable(dtype, 24), "'");
  char order = dtype[0];
  if (order == '>' && dtype != ">u1" && dtype != ">i1")
    fail(ErrorKind::unsupported, path, ": big-endian .npy dtype '", detail::printable(dtype, 24), "' is not supported");
  const std::string_view width(dtype.data() + 2, dtype.size() - 2);
  if (width != "1" && width != "2" && width != "4" && width != "8")
    fail(ErrorKind::bad_file, path, ": unsupported .npy dtype '", detail::printable(dtype, 24), "'");
  return static_cast<size_t>(width[0] - '0');
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  detail::MappedFile m(path);
  return parse_npy(m.data(), m.size(), path);
}

NpyHeaderInfo peek_npy_header(const uint8_t* d, size_t n, const std::string& path) {
  if (n < 10 || std::memcmp(d, "\x93NUMPY", 6) != 0) fail(ErrorKind::bad_file, path, ": not a .npy file (bad magic)");
  int major = d[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = detail::load_le16(d + 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) fail(ErrorKind::bad_file, path, ": truncated .npy header");
    header_len = detail::load_le32(d + 8);
    offset = 12;
  } else {
    fail(ErrorKind::bad_file, path, ": unsupported .npy version ", major);
  }
  if (header_len > n - offset) fail(ErrorKind::bad_file, path, ": truncated .npy header");
  std::string header(reinterpret_cast<const char*>(d + offset), header_len);
  NpyHeader h = HeaderParser(header, path).parse();
  NpyHeaderInfo info;
  info.dtype = std::move(h.descr);
  info.shape = std::move(h.shape);
  info.fortran_order = h.fortran_order;
  info.item_size = dtype_size(info.dtype, path);
  info.data_offset = offset + header_len;
  return info;
}

NpyArray parse_npy(const uint8_t* d, size_t n, const std::string& path) {
  NpyHeaderInfo h = peek_npy_header(d, n, path);
  NpyArray a;
  a.dtype = std::move(h.dtype);
  a.shape = std::move(h.shape);
  const size_t es = h.item_size;
  const size_t data_off = h.data_offset;
  // The element count in checked arithmetic: never more elements than the payload holds. A shape
  // with a zero dimension has no elements, whatever its other dimensions (and needs no payload).
  const uint64_t available = (n - data_off) / es;
  const bool empty = std::find(a.shape.begin(), a.shape.end(), int64_t(0)) != a.shape.end();
  uint64_t count = empty ? 0 : 1;
  for (int64_t dim : a.shape) {
    if (empty) break;
    if (count > available / static_cast<uint64_t>(dim)) {
      count = UINT64_MAX;
      break;
    }
    count *= static_cast<uint64_t>(dim);
  }
  if (count > available)
    fail(ErrorKind::bad_file, path, ": .npy payload of ", n - data_off, " bytes is shorter than its shape ",
         shape_to_string(a.shape), " needs");
  const size_t bytes = static_cast<size_t>(count) * es;
  a.bytes.assign(d + data_off, d + data_off + bytes);
  if (h.fortran_order && a.shape.size() > 1 && count > 0) {
    // Transpose Fortran order to C order. (count > 0, so every stride is at most count.)
    std::vector<uint8_t> c(bytes);
    const size_t nd = a.shape.size();
    std::vector<int64_t> fstride(nd, 1);
    for (size_t k = 1; k < nd; ++k) fstride[k] = fstride[k - 1] * a.shape[k - 1];
    std::vector<int64_t> idx(nd, 0);
    for (uint64_t lin = 0; lin < count; ++lin) {
      // idx is the C-order index of element `lin`; compute its Fortran offset.
      int64_t foff = 0;
      for (size_t k = 0; k < nd; ++k) foff += idx[k] * fstride[k];
      std::memcpy(c.data() + lin * es, a.bytes.data() + static_cast<size_t>(foff) * es, es);
      for (size_t k = nd; k-- > 0;) {
        if (++idx[k] < a.shape[k]) break;
        idx[k] = 0;
      }
    }
    a.bytes.swap(c);
  }
  return a;
}

Tensor read_npy_tensor(const std::string& path) { return npy_float_tensor(read_npy(path), path); }

Tensor npy_float_tensor(const NpyArray& a, const std::string& path) {
  const size_t count = a.bytes.size() / std::max<size_t>(1, dtype_size(a.dtype, path));
  std::vector<float> v(count);
  const std::string& t = a.dtype;
  if (t == "<f4" || t == "=f4") {
    if (!v.empty()) std::memcpy(v.data(), a.bytes.data(), v.size() * 4);
  } else if (t == "<f8" || t == "=f8") {
    for (size_t i = 0; i < count; ++i) {
      double x;
      std::memcpy(&x, a.bytes.data() + i * 8, 8);
      v[i] = static_cast<float>(x);
    }
  } else if (t == "<f2" || t == "=f2") {
    for (size_t i = 0; i < count; ++i) v[i] = detail::half_to_float(detail::load_le16(a.bytes.data() + i * 2));
  } else {
    fail(ErrorKind::bad_file, path, ": expected a float32/float64/float16 array, found dtype '",
         detail::printable(t, 24), "'");
  }
  return Tensor(a.shape, std::move(v));
}

void npy_values_f64(const NpyArray& a, size_t first, size_t count, double* out, const std::string& what) {
  const std::string& t = a.dtype;
  const size_t es = dtype_size(t, what);
  const size_t total = a.bytes.size() / es;
  if (first > total || count > total - first)
    fail(ErrorKind::invalid_argument, what, ": values [", first, ", ", first + count, ") are beyond its ", total);
  const uint8_t* p = a.bytes.data() + first * es;
  if (t == "<f4" || t == "=f4") {
    for (size_t i = 0; i < count; ++i) {
      float x;
      std::memcpy(&x, p + i * 4, 4);
      out[i] = x;
    }
  } else if (t == "<f8" || t == "=f8") {
    if (count > 0) std::memcpy(out, p, count * 8);
  } else if (t == "<f2" || t == "=f2") {
    for (size_t i = 0; i < count; ++i) out[i] = detail::half_to_float(detail::load_le16(p + i * 2));
  } else if (t.size() == 3 && t[1] == 'u' && t[2] == '1') {
    for (size_t i = 0; i < count; ++i) out[i] = p[i];
  } else {
    fail(ErrorKind::bad_file, what, ": expected a float16/float32/float64 or uint8 array, found dtype '",
         detail::printable(t, 24), "'");
  }
}

std::vector<double> read_npy_f64(const std::string& path, std::vector<int64_t>* shape) {
  NpyArray a = read_npy(path);
  if (a.dtype != "<f8" && a.dtype != "=f8" && a.dtype != "<f4" && a.dtype != "=f4")
    fail(ErrorKind::bad_file, path, ": expected a float64 array, found dtype '", detail::printable(a.dtype, 24), "'");
  std::vector<double> v(a.bytes.size() / dtype_size(a.dtype, path));
  npy_values_f64(a, 0, v.size(), v.data(), path);
  if (shape) *shape = a.shape;
  return v;
}

namespace {
/// Magic, version 1.0, header length and the header dict, padded to a multiple of 64 bytes.
std::vector<uint8_t> npy_header(const char* descr, const std::vector<int64_t>& shape) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad with spaces so that magic(6)+version(2)+len(2)+header+'\n' is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  // Sized once and filled in place (GCC 12 warns falsely on growing a vector from a short array).
  std::vector<uint8_t> out(10 + header.size());
  const uint8_t lead[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size() & 0xff), uint8_t(header.size() >> 8)};
  std::copy(lead, lead + 10, out.begin());
  std::copy(header.begin(), header.end(), out.begin() + 10);
  return out;
}
}  // namespace

void write_npy_u8(const std::string& path, const uint8_t* data, const std::vector<int64_t>& shape) {
  const int64_t n = Tensor::numel_of(shape);  // throws on negative dimensions or overflow
  if (n > 0 && data == nullptr) fail(ErrorKind::invalid_argument, "write_npy_u8: no data for ", shape_to_string(shape));
  const std::vector<uint8_t> head = npy_header("|u1", shape);
  detail::write_file_atomic(path, [&](std::FILE* f) {
    detail::write_all(f, head.data(), head.size(), path);
    detail::write_all(f, data, static_cast<size_t>(n), path);
  });
}

std::vector<uint8_t> npy_bytes(const Tensor& t) {
  std::vector<uint8_t> out = npy_header("<f4", t.shape());
  out.reserve(out.size() + t.vec().size() * 4);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(t.data());
  out.insert(out.end(), p, p + t.vec().size() * 4);
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::vector<uint8_t> b = npy_bytes(t);
  detail::write_file_atomic(path, b.data(), b.size());
}

}  // namespace sg2
