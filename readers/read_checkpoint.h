// sg2 readers: the readers' entry point — a checkpoint file of any supported family in, a
// Model and a report of what the file held (and lacked) out. A leaf of the library: it reads and
// converts names and layouts, it never runs a network (the w_avg estimate for files without one
// is the load facade's job, api/load.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sg2/convert.h"

namespace sg2::readers {

/// Reads the checkpoint in data[0, size). `name` is used in messages and as the report's
/// source_file. The model is complete and passes check_model, except that when the file holds
/// no w_avg (report.w_avg_missing), mapping.w_avg is zeros and config.w_avg_estimated is false.
/// Model::provenance is filled (source_file = base name of `name`, sha256, family, converter).
/// Throws Error(bad_file | unsupported) naming the file and where it breaks.
ConvertResult read_checkpoint_memory(const uint8_t* data, size_t size, const std::string& name);

/// The same for a file (memory-mapped). Throws Error(io) when it cannot be read.
ConvertResult read_checkpoint_file(const std::string& path);

}  // namespace sg2::readers
