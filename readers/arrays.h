// sg2 readers: strided views of raw tensor bytes inside a checkpoint, and their conversion
// to float32 (torch `Tensor.as_strided` / numpy ndarray semantics: element (i0, i1, ...) lives at
// storage element `offset + sum_k i_k * strides[k]`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "readers/pickle.h"
#include "sg2/tensor.h"

namespace sg2::readers {

/// Element types found in checkpoints.
enum class DType : uint8_t { f32, f16, bf16, f64, i8, u8, i16, i32, i64, boolean };

/// Bytes per element.
int dtype_size(DType t);
/// "float32", "float16", "bfloat16", ...
const char* dtype_name(DType t);

/// A tensor inside the checkpoint's bytes (never copied until to_float_tensor).
struct ArrayView {
  DType dtype = DType::f32;
  bool big_endian = false;        ///< bytes are big-endian (numpy '>' dtypes)
  std::vector<int64_t> shape;     ///< PyTorch order; {} for a 0-d tensor
  std::vector<int64_t> strides;   ///< in elements, one per dimension
  int64_t offset = 0;             ///< in elements, from `data`
  const uint8_t* data = nullptr;  ///< start of the storage
  uint64_t storage_elements = 0;  ///< elements available from `data`
};

/// C-order (row-major) strides for `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

/// Number of elements; throws Error(bad_file) naming `what` on a negative dimension or overflow.
int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what);

/// Checks that every element the view reaches lies inside its storage (non-negative strides and
/// offset, no overflow). Throws Error(bad_file) naming `what` otherwise.
void check_bounds(const ArrayView& v, const std::string& what);

/// Converts the view to a contiguous float32 tensor of the same shape (float16 / bfloat16 /
/// float64 / integers widened or rounded to nearest). Calls check_bounds first and charges the
/// output to `budget`. Throws Error(bad_file) naming `what`.
Tensor to_float_tensor(const ArrayView& v, pickle::Budget& budget, const std::string& what);

}  // namespace sg2::readers
