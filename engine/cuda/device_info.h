// sg2 CUDA backend: device checks (device.cu).
#pragma once

#include <string>

namespace sg2::cuda {

/// The compute capabilities this binary carries code for ("900" or "800,860,890,900").
const char* built_architectures();

/// True when `device` exists and this build has code that runs on it; otherwise false, the
/// reason (naming the SM and the built architectures) in `why` and, for an architecture not
/// built, the rebuild to make in `hint`. Never throws.
bool device_usable(int device, std::string* why, std::string* hint = nullptr);

/// "NVIDIA H200 (sm_90, 132 SMs, 143771 MiB)".
std::string device_name(int device);

}  // namespace sg2::cuda
