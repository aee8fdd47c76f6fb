// sg2 readers: .npz archives in memory (numpy.savez: a stored zip of .npy members), for sg2/npy.h
// read_npz and sg2/latents.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sg2/npy.h"

namespace sg2::readers {

/// Every array of the .npz in data[0, size), as read_npz (sg2/npy.h) returns them; `what` names the
/// file in messages. Same errors as read_npz.
std::vector<std::pair<std::string, NpyArray>> npz_arrays(const uint8_t* data, size_t size, const std::string& what);

}  // namespace sg2::readers
