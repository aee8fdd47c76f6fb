// sg2 internal: the engine's access to a Generator's backend (for the timing hooks of
// sg2/bench.h and for tests). Not part of the public API.
#pragma once

#include <functional>
#include <memory>

#include "engine/backend.h"
#include "sg2/generator.h"

namespace sg2 {

struct __attribute__((visibility("hidden"))) GeneratorAccess {
  /// The backend `gen` runs on. Throws Error(invalid_argument) for a moved-from Generator.
  static Backend& backend(Generator& gen);
  /// A Generator of `model` whose backend is `make(model)` (tests: a CUDA backend with engine-internal
  /// options, engine/cuda/options.h) instead of the one `options` would choose; options.device
  /// names its device, options.max_batch its batch limit as for the public constructor.
  static Generator with_backend(Model model, GeneratorOptions options,
                                const std::function<std::unique_ptr<Backend>(const Model&)>& make);
};

}  // namespace sg2
