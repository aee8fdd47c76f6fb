// sg2: .npy reading and writing (npy.h).
#include "sg2/npy.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>

#include "sg2/error.h"
#include "util/file_util.h"
#include "util/text_util.h"

namespace sg2 {

namespace {

// Finds `'key': value` in a numpy header dict and returns the raw value text.
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  std::string pat = "'" + key + "'";
  size_t p = header.find(pat);
  if (p == std::string::npos) fail(ErrorKind::bad_file, path, ": .npy header has no '", key, "'");
  p = header.find(':', p + pat.size());
  if (p == std::string::npos) fail(ErrorKind::bad_file, path, ": malformed .npy header");
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  size_t end = p;
  if (p < header.size() && header[p] == '(') {
    end = header.find(')', p);
    if (end == std::string::npos) fail(ErrorKind::bad_file, path, ": malformed .npy shape");
    return header.substr(p, end - p + 1);
  }
  if (p < header.size() && header[p] == '\'') {
    end = header.find('\'', p + 1);
    if (end == std::string::npos) fail(ErrorKind::bad_file, path, ": malformed .npy header string");
    return header.substr(p + 1, end - p - 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(p, end - p);
}

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

/// The dimensions of a shape tuple "(2, 3)", "(5,)", "()": each a non-negative integer below 2^63.
std::vector<int64_t> parse_shape(const std::string& shape, const std::string& path) {
  std::vector<int64_t> dims;
  for (size_t i = 1; i < shape.size();) {
    while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= shape.size() || shape[i] == ')') break;
    int64_t v = 0;
    const auto r = std::from_chars(shape.data() + i, shape.data() + shape.size(), v);
    if (r.ptr == shape.data() + i || r.ec != std::errc() || v < 0 || dims.size() >= 32)
      fail(ErrorKind::bad_file, path, ": malformed .npy shape ", detail::printable(shape, 40),
           " (at most 32 dimensions, each an integer in [0, 2^63))");
    dims.push_back(v);
    i = static_cast<size_t>(r.ptr - shape.data());
  }
  return dims;
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  detail::MappedFile m(path);
  return parse_npy(m.data(), m.size(), path);
}

NpyArray parse_npy(const uint8_t* d, size_t n, const std::string& path) {
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
  NpyArray a;
  a.dtype = header_value(header, "descr", path);
  std::string fortran = header_value(header, "fortran_order", path);
  std::string shape = header_value(header, "shape", path);
  a.shape = parse_shape(shape, path);
  const size_t es = dtype_size(a.dtype, path);
  const size_t data_off = offset + header_len;
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
  if (fortran.find("True") != std::string::npos && a.shape.size() > 1 && count > 0) {
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
