// sg2 bench --end-to-end: seeds to files as `sg2 generate` makes them (sg2/stream.h and the encoder
// pool of image_writer.h), into a temporary folder, timed per stage so that the bottleneck is named.
#pragma once

#include <cxxopts.hpp>

#include <string>

#include "sg2/model.h"

namespace sg2::cli {

/// Runs the end-to-end benchmark of `model` with the options of `sg2 bench` (--seeds, --device
/// list, --batch, --precision, --batch-invariance, --format, --png-level, --jobs, --outdir, --keep,
/// --json) and prints images, img/s, MB written and the seconds of each stage. Returns the exit code.
int run_end_to_end_bench(const cxxopts::ParseResult& args, const Model& model, const std::string& label);

}  // namespace sg2::cli
