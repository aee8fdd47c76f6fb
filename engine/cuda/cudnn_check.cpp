// sg2 CUDA backend: cuDNN error translation (cudnn_check.h).
#include "engine/cuda/cudnn_check.h"

#include <cudnn.h>

namespace sg2::cuda {

void throw_cudnn_error(int status, const char* what, const char* file, int line) {
  const auto st = static_cast<cudnnStatus_t>(status);
  if (st == CUDNN_STATUS_ALLOC_FAILED)
    fail(ErrorKind::out_of_memory, "cuDNN could not allocate memory in ", what, " (", source_location(file, line), ")");
  fail(ErrorKind::device, "cuDNN error in ", what, " (", source_location(file, line), "): ", cudnnGetErrorString(st));
}

}  // namespace sg2::cuda
