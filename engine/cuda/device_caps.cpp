// sg2 CUDA backend: probing a GPU's capabilities (device_caps.h).
#include "engine/cuda/device_caps.h"

#include <cuda_runtime_api.h>

#include "kernels/cuda_check.h"
#include "kernels/tc_conv.h"

namespace sg2::cuda {

DeviceCaps DeviceCaps::probe(int index) {
  DeviceCaps c;
  c.index = index;
  int smem = 0;
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&c.cc_major, cudaDevAttrComputeCapabilityMajor, index));
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&c.cc_minor, cudaDevAttrComputeCapabilityMinor, index));
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&c.sm_count, cudaDevAttrMultiProcessorCount, index));
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, index));
  c.smem_per_block_optin = static_cast<size_t>(smem);
  c.wgmma = tc_conv_wgmma_probe();
  if (c.wgmma) c.encode_tensor_map = tc_conv_tensor_map_encoder();
  return c;
}

}  // namespace sg2::cuda
