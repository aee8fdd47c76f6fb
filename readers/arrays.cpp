// sg2 readers: strided tensor views and their float32 conversion (arrays.h).
#include "readers/arrays.h"

#include <cstring>

#include "sg2/error.h"
#include "util/file_util.h"

namespace sg2::readers {

int dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
      return 2;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::f64:
      return "float64";
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::i16:
      return "int16";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  int64_t acc = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    s[k] = acc;
    if (shape[k] > 0 && acc <= (int64_t(1) << 62) / shape[k]) acc *= shape[k];
  }
  return s;
}

int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorKind::bad_file, what, ": negative dimension ", d, " in shape ", shape_to_string(shape));
    if (d != 0 && n > (int64_t(1) << 62) / d)
      fail(ErrorKind::bad_file, what, ": shape ", shape_to_string(shape), " is impossibly large");
    n *= d;
  }
  return n;
}

void check_bounds(const ArrayView& v, const std::string& what) {
  if (v.strides.size() != v.shape.size())
    fail(ErrorKind::bad_file, what, ": ", v.shape.size(), "-d shape with ", v.strides.size(), " strides");
  const int64_t n = checked_numel(v.shape, what);
  if (v.offset < 0) fail(ErrorKind::bad_file, what, ": negative storage offset ", v.offset);
  if (n == 0) return;
  uint64_t last = static_cast<uint64_t>(v.offset);
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.strides[k] < 0) fail(ErrorKind::bad_file, what, ": negative stride ", v.strides[k]);
    const uint64_t span = static_cast<uint64_t>(v.shape[k] - 1);
    const uint64_t st = static_cast<uint64_t>(v.strides[k]);
    if (st != 0 && span > (uint64_t(1) << 62) / st)
      fail(ErrorKind::bad_file, what, ": stride ", v.strides[k], " is impossibly large");
    last += span * st;
    if (last > (uint64_t(1) << 62)) fail(ErrorKind::bad_file, what, ": strides reach beyond any storage");
  }
  if (last >= v.storage_elements)
    fail(ErrorKind::bad_file, what, ": shape ", shape_to_string(v.shape), " with strides ", shape_to_string(v.strides),
         " and offset ", v.offset, " reaches element ", last, " but its storage holds only ", v.storage_elements,
         " (truncated or corrupt)");
}

namespace {

float load_element(const uint8_t* p, DType t, bool big) {
  uint8_t b[8];
  const int sz = dtype_size(t);
  if (big) {
    for (int k = 0; k < sz; ++k) b[k] = p[sz - 1 - k];
    p = b;
  }
  switch (t) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::f16:
      return detail::half_to_float(detail::load_le16(p));
    case DType::bf16:
      return detail::bf16_to_float(detail::load_le16(p));
    case DType::f64: {
      double d;
      std::memcpy(&d, p, 8);
      return static_cast<float>(d);
    }
    case DType::i8:
      return static_cast<float>(static_cast<int8_t>(p[0]));
    case DType::u8:
      return static_cast<float>(p[0]);
    case DType::boolean:
      return p[0] != 0 ? 1.0f : 0.0f;
    case DType::i16:
      return static_cast<float>(static_cast<int16_t>(detail::load_le16(p)));
    case DType::i32:
      return static_cast<float>(static_cast<int32_t>(detail::load_le32(p)));
    case DType::i64:
      return static_cast<float>(static_cast<int64_t>(detail::load_le64(p)));
  }
  return 0.0f;
}

}  // namespace

Tensor to_float_tensor(const ArrayView& v, pickle::Budget& budget, const std::string& what) {
  check_bounds(v, what);
  const int64_t n = checked_numel(v.shape, what);
  // n <= 2^62, so n * 4 could wrap: charge an impossible amount instead (a stride-0 expand of
  // one element to [2^31, 2^31] reaches no byte outside its storage but would need 16 EiB).
  budget.charge(static_cast<uint64_t>(n) > (uint64_t(1) << 60) ? UINT64_MAX : static_cast<uint64_t>(n) * 4 + 64,
                "decoded tensors");
  std::vector<float> out(static_cast<size_t>(n));
  if (n == 0) return Tensor(v.shape, std::move(out));
  const int sz = dtype_size(v.dtype);
  const bool contiguous = v.strides == contiguous_strides(v.shape);
  const uint8_t* base = v.data + static_cast<size_t>(v.offset) * static_cast<size_t>(sz);
  if (contiguous && v.dtype == DType::f32 && !v.big_endian) {
    std::memcpy(out.data(), base, static_cast<size_t>(n) * 4);
    return Tensor(v.shape, std::move(out));
  }
  // Generic strided walk in C order with an index counter.
  const size_t nd = v.shape.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t e = 0; e < n; ++e) {
    out[static_cast<size_t>(e)] =
        load_element(base + static_cast<size_t>(off) * static_cast<size_t>(sz), v.dtype, v.big_endian);
    for (size_t k = nd; k-- > 0;) {
      if (++idx[k] < v.shape[k]) {
        off += v.strides[k];
        break;
      }
      off -= v.strides[k] * (v.shape[k] - 1);
      idx[k] = 0;
    }
  }
  return Tensor(v.shape, std::move(out));
}

}  // namespace sg2::readers
