// sg2 internal: the engine's access to a Generator's backend (for the timing hooks of
// sg2/bench.h and for tests). Not part of the public API.
#pragma once

#include "engine/backend.h"
#include "sg2/generator.h"

namespace sg2 {

struct __attribute__((visibility("hidden"))) GeneratorAccess {
  /// The backend `gen` runs on. Throws Error(invalid_argument) for a moved-from Generator.
  static Backend& backend(Generator& gen);
};

}  // namespace sg2
