// SG2_TRACE (util/trace.h).
#include "util/trace.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sg2::detail {

namespace {
// seconds since the process started: CLOCK_BOOTTIME now, less the process's start time read from
// /proc/self/stat (clock ticks since boot, field 22); the first call's time when /proc is absent
double since_start() {
  static const double start = [] {
    double boot_s = -1;
    if (std::FILE* f = std::fopen("/proc/self/stat", "r")) {
      char buf[1024] = {};
      const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      buf[n] = 0;
      // the command name (field 2) may hold spaces and parentheses: count fields after the last ')'
      if (const char* p = std::strrchr(buf, ')')) {
        int field = 2;
        for (++p; *p && field < 22; ++p)
          if (*p == ' ') ++field;
        const long hz = sysconf(_SC_CLK_TCK);
        if (field == 22 && hz > 0) boot_s = std::strtod(p, nullptr) / double(hz);
      }
    }
    if (boot_s < 0) {
      timespec t{};
      clock_gettime(CLOCK_BOOTTIME, &t);
      boot_s = double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
    }
    return boot_s;
  }();
  timespec t{};
  clock_gettime(CLOCK_BOOTTIME, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec) - start;
}
}  // namespace

bool trace_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("SG2_TRACE");
    return e && std::strcmp(e, "1") == 0;
  }();
  return on;
}

void trace_step(const char* what) {
  if (!trace_enabled()) return;
  std::fprintf(stderr, "sg2 trace: %8.3f s  %s\n", since_start(), what);
}

}  // namespace sg2::detail
