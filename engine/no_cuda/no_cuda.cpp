// sg2: the CUDA entry points of a build without the CUDA backend (-DSG2_CUDA=OFF).
#include "engine/backend.h"
#include "sg2/error.h"

namespace sg2 {

namespace {
constexpr const char* kRebuild =
    "rebuild with SG2_CUDA=ON scripts/build.sh (it needs nvcc, cuBLAS and cuDNN; a GPU is needed only to run it)";
constexpr const char* kWhy =
    "this sg2 was built without the CUDA backend (configured with SG2_CUDA=OFF, or no CUDA compiler was found when "
    "it was configured)";
}  // namespace

int cuda_device_count(std::string* why, std::string* hint) {
  if (why) *why = kWhy;
  if (hint) *hint = kRebuild;
  return 0;
}

void cuda_warm_up(int) {}

std::unique_ptr<Backend> make_cuda_backend(const Model&, int, Precision, bool) {
  throw Error(ErrorKind::device, kWhy, kRebuild);
}

}  // namespace sg2
