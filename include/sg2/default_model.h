// sg2: where the bundled model (digits32) is found (design.md §6).
//
// The bundled model is located relative to the installed or built sg2 files, never the current
// directory, so `sg2 generate --seeds 0-9 --class 7` works from anywhere:
//   1. the environment variable SG2_MODEL, when set (a model file or checkpoint; when it is set
//      it is the only place looked at);
//   2. next to the running executable (/proc/self/exe): `<exe dir>/models/digits32/digits32.pkl`
//      (the build tree: build/sg2 and build/models -> models/) and
//      `<exe dir>/../share/sg2/models/digits32/digits32.pkl` (after `cmake --install`);
//   3. the same two places relative to the directory of the sg2 shared library, and
//      `<lib dir>/../../share/sg2/models/...` for multiarch library directories (so programs that
//      link the installed libsg2 find it too).
#pragma once

#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/model.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// Path of the bundled model relative to a models/ root: "digits32/digits32.pkl".
const char* default_model_relative_path();

/// Every place looked at, in order (SG2_MODEL alone when it is set), without duplicates.
std::vector<std::string> default_model_candidates();

/// The first existing regular file of default_model_candidates(). Throws Error(io) listing every
/// place looked at, with the hint (Error::hint) to pass a model path or set SG2_MODEL, when none
/// exists (or when SG2_MODEL names a file that does not exist).
std::string default_model_path();

/// load_model(default_model_path()).
Model load_default_model();

}  // namespace sg2
SG2_PUBLIC_END
