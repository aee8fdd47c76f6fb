// sg2 CPU reference: the worker count of parallel_for (parallel.h).
#include "kernels/ref/parallel.h"

#include <cstdlib>
#include <thread>

namespace sg2::ref {

int cpu_threads() {
  static const int n = [] {
    const char* env = std::getenv("SG2_CPU_THREADS");
    if (env != nullptr && std::atoi(env) > 0) return std::atoi(env);
    const unsigned h = std::thread::hardware_concurrency();
    return h == 0 ? 1 : static_cast<int>(h);
  }();
  return n;
}

}  // namespace sg2::ref
