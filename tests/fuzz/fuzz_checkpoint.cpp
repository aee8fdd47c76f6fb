// libFuzzer target: a whole checkpoint conversion from memory (container sniffing, family
// detection, name maps, tensor decoding, config validation). Must end in a model or an sg2::Error.
#include <cstddef>
#include <cstdint>

#include "sg2/convert.h"
#include "sg2/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sg2::ConvertOptions options;
  options.estimate_w_avg = false;  // the mapping run is the engine's business, and slow here
  try {
    sg2::ConvertResult r = sg2::convert_checkpoint_memory(data, size, "fuzz.pkl", options);
    (void)sg2::parameter_count(r.model);
  } catch (const sg2::Error&) {
  }
  return 0;
}
