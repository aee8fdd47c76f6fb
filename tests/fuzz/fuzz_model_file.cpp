// libFuzzer target: the model file reader (formats/model_file.cpp) on bytes in memory: the
// safetensors header (bounded JSON), the metadata and config (every field range-checked), tensor
// entries (checked sizes), float16/bfloat16 widening and the whole-model validation. Any input
// must end in a model or an sg2::Error; crashes, sanitizer reports, leaks, hangs and other
// exceptions are findings.
#include <cstddef>
#include <cstdint>

#include "formats/model_file.h"
#include "sg2/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sg2::Model m = sg2::detail::parse_model_file(data, size, "fuzz.safetensors");
    (void)sg2::parameter_count(m);
    (void)sg2::config_to_json(m.config);
  } catch (const sg2::Error&) {
  }
  return 0;
}
