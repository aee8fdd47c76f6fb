// sg2 bench --end-to-end: seeds to files as `sg2 generate` makes them (sg2/stream.h and the encoder
// pool of image_writer.h), into a temporary folder, timed per stage so that the bottleneck is named.
#pragma once

#include <string>

#include "cli_options.h"
#include "sg2/model.h"

namespace sg2::cli {

/// Runs the end-to-end benchmark of `model` with the options of `sg2 bench` (--seeds, --batch,
/// --precision, --batch-invariance, --format, --png-level, --jobs, --outdir, --keep, --json) on
/// `devices` (--device's text, a list allowed, or the default sg2 bench chose) and prints images,
/// img/s, MB written and the seconds of each stage. Returns the exit code.
int run_end_to_end_bench(const Args& args, const Model& model, const std::string& label, const std::string& devices);

}  // namespace sg2::cli
