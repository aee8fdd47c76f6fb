// sg2 internal: the model file reader on bytes in memory (model.h's load_model_file maps the
// file and calls this; the fuzz target tests/fuzz/fuzz_model_file.cpp calls it directly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sg2/model.h"

namespace sg2::detail {

/// Largest safetensors header sg2 reads (the safetensors limit). The header's parsed JSON is
/// bounded separately (json_util.h): 32 levels, 64 MiB.
constexpr uint64_t kMaxModelHeader = 100ull << 20;

/// Parses a whole model file held in `data[0, size)`; `path` names it in every message. Throws
/// what load_model_file throws.
Model parse_model_file(const uint8_t* data, size_t size, const std::string& path);

}  // namespace sg2::detail
