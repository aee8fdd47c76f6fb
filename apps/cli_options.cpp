// sg2 CLI: the option parser (cli_options.h) over cxxopts, the one file of the CLI that includes it.
#include "cli_options.h"

#include <algorithm>
// cxxopts' own parser of arguments and option names instead of std::regex (the same syntax for
// every option sg2 declares): the regex version takes twice as long to compile.
#define CXXOPTS_NO_REGEX 1
#include <cxxopts.hpp>
#include <utility>

#include "sg2/error.h"
#include "sg2/text.h"

namespace sg2::cli {

namespace {

enum class Kind { value, repeatable, flag };

struct Decl {
  std::string names, long_name, help, value_name, group;
  std::optional<std::string> default_value;
  Kind kind = Kind::value;
};

std::string long_name_of(const std::string& names) {
  const size_t comma = names.find(',');
  return comma == std::string::npos ? names : names.substr(comma + 1);
}

/// "--name", or "-n" for a one-letter (short) name.
std::string dashed(const std::string& name) { return (name.size() == 1 ? "-" : "--") + name; }

/// cxxopts quotes with U+2018/U+2019: plain quotes, so that escaping keeps the message readable.
std::string plain_quotes(std::string what) {
  for (const char* q : {"\xe2\x80\x98", "\xe2\x80\x99"})
    for (size_t p = what.find(q); p != std::string::npos; p = what.find(q)) what.replace(p, 3, "'");
  return what;
}

/// The text between the first pair of quotes of a cxxopts message ("Option 'x' does not exist").
std::string quoted_name(const std::string& message) {
  const size_t a = message.find('\'');
  const size_t b = a == std::string::npos ? a : message.find('\'', a + 1);
  return b == std::string::npos ? std::string() : message.substr(a + 1, b - a - 1);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closest_options(const std::string& given, const std::vector<std::string>& known) {
  std::vector<std::pair<size_t, std::string>> prefix, near;
  for (const std::string& k : known) {
    if (k == given) continue;
    const size_t common = std::min(given.size(), k.size());
    if (common >= 3 && given.compare(0, common, k, 0, common) == 0) {
      prefix.push_back({std::max(given.size(), k.size()) - common, k});
      continue;
    }
    const size_t d = edit_distance(given, k);
    if (d <= (std::min(given.size(), k.size()) <= 4 ? 1u : 2u)) near.push_back({d, k});
  }
  std::vector<std::pair<size_t, std::string>>& pick = prefix.empty() ? near : prefix;
  std::stable_sort(pick.begin(), pick.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < pick.size() && i < 3; ++i) out.push_back(pick[i].second);
  return out;
}

struct Options::Impl {
  std::string program, description, positional_usage, group;
  int width = 100;
  bool positional = false;
  std::vector<Decl> decls;

  cxxopts::Options build() const {
    cxxopts::Options o(program, description);
    o.set_width(static_cast<size_t>(width));
    if (positional) o.custom_help("[OPTION...] " + positional_usage);  // (positional_help needs a positional option)
    for (const Decl& d : decls) {
      auto adder = o.add_options(d.group);
      if (d.kind == Kind::flag) {
        adder(d.names, d.help);
      } else {
        auto v = cxxopts::value<std::string>();
        if (d.default_value) v->default_value(*d.default_value);
        adder(d.names, d.help, v, d.value_name);
      }
    }
    return o;
  }

  void add(Decl d) {
    d.long_name = long_name_of(d.names);
    d.group = group;
    decls.push_back(std::move(d));
  }
};

Options::Options(const std::string& program, const std::string& description, int width)
    : impl_(std::make_unique<Impl>()) {
  impl_->program = program;
  impl_->description = description;
  impl_->width = width;
  flag("h,help", "show this help");
}

Options::~Options() = default;
Options::Options(Options&&) noexcept = default;
Options& Options::operator=(Options&&) noexcept = default;

Options& Options::option(const std::string& names, const std::string& help, const std::string& value_name,
                         std::optional<std::string> default_value) {
  Decl d;
  d.names = names;
  d.help = help;
  d.value_name = value_name;
  d.default_value = std::move(default_value);
  impl_->add(std::move(d));
  return *this;
}

Options& Options::repeatable(const std::string& names, const std::string& help, const std::string& value_name) {
  option(names, help, value_name);
  impl_->decls.back().kind = Kind::repeatable;
  return *this;
}

Options& Options::flag(const std::string& names, const std::string& help) {
  Decl d;
  d.names = names;
  d.help = help;
  d.kind = Kind::flag;
  impl_->add(std::move(d));
  return *this;
}

Options& Options::group(const std::string& name) {
  impl_->group = name;
  return *this;
}

Options& Options::positional(const std::string& usage) {
  impl_->positional = true;
  impl_->positional_usage = usage;
  return *this;
}

const std::string& Options::program() const { return impl_->program; }

std::string Options::help() const { return impl_->build().help(); }

Args Options::parse(int argc, char** argv) const {
  const std::string see = " (see " + impl_->program + " --help)";
  cxxopts::Options o = impl_->build();
  Args args;
  try {
    const cxxopts::ParseResult r = o.parse(argc, argv);
    for (const Decl& d : impl_->decls) {
      Args::Value v;
      v.name = d.long_name;
      if (d.kind != Kind::flag) v.default_value = d.default_value;
      args.values_.push_back(std::move(v));
    }
    for (const cxxopts::KeyValue& kv : r.arguments())
      for (Args::Value& v : args.values_)
        if (v.name == kv.key()) v.given.push_back(kv.value());
    args.positional_ = r.unmatched();
  } catch (const cxxopts::exceptions::no_such_option& e) {
    const std::string name = quoted_name(plain_quotes(e.what()));
    std::vector<std::string> known;
    for (const Decl& d : impl_->decls) known.push_back(d.long_name);
    const std::vector<std::string> near = name.size() > 1 ? closest_options(name, known) : std::vector<std::string>();
    std::string hint;
    for (size_t i = 0; i < near.size(); ++i)
      hint += (i == 0 ? "; did you mean " : i + 1 == near.size() ? " or " : ", ") + dashed(near[i]);
    if (!hint.empty()) hint += "?";
    fail(ErrorKind::invalid_argument, "unknown option ", printable(dashed(name), 80), hint, see);
  } catch (const cxxopts::exceptions::exception& e) {
    fail(ErrorKind::invalid_argument, printable(plain_quotes(e.what()), 200), see);
  }
  for (const Decl& d : impl_->decls) {
    const Args::Value* v = args.find(d.long_name);
    if (d.kind == Kind::repeatable || v == nullptr || v->given.size() < 2) continue;
    std::string values;
    if (d.kind != Kind::flag)
      for (size_t i = 0; i < v->given.size() && i < 4; ++i)
        values += (i ? ", '" : " ('") + printable(v->given[i], 40) + "'" + (i + 1 == v->given.size() ? ")" : "");
    if (d.kind != Kind::flag && v->given.size() > 4) values += ", ...)";
    fail(ErrorKind::invalid_argument, dashed(d.long_name), " is given ", v->given.size(), " times", values,
         ": give it once", see);
  }
  if (!impl_->positional && !args.positional_.empty())
    fail(ErrorKind::invalid_argument, "unexpected argument '", printable(args.positional_.front()), "'", see);
  return args;
}

Args::Args() = default;
Args::~Args() = default;
Args::Args(Args&&) noexcept = default;
Args& Args::operator=(Args&&) noexcept = default;

const Args::Value* Args::find(const std::string& name) const {
  for (const Value& v : values_)
    if (v.name == name) return &v;
  return nullptr;
}

bool Args::has(const std::string& name) const {
  const Value* v = find(name);
  return v != nullptr && !v->given.empty();
}

int Args::count(const std::string& name) const {
  const Value* v = find(name);
  return v == nullptr ? 0 : static_cast<int>(v->given.size());
}

std::string Args::get(const std::string& name) const {
  const Value* v = find(name);
  if (v == nullptr) fail(ErrorKind::internal, "sg2 CLI: option --", name, " was never declared");
  if (!v->given.empty()) return v->given.back();
  return v->default_value.value_or(std::string());
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  const Value* v = find(name);
  return v == nullptr ? std::vector<std::string>() : v->given;
}

const std::vector<std::string>& Args::positional() const { return positional_; }

}  // namespace sg2::cli
