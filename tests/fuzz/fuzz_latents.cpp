// libFuzzer target: the latents reader (sg2/latents.h, readers/latents.cpp) on bytes in memory:
// .npy, .npz and torch.save zip / legacy / plain pickle files through the safe pickle reader, the
// choice of entry (tensors, rosinality projector results, dicts), the stacking of per-image latents
// and the float conversion. Any input must end in latents or an sg2::Error.
#include <cstddef>
#include <cstdint>

#include "sg2/error.h"
#include "sg2/latents.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sg2::Latents l = sg2::parse_latents(data, size, "fuzz.pt");
    (void)l.values.numel();
  } catch (const sg2::Error&) {
  }
  return 0;
}
