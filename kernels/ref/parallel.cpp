// sg2 CPU reference: the worker count of parallel_for (parallel.h).
#include "kernels/ref/parallel.h"

#include "util/cpu_threads.h"

namespace sg2::ref {

int cpu_threads() {
  static const int n = detail::cpu_thread_count(0);  // SG2_CPU_THREADS, checked once, or every core
  return n;
}

}  // namespace sg2::ref
