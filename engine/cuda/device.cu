// sg2 CUDA backend: which GPUs this build can use (backend.h cuda_device_count) and the checks
// made before a backend is created on one (no driver, no GPU, driver too old, architecture not
// built; the wording is cuda_messages.h's).
#include <cuda_runtime.h>

#include <string>
#include <system_error>
#include <thread>

#include "engine/backend.h"
#include "engine/cuda/device_info.h"
#include "engine/cuda_messages.h"
#include "util/trace.h"

static_assert(sg2::cuda_status::initialization_error == cudaErrorInitializationError);
static_assert(sg2::cuda_status::insufficient_driver == cudaErrorInsufficientDriver);
static_assert(sg2::cuda_status::no_device == cudaErrorNoDevice);
static_assert(sg2::cuda_status::system_driver_mismatch == cudaErrorSystemDriverMismatch);

namespace sg2 {

namespace cuda {

namespace {

__global__ void probe_kernel(int* p) {
  if (p) *p = 1;
}

#ifdef __CUDA_ARCH_LIST__
// __CUDA_ARCH_LIST__ is a comma-separated list ("800,860,890,900"): stringify it variadically.
#define SG2_STR2(...) #__VA_ARGS__
#define SG2_STR(...) SG2_STR2(__VA_ARGS__)
const char* kArchList = SG2_STR(__CUDA_ARCH_LIST__);
#else
const char* kArchList = "?";
#endif

}  // namespace

const char* built_architectures() { return kArchList; }

bool device_usable(int device, std::string* why, std::string* hint) {
  cudaDeviceProp prop{};
  cudaError_t e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cannot query CUDA device ") + std::to_string(device) + ": " + cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }
  int prev = 0;
  cudaGetDevice(&prev);
  if (prev != device) cudaSetDevice(device);
  cudaFuncAttributes attr{};
  e = cudaFuncGetAttributes(&attr, probe_kernel);
  if (prev != device) cudaSetDevice(prev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) {
      *why = std::string("GPU ") + std::to_string(device) + " (" + prop.name + ") is sm_" + std::to_string(prop.major) +
             std::to_string(prop.minor) + ", but this sg2 was built for compute capabilities " + kArchList + " (" +
             cudaGetErrorString(e) + ")";
    }
    if (hint)
      *hint = "rebuild with -DSG2_CUDA_ARCHITECTURES=" + std::to_string(prop.major) + std::to_string(prop.minor);
    return false;
  }
  return true;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return "?";
  }
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs, " + std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
}

}  // namespace cuda

int cuda_device_count(std::string* why, std::string* hint) {
  try {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
      cudaGetLastError();
      if (why) {
        int driver = 0, runtime = 0;
        if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;  // 0 also means: no driver installed
        if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
        cudaGetLastError();
        *why = cuda_unavailable_reason(static_cast<int>(e), cudaGetErrorString(e), driver, runtime);
      }
      return 0;
    }
    // Devices are usable when this build has code for them; report the first problem.
    int usable = 0;
    std::string first_problem, first_hint;
    for (int d = 0; d < n; ++d) {
      std::string w, h;
      if (cuda::device_usable(d, &w, &h)) {
        ++usable;
      } else if (first_problem.empty()) {
        first_problem = w;
        first_hint = h;
      }
    }
    if (usable == 0 && why) *why = first_problem;
    if (usable == 0 && hint) *hint = first_hint;
    detail::trace_step("cuda: driver up, every GPU's context made");
    return usable == n ? n : usable;
  } catch (...) {
    if (why) *why = "querying CUDA devices failed";
    return 0;
  }
}

void cuda_warm_up(int device) {
  // On a thread of its own, so that the caller's current device stays as it was (setting it back
  // would make that device's context too)
  try {
    std::thread([device] {
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess || device < 0 || device >= count) {
        cudaGetLastError();
        return;
      }
      if (cudaSetDevice(device) == cudaSuccess) cudaFree(nullptr);  // makes the primary context
      cudaGetLastError();
      detail::trace_step("cuda: driver up, one GPU's context made");
    }).join();
  } catch (const std::system_error&) {  // no thread to be had: the generator starts the context itself
  }
}

}  // namespace sg2
