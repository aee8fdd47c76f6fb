// sg2 internal: the model file reader on bytes in memory (model.h's load_model_file maps the
// file and calls this; the fuzz target tests/fuzz/fuzz_model_file.cpp calls it directly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sg2/model.h"

namespace sg2::detail {

/// Largest safetensors header sg2 reads (the safetensors limit). The header's parsed JSON is
/// bounded separately (json_util.h): 32 levels, 64 MiB.
constexpr uint64_t kMaxModelHeader = 100ull << 20;

/// Parses a whole model file held in `data[0, size)`; `path` names it in every message. Throws
/// what load_model_file throws. Every tensor's entry (dtype, shape, data range), the ranges'
/// overlaps and the names and shapes the config expects are checked before any tensor data is
/// copied, so a hostile header costs no memory; a file that passes and still does not fit in
/// memory is Error(out_of_memory) naming the file.
Model parse_model_file(const uint8_t* data, size_t size, const std::string& path);

/// The names and shapes `config` expects (expected_tensors) against `shapes`: missing, wrong shape,
/// unexpected, in validate_model()'s words (which adds the NaN check on the values).
std::vector<ModelProblem> shape_problems(const ModelConfig& config,
                                         const std::map<std::string, std::vector<int64_t>>& shapes);
/// Throws Error(bad_file) "<what>: N problems with the tensors: ..." (at most 8 shown) unless empty.
void throw_model_problems(const std::vector<ModelProblem>& problems, const std::string& what);

}  // namespace sg2::detail
