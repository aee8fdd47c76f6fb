// sg2 util: the CPU thread count (cpu_threads.h).
#include "util/cpu_threads.h"

#include <sched.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "sg2/error.h"
#include "util/text_util.h"

namespace sg2::detail {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(h);
}

int cpu_thread_count(int requested) {
  if (requested < 0) fail(ErrorKind::invalid_argument, "CPU threads must be >= 1 (0 = every core), got ", requested);
  if (requested > kMaxCpuThreads)
    fail(ErrorKind::invalid_argument, "CPU threads ", requested, " is more than ", kMaxCpuThreads);
  if (requested > 0) return requested;
  if (const char* env = std::getenv("SG2_CPU_THREADS")) {
    const std::string s(env);
    if (!s.empty()) {  // unset or empty: every core
      if (s.size() <= 4 && s.find_first_not_of("0123456789") == std::string::npos) {
        const int n = std::stoi(s);
        if (n >= 1 && n <= kMaxCpuThreads) return n;
      }
      fail(ErrorKind::invalid_argument, "SG2_CPU_THREADS='", printable(s), "' is not a thread count in [1, ",
           kMaxCpuThreads, "] (unset it for every core)");
    }
  }
  return available_cores();
}

}  // namespace sg2::detail
