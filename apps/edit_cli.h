// sg2 CLI: edit directions (sg2/edit.h) for generate, interpolate and mix:
//   --edit FILE[:STRENGTH]  repeatable, applied in command-line order; STRENGTH defaults to 1 and must be a
//                           finite number (FILE is taken whole when the file of that whole name exists);
//   --edit-layers A-B       the ws rows A..B (inclusive; "A" alone is one row) every --edit moves;
//   --edit-component K      the component of every --edit file holding several (GANSpace lat_comp).
// Parsed and the files read before the model loads; fitted to the model (shapes, rows) right after.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli_options.h"
#include "sg2/edit.h"
#include "sg2/generator.h"
#include "sg2/model.h"

namespace sg2::cli {

struct EditArgs {
  std::vector<WsEdit> edits;                ///< directions read, in order (rows: every row until fitted)
  std::vector<bool> strength_given;         ///< per edit: FILE:STRENGTH (not the default 1)
  std::optional<std::pair<int, int>> rows;  ///< --edit-layers
  std::vector<std::string> notes;           ///< what each file held, for a note
  bool empty() const { return edits.empty(); }
};

/// Adds --edit, --edit-layers and --edit-component.
void add_edit_options(Options& opts);

/// "FILE[:STRENGTH]" as file and strength text (absent: none given). `exists` tells whether a
/// path names a file: "a:b.npy" stays whole when that file exists and "a" does not.
std::pair<std::string, std::optional<std::string>> split_edit_arg(const std::string& text);

/// Parses the options and reads every file (errors name the file: exit 2 for usage, 1 for a bad
/// file). Empty when no --edit is given (then --edit-layers / --edit-component are usage errors).
EditArgs read_edit_args(const Args& args);

/// Checks the edits against the model (direction shapes, --edit-layers within num_ws) and sets
/// their rows; Error(invalid_argument) naming the file or the option.
void fit_edits(EditArgs& edits, const ModelConfig& cfg);

/// Prints what each file held (unless quiet).
void edit_notes(const std::string& command, const EditArgs& edits, bool quiet);

/// gen.synthesize(ws, noise) for mix and interpolate, whose ws the edits moved: NaN or infinite
/// pixels (an Error of kind invalid_argument) get the hint that a smaller --edit strength keeps the
/// ws in the mapping network's range. Any other error passes through unchanged.
Tensor synthesize_edited(Generator& gen, const Tensor& ws, const NoiseSpec& noise, const EditArgs& edits);

}  // namespace sg2::cli
