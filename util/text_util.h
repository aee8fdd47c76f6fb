// sg2 internal: text that comes from files, made safe for one-line messages and terminals.
//
// Anything read from a file (a tensor name, a metadata value, a number's digits) may hold
// terminal escape sequences, newlines that forge output lines, or megabytes of text. Every such
// piece goes through printable() (escaped and cut) before it reaches a message or a terminal;
// lists are cut by name_list() to their first few items and a count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sg2/text.h"

namespace sg2::detail {

/// sg2::printable and sg2::byte_size (sg2/text.h, public so that the CLI words messages the same way).
using ::sg2::byte_size;
using ::sg2::printable;

/// The first `max_items` of `items`, each printable() and quoted, comma separated, then
/// ", ... (N in all)" when there are more: "'a', 'b', 'c', ... (100000 in all)".
std::string name_list(const std::vector<std::string>& items, size_t max_items = 5, size_t max_len = 60);

}  // namespace sg2::detail
