// sg2 kernels: CUDA runtime error translation (cuda_check.h).
#include "kernels/cuda_check.h"

#include <cstring>

namespace sg2::cuda {

std::string source_location(const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string(base ? base + 1 : file) + ":" + std::to_string(line);
}

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so later calls are not blamed for it
  if (e == cudaErrorMemoryAllocation)
    fail_hint(ErrorKind::out_of_memory, "use a smaller batch (max_batch), or free the GPU",
              "CUDA out of device memory in ", what, " (", source_location(file, line), ")");
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    fail_hint(ErrorKind::device, detail::concat("rebuild with -DSG2_CUDA_ARCHITECTURES=", major, minor),
              "this sg2 has no GPU code for the GPU's architecture sm_", major, minor, " (", what, " at ",
              source_location(file, line), ": ", cudaGetErrorString(e), ")");
  }
  fail(ErrorKind::device, "CUDA error in ", what, " (", source_location(file, line), "): ", cudaGetErrorName(e), ": ",
       cudaGetErrorString(e));
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    const std::string what = std::string("launch of ") + kernel;
    throw_cuda_error(e, what.c_str(), file, line);
  }
}

}  // namespace sg2::cuda
