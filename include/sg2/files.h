// sg2: writing a file whole or not at all, as every writer of sg2 does.
#pragma once

#include <cstddef>
#include <string>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// Writes `size` bytes to `path` through a temporary file beside it that is flushed and renamed
/// into place (and removed on an interrupt, sg2/interrupt.h), so `path` is the whole new file or
/// untouched. Throws Error(io) naming `path` (cannot create, disk full, ...).
void write_file_atomically(const std::string& path, const void* data, size_t size);

}  // namespace sg2
SG2_PUBLIC_END
