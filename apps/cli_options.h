// sg2 CLI: the option parser of every subcommand, a small facade over cxxopts (which only
// cli_options.cpp includes, so that the command files compile in a fraction of the time).
//
// Every option is string-valued (sg2's strict parsers in cli_util.h read the numbers), a flag, or
// a positional argument:
//   cli::Options opts("sg2 generate", "Generates images ...");    // -h/--help already added
//   opts.option("seeds", "seeds: ranges and lists", "LIST");       // --seeds LIST
//   opts.option("trunc", "truncation psi", "PSI", "1");            // with a default
//   opts.flag("q,quiet", "no progress bar");                       // -q / --quiet
//   opts.positional("FILE");                                       // positional arguments allowed
//   cli::Args args = opts.parse(argc, argv);
//   if (args.has("trunc")) ... args.get("trunc") ... args.positional()
//
// Usage errors are Error(invalid_argument) (exit 2), one line, ending "(see sg2 <command> --help)":
// an unknown option (with "did you mean --seeds?" when a known one is close: a prefix of it, or
// an edit distance of at most 2), a missing value, a flag given a value, a stray positional
// argument, and an option given more than once (unless it was declared repeatable: then every
// value is kept, in order, and get_all returns them).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sg2::cli {

class Args;

/// The options of one program or subcommand, and its --help text.
class Options {
 public:
  /// `program` ("sg2 generate") heads the usage line; the description follows it in --help,
  /// wrapped to `width` columns. -h/--help is added.
  Options(const std::string& program, const std::string& description, int width = 100);
  ~Options();
  Options(Options&&) noexcept;
  Options& operator=(Options&&) noexcept;

  /// An option with a value: `names` is "name" or "s,name" (a one-letter short form); `value_name`
  /// is what --help shows ("--seeds LIST"); `default_value`, when given, is what get() returns when
  /// the option is absent (has() stays false) and --help shows it.
  Options& option(const std::string& names, const std::string& help, const std::string& value_name,
                  std::optional<std::string> default_value = std::nullopt);
  /// An option that may be given more than once; get_all() returns every value in order.
  Options& repeatable(const std::string& names, const std::string& help, const std::string& value_name);
  /// A flag without a value.
  Options& flag(const std::string& names, const std::string& help);
  /// The --help section of the options added after this call ("" = the default section).
  Options& group(const std::string& name);
  /// Allows positional arguments (Args::positional()); `usage` is shown after the program name in
  /// the usage line ("IN OUT.safetensors").
  Options& positional(const std::string& usage);

  /// Parses argv (argv[0] is the command name); throws the usage errors above.
  Args parse(int argc, char** argv) const;
  /// The --help text (cxxopts' layout).
  std::string help() const;
  const std::string& program() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The parsed command line: values by long option name (without dashes).
class Args {
 public:
  Args();
  ~Args();
  Args(Args&&) noexcept;
  Args& operator=(Args&&) noexcept;

  /// True when the option was given on the command line (a default does not count).
  bool has(const std::string& name) const;
  /// How many times the option was given (more than 1 only for repeatable options).
  int count(const std::string& name) const;
  /// The value given, else the default, else "".
  std::string get(const std::string& name) const;
  /// Every value of a repeatable option, in order (empty when absent).
  std::vector<std::string> get_all(const std::string& name) const;
  /// The positional arguments, in order.
  const std::vector<std::string>& positional() const;
  /// True when -h/--help was given.
  bool help() const { return has("help"); }

 private:
  friend class Options;
  struct Value {
    std::string name;
    std::vector<std::string> given;
    std::optional<std::string> default_value;
  };
  std::vector<Value> values_;
  std::vector<std::string> positional_;
  const Value* find(const std::string& name) const;
};

/// The option names of `known` closest to `given` (an unknown option, without dashes): those
/// that start with it or that it starts with (at least 3 characters in common), else those at
/// edit distance <= 2 (<= 1 for names of 4 characters or fewer); at most 3, closest first.
std::vector<std::string> closest_options(const std::string& given, const std::vector<std::string>& known);

}  // namespace sg2::cli
