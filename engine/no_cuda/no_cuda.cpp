// sg2: the CUDA entry points of a build without the CUDA backend (-DSG2_CUDA=OFF).
#include "engine/backend.h"
#include "sg2/error.h"

namespace sg2 {

namespace {
constexpr const char* kRebuild = "rebuild sg2 with the CUDA toolkit installed (SG2_CUDA=ON)";
}

int cuda_device_count(std::string* why, std::string* hint) {
  if (why) *why = "this sg2 was built without the CUDA backend (configured with SG2_CUDA=OFF)";
  if (hint) *hint = kRebuild;
  return 0;
}

std::unique_ptr<Backend> make_cuda_backend(const Model&, int, Precision, bool) {
  throw Error(ErrorKind::device, "this sg2 was built without the CUDA backend", kRebuild);
}

}  // namespace sg2
