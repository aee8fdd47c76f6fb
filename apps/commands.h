// sg2 CLI: the registry of subcommands and the shared error handling.
//
// Each subcommand lives in its own file and registers itself:
//   static int run_generate(int argc, char** argv);
//   SG2_COMMAND(generate, 10, "images from seeds", run_generate);
#pragma once

#include <string>
#include <vector>

#include "sg2/error.h"

namespace sg2::cli {

/// One subcommand: `sg2 <name> ...`; run() receives argv starting at the command name and
/// returns the process exit code.
struct Command {
  const char* name;
  int order;  ///< position in `sg2 --help`
  const char* summary;
  int (*run)(int argc, char** argv);
};

/// Every registered subcommand, sorted by order.
std::vector<Command> commands();

/// Adds a command to the registry (used by SG2_COMMAND at static-initialisation time).
bool register_command(const Command& c);

/// Runs a command, turning sg2::Error and other exceptions into a message on stderr and an exit
/// code (2 for invalid arguments, 1 for every other failure): "sg2 <command>: error: <message>",
/// then, when the error has a hint, "sg2 <command>: hint: <hint>" (print_error).
int run_guarded(const Command& c, int argc, char** argv);

/// `text` with every byte that is not printable ASCII (control characters, ESC, newlines,
/// non-ASCII) written as \xNN, so that a message cannot move the cursor, set the terminal's title
/// or forge a line; unlike sg2::printable it leaves backslashes alone (text escaped already stays
/// as it is) and never cuts.
std::string terminal_safe(const std::string& text);

/// Prints `e` as run_guarded does: the error line, and the hint line when there is a hint.
void print_error(const std::string& command, const Error& e);

/// Flushes stdout and checks that everything written to it arrived; if not, prints "<who>: error:
/// cannot write to standard output: <reason>" and returns 1 (or `status` when it is an error
/// already). Returns `status` otherwise.
int finish_stdout(const std::string& who, int status);

}  // namespace sg2::cli

#define SG2_COMMAND(name, order, summary, fn) \
  static const bool sg2_registered_##name = ::sg2::cli::register_command({#name, order, summary, fn})
