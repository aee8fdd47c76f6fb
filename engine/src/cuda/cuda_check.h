// sg2 CUDA backend: checked CUDA / cuBLAS / cuDNN calls. Every failure becomes
// sg2::Error(ErrorKind::device) — or ErrorKind::out_of_memory for allocation failures — naming
// the call, the file and the line. Usable from .cu and .cpp files.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "sg2/error.h"

namespace sg2::cuda {

/// Throws the Error for a failed CUDA runtime call (`what` = the call's text).
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line);
/// Throws the Error for a failed cuDNN call (status as int to keep cudnn.h out of this header).
[[noreturn]] void throw_cudnn_error(int status, const char* what, const char* file, int line);
/// Throws the Error for a failed cuBLAS call.
[[noreturn]] void throw_cublas_error(int status, const char* what, const char* file, int line);

/// Checks the launch of the kernel just issued (cudaGetLastError; no synchronization).
void check_launch(const char* kernel, const char* file, int line);

}  // namespace sg2::cuda

#define SG2_CUDA_CHECK(call)                                                          \
  do {                                                                                \
    const cudaError_t sg2_err_ = (call);                                              \
    if (sg2_err_ != cudaSuccess) ::sg2::cuda::throw_cuda_error(sg2_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define SG2_CUDNN_CHECK(call)                                                         \
  do {                                                                                \
    const int sg2_st_ = static_cast<int>(call);                                       \
    if (sg2_st_ != 0) ::sg2::cuda::throw_cudnn_error(sg2_st_, #call, __FILE__, __LINE__); \
  } while (0)

#define SG2_CUBLAS_CHECK(call)                                                        \
  do {                                                                                \
    const int sg2_st_ = static_cast<int>(call);                                       \
    if (sg2_st_ != 0) ::sg2::cuda::throw_cublas_error(sg2_st_, #call, __FILE__, __LINE__); \
  } while (0)

/// After every <<<...>>> launch.
#define SG2_LAUNCH_CHECK(name) ::sg2::cuda::check_launch(name, __FILE__, __LINE__)
