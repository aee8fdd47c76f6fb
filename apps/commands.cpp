// sg2 CLI: command table and error handling (commands.h).
#include "commands.h"

#include <algorithm>
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

int run_guarded(const Command& c, int argc, char** argv) {
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

}  // namespace sg2::cli
