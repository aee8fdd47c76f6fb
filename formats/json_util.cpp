// sg2 internal: bounded JSON parsing (json_util.h).
#include "formats/json_util.h"

#include "sg2/error.h"
#include "util/text_util.h"

namespace sg2::detail {

using json = nlohmann::json;

namespace {

/// The first pass: nlohmann's SAX interface sees every token and builds nothing. It tracks the
/// nesting depth and an estimate of the memory the DOM will take (nlohmann's layout: 16 bytes
/// a value, a map node and the key text per object member, a container allocation per array or
/// object, the text of every string), and stops at the first limit crossed.
class Bounds : public nlohmann::json_sax<json> {
 public:
  explicit Bounds(const JsonLimits& limits) : lim_(limits) {}
  enum class Stop { none, depth, size, syntax, range };
  Stop stop = Stop::none;
  size_t error_byte = 0;

  bool null() override { return add(16); }
  bool boolean(bool) override { return add(16); }
  bool number_integer(number_integer_t) override { return add(16); }
  bool number_unsigned(number_unsigned_t) override { return add(16); }
  bool number_float(number_float_t, const string_t&) override { return add(16); }
  bool string(string_t& s) override { return add(48 + s.size()); }
  bool binary(binary_t& b) override { return add(48 + b.size()); }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t& k) override { return add(64 + k.size()); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    stop = e.id == 406 ? Stop::range : Stop::syntax;  // 406: a number beyond a double's range
    error_byte = position;
    return false;
  }

 private:
  bool add(uint64_t bytes) {
    used_ += bytes;
    if (used_ <= lim_.max_bytes) return true;
    stop = Stop::size;
    return false;
  }
  bool open() {
    if (++depth_ <= lim_.max_depth) return add(48);
    stop = Stop::depth;
    return false;
  }
  bool close() {
    --depth_;
    return true;
  }
  const JsonLimits& lim_;
  int depth_ = 0;
  uint64_t used_ = 0;
};

}  // namespace

json parse_json_bounded(std::string_view text, const std::string& what, const JsonLimits& limits) {
  Bounds bounds(limits);
  const bool ok = json::sax_parse(text.begin(), text.end(), &bounds);
  switch (bounds.stop) {
    case Bounds::Stop::depth:
      fail(ErrorKind::bad_file, what, " nests deeper than ", limits.max_depth, " levels");
    case Bounds::Stop::size:
      fail(ErrorKind::bad_file, what, " is too large: its parsed form would need more than ", limits.max_bytes >> 20,
           " MiB");
    case Bounds::Stop::range:
      fail(ErrorKind::bad_file, what, " is not valid JSON (a number beyond the range of a double)");
    case Bounds::Stop::syntax:
      fail(ErrorKind::bad_file, what, " is not valid JSON (syntax error at byte ", bounds.error_byte, ")");
    case Bounds::Stop::none:
      break;
  }
  if (!ok) fail(ErrorKind::bad_file, what, " is not valid JSON");
  // The second pass builds the value, now known to be shallow and of bounded size.
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception&) {
    fail(ErrorKind::bad_file, what, " is not valid JSON");
  }
}

std::string json_dump(const json& v, int indent, bool replace_invalid_utf8) {
  return v.dump(indent, ' ', false,
                replace_invalid_utf8 ? json::error_handler_t::replace : json::error_handler_t::strict);
}

std::string json_brief(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return printable(v.dump(), 24);
    case json::value_t::string:
      return "'" + printable(v.get_ref<const std::string&>(), 40) + "'";
    case json::value_t::array:
      return "an array of " + std::to_string(v.size()) + " values";
    case json::value_t::object:
      return "an object of " + std::to_string(v.size()) + " keys";
    default:
      return "a binary value";
  }
}

std::optional<int64_t> json_int(const json& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo))) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) return std::nullopt;
    return i;
  }
  return std::nullopt;
}

}  // namespace sg2::detail
