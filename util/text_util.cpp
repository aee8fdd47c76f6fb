// sg2 internal: safe text for messages (text_util.h).
#include "util/text_util.h"

#include <cmath>
#include <cstdio>

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

std::string byte_size(int64_t bytes) {
  char buf[32];
  if (bytes >= (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(int64_t(1) << 30));
  else if (bytes >= (1 << 20))
    std::snprintf(buf, sizeof buf, "%.0f MiB", std::ceil(double(bytes) / double(1 << 20)));
  else
    std::snprintf(buf, sizeof buf, "%.0f KiB", std::ceil(double(bytes) / 1024.0));
  return buf;
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
