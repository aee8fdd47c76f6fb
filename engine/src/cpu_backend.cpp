// sg2: the CPU reference backend (in progress).
#include "backend.h"
#include "sg2/error.h"

namespace sg2 {
std::unique_ptr<Backend> make_cpu_backend(const Model&, Precision) {
  fail(ErrorKind::internal, "the CPU backend is not built yet");
}
}  // namespace sg2
