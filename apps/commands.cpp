// sg2 CLI: command table and error handling (commands.h).
#include "commands.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "sg2/error.h"

namespace sg2::cli {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> table;
  return table;
}
}  // namespace

bool register_command(const Command& c) {
  registry().push_back(c);
  return true;
}

std::vector<Command> commands() {
  std::vector<Command> v = registry();
  std::stable_sort(v.begin(), v.end(), [](const Command& a, const Command& b) { return a.order < b.order; });
  return v;
}

int finish_stdout(const std::string& who, int status) {
  // A full disk or a closed pipe behind stdout (`sg2 inspect --json M > out.json`) must not end in
  // exit 0 with a cut file: flush now and check, once for the whole run.
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!failed) return status;
  const int e = errno;
  std::cerr << who << ": error: cannot write to standard output" << (e != 0 ? ": " : "")
            << (e != 0 ? std::strerror(e) : "") << "\n";
  return status == 0 ? 1 : status;
}

static int run_command(const Command& c, int argc, char** argv) {
  try {
    return c.run(argc, argv);
  } catch (const sg2::Error& e) {
    std::cerr << "sg2 " << c.name << ": error: " << e.what() << "\n";
    return e.kind() == ErrorKind::invalid_argument ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "sg2 " << c.name << ": error: out of host memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "sg2 " << c.name << ": error: " << e.what() << "\n";
    return 1;
  }
}

int run_guarded(const Command& c, int argc, char** argv) {
  return finish_stdout(std::string("sg2 ") + c.name, run_command(c, argc, argv));
}

}  // namespace sg2::cli
