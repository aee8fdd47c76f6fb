// sg2 internal: JSON from files, parsed within fixed bounds.
//
// A model file's header and its config are JSON written by whoever made the file. Parsing is
// bounded before anything is built: a first pass through nlohmann's SAX interface (which builds
// nothing) refuses nesting deeper than JsonLimits::max_depth and a value whose parsed form would
// need more than JsonLimits::max_bytes; only then is the value built. So neither the parse, nor
// copying, printing or destroying the result can exhaust the stack or the memory (and the
// parser callback interface, quadratic on large objects of objects, is not used). Messages quote
// file text only through json_brief().
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sg2::detail {

struct JsonLimits {
  int max_depth = 32;                ///< arrays / objects inside each other (sg2's own files: 3)
  uint64_t max_bytes = 64ull << 20;  ///< estimated memory of the parsed value (16 bytes a value, 64 a key, + text)
};

/// Parses `text`. Throws Error(bad_file) "<what> is not valid JSON (syntax error at byte N)",
/// "<what> nests deeper than D levels (at byte N)" or "<what> is too large: its parsed form
/// would need more than M MiB"; `what` names the file and the part ("m.safetensors: the
/// safetensors header").
nlohmann::json parse_json_bounded(std::string_view text, const std::string& what, const JsonLimits& limits = {});

/// v.dump(indent): the text of a value (-1: one line). With `replace_invalid_utf8` a string that is
/// not UTF-8 (a file name) is written with U+FFFD in place of its bad bytes instead of throwing.
/// Here, so that the serializer is compiled once (docs/developing.md "Build times").
std::string json_dump(const nlohmann::json& v, int indent = -1, bool replace_invalid_utf8 = false);

/// A short, printable description of a JSON value for messages: numbers and booleans as their
/// text (cut), strings quoted (escaped, cut), "an array of N values", "an object of N keys".
std::string json_brief(const nlohmann::json& v);

/// The value as an integer in [lo, hi]; nullopt for anything else (non-integers, numbers outside
/// the range; 2^64-1 is never read as -1 nor 4294967298 as 2).
std::optional<int64_t> json_int(const nlohmann::json& v, int64_t lo, int64_t hi);

}  // namespace sg2::detail
