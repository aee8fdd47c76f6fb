// sg2 CLI: command table and error handling (commands.h).
#include "commands.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "cli_util.h"
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

std::string terminal_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (u >= 0x20 && u < 0x7f) {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

void print_error(const std::string& command, const Error& e) {
  std::cerr << "sg2 " << command << ": error: " << terminal_safe(e.message()) << "\n";
  const std::string hint = e.hint();
  if (!hint.empty()) std::cerr << "sg2 " << command << ": hint: " << terminal_safe(hint) << "\n";
}

static int run_command(const Command& c, int argc, char** argv) {
  set_interrupt_command(c.name);
  try {
    return c.run(argc, argv);
  } catch (const sg2::Error& e) {
    print_error(c.name, e);
    return e.kind() == ErrorKind::invalid_argument ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "sg2 " << c.name << ": error: out of host memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "sg2 " << c.name << ": error: " << terminal_safe(e.what()) << "\n";
    return 1;
  }
}

int run_guarded(const Command& c, int argc, char** argv) {
  return finish_stdout(std::string("sg2 ") + c.name, run_command(c, argc, argv));
}

}  // namespace sg2::cli
