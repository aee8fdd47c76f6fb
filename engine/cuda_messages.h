// sg2 internal: why no CUDA device can be used, in words a user can act on. Host code without CUDA
// headers (compiled in every build), so that the wording is unit-tested on machines without a GPU.
#pragma once

#include <string>

namespace sg2 {

/// The cudaError_t values this wording distinguishes (CUDA runtime API; device.cu checks them
/// against cuda_runtime.h at compile time).
namespace cuda_status {
constexpr int success = 0;
constexpr int initialization_error = 3;      ///< cudaErrorInitializationError
constexpr int insufficient_driver = 35;      ///< cudaErrorInsufficientDriver
constexpr int no_device = 100;               ///< cudaErrorNoDevice
constexpr int system_driver_mismatch = 803;  ///< cudaErrorSystemDriverMismatch
}  // namespace cuda_status

/// "12.4" from a CUDA version number (12040).
std::string cuda_version_text(int version);

/// Why cudaGetDeviceCount found nothing usable: `error` is its status (success with a count of 0
/// means no device), `error_text` cudaGetErrorString's text for it, `driver_version` what
/// cudaDriverGetVersion gave (0: no NVIDIA driver is installed) and `runtime_version` this build's
/// runtime (cudaRuntimeGetVersion). Without a driver the runtime answers "driver version is
/// insufficient", which would send a user to update a driver that is not there: the driver
/// version tells the two apart. One clause, no trailing period, no CLI hint.
std::string cuda_unavailable_reason(int error, const std::string& error_text, int driver_version, int runtime_version);

}  // namespace sg2
