// sg2 CUDA kernels: programmatic dependent launch (Hopper's griddepcontrol), which lets a kernel's
// launch overlap the tail of the one before it in the stream (and in the CUDA graph captured from
// it). Every sg2 kernel starts with pdl_begin() and every launch goes through launch(), so:
//  * a kernel waits, before its first memory access, until the kernel before it has completed and
//    its writes are visible (griddepcontrol.wait); what that kernel waited for had completed
//    before it, so every earlier kernel's writes are visible too;
//  * it never triggers the next launch early: the next grid launches as this one's blocks exit
//    (the implicit trigger), overlapping its launch with this one's last blocks and memory flush.
// On GPUs before sm_90 both are absent and the launch attribute has no effect: stream order as
// before. Nothing changes which values a kernel reads, so no output changes a bit.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "kernels/cuda_check.h"

namespace sg2::cuda::dev {

/// The first statement of every sg2 kernel (see above).
__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/// kernel<<<grid, block, smem, stream>>>(args...) with programmatic stream serialization allowed
/// (the kernel must start with pdl_begin()); throws Error(device) naming `name` when the launch fails.
template <typename... Params, typename... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // the launch's error is reported here, not by a later check
    throw_cuda_error(err, (std::string("launch of ") + name).c_str(), __FILE__, __LINE__);
  }
}

}  // namespace sg2::cuda::dev
