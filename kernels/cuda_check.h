// sg2 kernels: checked CUDA runtime calls and kernel launches. Every failure becomes
// sg2::Error(ErrorKind::device) — or ErrorKind::out_of_memory for allocation failures — naming the
// call, the file and the line. Usable from .cu and .cpp files; needs only the CUDA runtime.
// (cuDNN status checks live in the engine: engine/cuda/cudnn_check.h.)
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "sg2/error.h"

namespace sg2::cuda {

/// Throws the Error for a failed CUDA runtime call (`what` = the call's text).
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line);

/// "file.cu:123" (the base name of `file`).
std::string source_location(const char* file, int line);

/// Checks the launch of the kernel just issued (cudaGetLastError; no synchronization).
void check_launch(const char* kernel, const char* file, int line);

}  // namespace sg2::cuda

#define SG2_CUDA_CHECK(call)                                                                         \
  do {                                                                                               \
    const cudaError_t sg2_err_ = (call);                                                             \
    if (sg2_err_ != cudaSuccess) ::sg2::cuda::throw_cuda_error(sg2_err_, #call, __FILE__, __LINE__); \
  } while (0)

/// After every <<<...>>> launch.
#define SG2_LAUNCH_CHECK(name) ::sg2::cuda::check_launch(name, __FILE__, __LINE__)
