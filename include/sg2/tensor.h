// sg2: the host tensor used at the API boundary and by the CPU reference backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// A dense float32 tensor in host memory, row-major (C order), shape in PyTorch order
/// (e.g. images are [N, C, H, W], ws are [N, num_ws, w_dim]). A 0-d tensor has shape {} and
/// one element. Copyable and movable; owns its data.
class Tensor {
 public:
  Tensor() = default;
  /// A tensor of the given shape filled with `fill`. Throws Error(invalid_argument) on a
  /// negative dimension or an element count that overflows.
  explicit Tensor(std::vector<int64_t> shape, float fill = 0.0f);
  /// A tensor that takes `data`; throws Error(invalid_argument) when data.size() != numel(shape).
  Tensor(std::vector<int64_t> shape, std::vector<float> data);

  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  /// Size of dimension i; negative i counts from the end. Throws on a bad index.
  int64_t dim(int i) const;
  int64_t numel() const { return static_cast<int64_t>(data_.size()); }
  bool empty() const { return data_.empty(); }

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  std::vector<float>& vec() { return data_; }
  const std::vector<float>& vec() const { return data_; }
  float& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  float operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }

  /// The same data with another shape of equal element count (throws otherwise).
  Tensor reshaped(std::vector<int64_t> shape) const;
  /// Rows [begin, end) of dimension 0, as a new tensor.
  Tensor slice0(int64_t begin, int64_t end) const;

  /// "[1, 3, 32, 32]"
  std::string shape_str() const;

  /// Number of elements of a shape; throws Error(invalid_argument) on negative dims or overflow.
  static int64_t numel_of(const std::vector<int64_t>& shape);

 private:
  std::vector<int64_t> shape_;
  std::vector<float> data_;
};

/// "[1, 3, 32, 32]" for any shape.
std::string shape_to_string(const std::vector<int64_t>& shape);

/// Concatenates tensors of equal trailing shape along dimension 0.
Tensor concat0(const std::vector<Tensor>& parts);

}  // namespace sg2
SG2_PUBLIC_END
