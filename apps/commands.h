// sg2 CLI: the table of subcommands and the shared error handling.
#pragma once

#include <vector>

namespace sg2::cli {

/// One subcommand: `sg2 <name> ...`; run() receives argv starting at the command name and
/// returns the process exit code.
struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

/// Every subcommand, in the order `sg2 --help` lists them.
const std::vector<Command>& commands();

/// Runs a command, turning sg2::Error and other exceptions into a one-line message on stderr
/// and an exit code (1 for failures, 2 for usage errors).
int run_guarded(const Command& c, int argc, char** argv);

}  // namespace sg2::cli
