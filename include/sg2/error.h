// sg2: the one exception type of the library.
//
// Library code never aborts or exits: every failure is thrown as sg2::Error, whose message says
// what failed, where (file, tensor, layer) and, where there is one, what to do ("HINT: ...").
#pragma once

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
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
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

}  // namespace sg2
SG2_PUBLIC_END
