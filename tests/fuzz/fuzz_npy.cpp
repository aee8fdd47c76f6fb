// libFuzzer target: the .npy reader (formats/npy.cpp) on bytes in memory: header dict,
// shape, dtype, checked element counts, Fortran-order transposition and the float conversion.
// Any input must end in an array or an sg2::Error.
#include <cstddef>
#include <cstdint>

#include "sg2/error.h"
#include "sg2/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sg2::NpyArray a = sg2::parse_npy(data, size, "fuzz.npy");
    (void)sg2::npy_float_tensor(a, "fuzz.npy");
  } catch (const sg2::Error&) {
  }
  return 0;
}
