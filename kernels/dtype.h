// sg2 CUDA kernels: the element types of device activations (host-visible; no CUDA headers).
#pragma once

#include <cstddef>

namespace sg2::cuda {

/// Storage type of an activation tensor on the device.
enum class DType { f32, f16 };

inline size_t dtype_size(DType t) { return t == DType::f16 ? 2 : 4; }
inline const char* dtype_name(DType t) { return t == DType::f16 ? "fp16" : "fp32"; }

}  // namespace sg2::cuda
