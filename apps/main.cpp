// sg2 command-line tool: dispatches `sg2 <command> ...` to one function per subcommand.
#include <cstring>
#include <iostream>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "sg2/error.h"
#include "sg2/interrupt.h"
#include "sg2/model.h"
#include "sg2/text.h"

namespace {

void print_usage(std::ostream& os) {
  os << "sg2 " << sg2::version() << ": StyleGAN2 inference without Python\n\n"
     << "usage: sg2 <command> [options]     (sg2 <command> --help or sg2 help <command> for its "
        "options)\n\ncommands:\n";
  for (const sg2::cli::Command& c : sg2::cli::commands())
    os << "  " << c.name << std::string(12 - std::strlen(c.name), ' ') << c.summary << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  // An interrupted run leaves no temporary files, nor the empty folders it made, and says so.
  static std::string who = "sg2";
  if (argc >= 2)
    for (const sg2::cli::Command& c : sg2::cli::commands())
      if (std::strcmp(argv[1], c.name) == 0) who = std::string("sg2 ") + c.name;
  sg2::install_interrupt_cleanup(who.c_str());
  sg2::cli::install_cli_interrupt_report();
  if (argc < 2) {
    print_usage(std::cerr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "help" && argc >= 3) {  // `sg2 help generate` = `sg2 generate --help`
    const std::string topic = argv[2];
    for (const sg2::cli::Command& c : sg2::cli::commands()) {
      if (topic != c.name) continue;
      char help_flag[] = "--help";
      char* sub_argv[] = {argv[2], help_flag, nullptr};
      return sg2::cli::run_guarded(c, 2, sub_argv);
    }
    std::cerr << "sg2 help: error: unknown command '" << sg2::printable(topic) << "' (sg2 --help lists the commands)\n";
    return 2;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_usage(std::cout);
    return sg2::cli::finish_stdout("sg2", 0);
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "sg2 " << sg2::version() << "\n";
    return sg2::cli::finish_stdout("sg2", 0);
  }
  for (const sg2::cli::Command& c : sg2::cli::commands()) {
    if (cmd == c.name) return sg2::cli::run_guarded(c, argc - 1, argv + 1);
  }
  std::cerr << "sg2: error: unknown command '" << sg2::printable(cmd) << "' (sg2 --help lists the commands)\n";
  return 2;
}
