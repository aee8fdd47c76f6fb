// sg2: text that comes from files or the file system (a tensor name, a metadata value, a file
// name), made safe for one-line messages and terminals.
//
// Such text may hold terminal escape sequences, newlines that forge output lines, or megabytes of
// text. Every such piece goes through printable() (escaped and cut) before it reaches a message
// or a terminal: the library's own messages do, and so does the CLI for the file names it prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// `text` made safe for a one-line message: printable ASCII kept, a backslash and every other
/// byte (control characters, ESC, newlines, non-ASCII) written as \xNN, cut to `max_len`
/// characters with "..." appended.
std::string printable(std::string_view text, size_t max_len = 60);

/// A byte count for messages: "1.5 GiB" (from 1 GiB, one decimal), "12 MiB", "3 KiB" (rounded up).
std::string byte_size(int64_t bytes);

}  // namespace sg2
SG2_PUBLIC_END
