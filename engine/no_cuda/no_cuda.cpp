// sg2: the CUDA entry points of a build without the CUDA backend (-DSG2_CUDA=OFF).
#include "engine/backend.h"
#include "sg2/error.h"

namespace sg2 {

int cuda_device_count(std::string* why) {
  if (why)
    *why =
        "this sg2 was built without the CUDA backend (configured with SG2_CUDA=OFF, or no CUDA compiler was found "
        "when it was configured)";
  return 0;
}

std::unique_ptr<Backend> make_cuda_backend(const Model&, int, Precision, bool) {
  fail(ErrorKind::device,
       "this sg2 was built without the CUDA backend (configured with SG2_CUDA=OFF, or no CUDA compiler was found "
       "when it was configured). HINT: rebuild with SG2_CUDA=ON scripts/build.sh (it needs nvcc, cuBLAS and cuDNN; "
       "a GPU is needed only to run it)");
}

}  // namespace sg2
