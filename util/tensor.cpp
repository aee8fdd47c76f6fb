// sg2: host tensor (tensor.h) and error names (error.h).
#include "sg2/tensor.h"

#include <cstring>
#include <limits>
#include <sstream>

#include "sg2/error.h"

namespace sg2 {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument:
      return "invalid_argument";
    case ErrorKind::bad_file:
      return "bad_file";
    case ErrorKind::unsupported:
      return "unsupported";
    case ErrorKind::io:
      return "io";
    case ErrorKind::device:
      return "device";
    case ErrorKind::out_of_memory:
      return "out_of_memory";
    case ErrorKind::internal:
      return "internal";
  }
  return "unknown";
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

int64_t Tensor::numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorKind::invalid_argument, "negative dimension in shape ", shape_to_string(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      fail(ErrorKind::invalid_argument, "shape ", shape_to_string(shape), " has too many elements");
    n *= d;
  }
  return n;
}

Tensor::Tensor(std::vector<int64_t> shape, float fill) : shape_(std::move(shape)) {
  int64_t n = numel_of(shape_);
  if (n > (int64_t(1) << 40)) fail(ErrorKind::out_of_memory, "tensor ", shape_str(), " is too large");
  data_.assign(static_cast<size_t>(n), fill);
}

Tensor::Tensor(std::vector<int64_t> shape, std::vector<float> data) : shape_(std::move(shape)), data_(std::move(data)) {
  if (numel_of(shape_) != static_cast<int64_t>(data_.size()))
    fail(ErrorKind::invalid_argument, "tensor of shape ", shape_str(), " given ", data_.size(), " values");
}

int64_t Tensor::dim(int i) const {
  int n = ndim();
  int j = i < 0 ? i + n : i;
  if (j < 0 || j >= n) fail(ErrorKind::invalid_argument, "dimension ", i, " out of range for shape ", shape_str());
  return shape_[static_cast<size_t>(j)];
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  if (numel_of(shape) != numel())
    fail(ErrorKind::invalid_argument, "cannot reshape ", shape_str(), " to ", shape_to_string(shape));
  return Tensor(std::move(shape), data_);
}

Tensor Tensor::slice0(int64_t begin, int64_t end) const {
  if (ndim() == 0 || begin < 0 || end < begin || end > shape_[0])
    fail(ErrorKind::invalid_argument, "slice [", begin, ", ", end, ") out of range for shape ", shape_str());
  std::vector<int64_t> s = shape_;
  s[0] = end - begin;
  int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  std::vector<float> d(data_.begin() + begin * row, data_.begin() + end * row);
  return Tensor(std::move(s), std::move(d));
}

std::string Tensor::shape_str() const { return shape_to_string(shape_); }

Tensor concat0(const std::vector<Tensor>& parts) {
  if (parts.empty()) return Tensor();
  std::vector<int64_t> shape = parts[0].shape();
  if (shape.empty()) fail(ErrorKind::invalid_argument, "concat0 of 0-d tensors");
  int64_t rows = 0;
  for (const Tensor& p : parts) {
    if (p.ndim() != static_cast<int>(shape.size()) ||
        !std::equal(shape.begin() + 1, shape.end(), p.shape().begin() + 1))
      fail(ErrorKind::invalid_argument, "concat0: shape ", p.shape_str(), " does not match ", shape_to_string(shape));
    rows += p.shape()[0];
  }
  shape[0] = rows;
  std::vector<float> data;
  data.reserve(static_cast<size_t>(Tensor::numel_of(shape)));
  for (const Tensor& p : parts) data.insert(data.end(), p.vec().begin(), p.vec().end());
  return Tensor(std::move(shape), std::move(data));
}

}  // namespace sg2
