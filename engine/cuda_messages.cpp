// sg2: wording of CUDA availability failures (cuda_messages.h).
#include "engine/cuda_messages.h"

namespace sg2 {

std::string cuda_version_text(int v) {
  if (v <= 0) return "?";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string cuda_unavailable_reason(int error, const std::string& error_text, int driver_version, int runtime_version) {
  const std::string runtime = "CUDA " + cuda_version_text(runtime_version);
  if (driver_version <= 0)
    return "no NVIDIA driver was found (the CUDA driver library libcuda is not installed), so no NVIDIA GPU can be "
           "used";
  const std::string driver = "the NVIDIA driver (CUDA " + cuda_version_text(driver_version) + ")";
  switch (error) {
    case cuda_status::success:
    case cuda_status::no_device:
      return "no CUDA-capable GPU was found (" + driver + " is installed, but it reports no device)";
    case cuda_status::insufficient_driver:
      return driver + " is older than this build's " + runtime + " runtime; update the driver";
    case cuda_status::system_driver_mismatch:
      return driver + " does not match the loaded kernel module (" + error_text + "); reboot, or reinstall the driver";
    default:
      return "CUDA could not be initialised: " + error_text + " (" + driver + ", " + runtime + " runtime)";
  }
}

}  // namespace sg2
