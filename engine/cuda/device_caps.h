// sg2 CUDA backend: what one GPU can do, probed once when a backend is created and passed to every
// choice that depends on it (recipe.h, conv.h): no kernel queries the device or caches per device.
#pragma once

#include <cudaTypedefs.h>

#include <cstddef>

namespace sg2::cuda {

struct DeviceCaps {
  int index = 0;                    ///< CUDA ordinal
  int cc_major = 0, cc_minor = 0;   ///< compute capability
  int sm_count = 0;                 ///< streaming multiprocessors
  size_t smem_per_block_optin = 0;  ///< cudaDevAttrMaxSharedMemoryPerBlockOptin (bytes)
  /// The Hopper 3xTF32 kernel runs here: an sm_90 GPU and this binary carries sm_90a code (probe launch).
  bool wgmma = false;
  /// The driver's cuTensorMapEncodeTiled (set where wgmma is).
  PFN_cuTensorMapEncodeTiled_v12000 encode_tensor_map = nullptr;

  /// Probes device `index` (which must be the current device). Call outside stream capture.
  /// Throws Error(device) on a CUDA failure.
  static DeviceCaps probe(int index);
};

}  // namespace sg2::cuda
