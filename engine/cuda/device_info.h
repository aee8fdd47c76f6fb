// sg2 CUDA backend: device checks (device.cu).
#pragma once

#include <string>

namespace sg2::cuda {

/// The compute capabilities this binary carries code for ("900" or "800,860,890,900").
const char* built_architectures();

/// True when `device` exists and this build has code that runs on it; otherwise false and the
/// reason (naming the SM and the built architectures) in `why`. Never throws.
bool device_usable(int device, std::string* why);

/// "NVIDIA H200 (sm_90, 132 SMs, 143771 MiB)".
std::string device_name(int device);

}  // namespace sg2::cuda
