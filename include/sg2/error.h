// sg2: the one exception type of the library.
//
// Library code never aborts or exits: every failure is thrown as sg2::Error, whose message says
// what failed and where (file, tensor, layer), and whose hint, where there is one, says what to do
// ("decompress it first"). Programs show the two apart (the sg2 CLI prints the hint on a line of
// its own) or print what(): the message and "; hint: <hint>", on one line.
#pragma once

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// What kind of failure an Error reports. Stable: the C ABI and the CLI's exit codes map these.
enum class ErrorKind {
  invalid_argument,  ///< a caller passed a bad value (seed out of range, bad shape, psi NaN, ...)
  bad_file,          ///< a file is corrupt, truncated, or not what it claims to be
  unsupported,       ///< a well-formed input sg2 does not support (StyleGAN3 networks, ...)
  io,                ///< the operating system refused (cannot open, cannot write, disk full)
  device,            ///< CUDA / cuBLAS / cuDNN failure, no GPU, wrong architecture
  out_of_memory,     ///< host or device allocation failed
  internal,          ///< a broken invariant inside sg2 (a bug: please report it)
};

/// Returns a short lowercase name of the kind ("bad_file", ...).
const char* to_string(ErrorKind kind);

/// The exception thrown by every sg2 function.
class Error : public std::runtime_error {
 public:
  /// `message`: one line, what failed and where. `hint`: one line, what the user can do about it
  /// ("" for none); it names the API's terms ("pass a model path"), which a program may replace
  /// with its own (with_hint).
  Error(ErrorKind kind, const std::string& message, const std::string& hint = std::string())
      : std::runtime_error(hint.empty() ? message : message + kHintSeparator + hint),
        kind_(kind),
        message_size_(message.size()) {}
  ErrorKind kind() const noexcept { return kind_; }
  /// The message without the hint.
  std::string message() const { return std::string(what(), message_size_); }
  /// What to do about it; "" when there is no advice.
  std::string hint() const {
    const std::string all = what();
    return all.size() > message_size_ ? all.substr(message_size_ + sizeof(kHintSeparator) - 1) : std::string();
  }
  /// The same error with `hint` as its hint ("" removes it).
  Error with_hint(const std::string& hint) const { return Error(kind_, message(), hint); }
  /// The same error with `message` as its message and the hint kept.
  Error with_message(const std::string& message) const { return Error(kind_, message, hint()); }

  /// What what() puts between the message and the hint.
  static constexpr const char kHintSeparator[] = "; hint: ";

 private:
  ErrorKind kind_;
  size_t message_size_;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

/// Throws Error(kind, concatenation of args). Use: `fail(ErrorKind::bad_file, path, ": truncated")`.
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, Args&&... args) {
  throw Error(kind, detail::concat(std::forward<Args>(args)...));
}

/// Throws Error(kind, concatenation of args, hint). Use:
/// `fail_hint(ErrorKind::bad_file, "decompress it first", path, ": a gzip-compressed file")`.
template <typename... Args>
[[noreturn]] void fail_hint(ErrorKind kind, const std::string& hint, Args&&... args) {
  throw Error(kind, detail::concat(std::forward<Args>(args)...), hint);
}

}  // namespace sg2
SG2_PUBLIC_END
