// sg2 CUDA backend: checked cuDNN calls. A failure becomes sg2::Error(ErrorKind::device), or
// ErrorKind::out_of_memory when cuDNN could not allocate, naming the call, the file and the line.
// CUDA runtime calls use SG2_CUDA_CHECK (kernels/cuda_check.h).
#pragma once

#include "kernels/cuda_check.h"

namespace sg2::cuda {

/// Throws the Error for a failed cuDNN call (status as int to keep cudnn.h out of this header).
[[noreturn]] void throw_cudnn_error(int status, const char* what, const char* file, int line);

}  // namespace sg2::cuda

#define SG2_CUDNN_CHECK(call)                                                             \
  do {                                                                                    \
    const int sg2_st_ = static_cast<int>(call);                                           \
    if (sg2_st_ != 0) ::sg2::cuda::throw_cudnn_error(sg2_st_, #call, __FILE__, __LINE__); \
  } while (0)
