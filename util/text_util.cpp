// sg2 internal: safe text for messages (text_util.h).
#include "util/text_util.h"

namespace sg2 {

std::string printable(std::string_view text, size_t max_len) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace sg2

namespace sg2::detail {

std::string name_list(const std::vector<std::string>& items, size_t max_items, size_t max_len) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_items; ++i)
    out += (i ? ", '" : "'") + printable(items[i], max_len) + "'";
  if (items.size() > max_items) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

}  // namespace sg2::detail
