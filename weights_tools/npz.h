// sg2 weights_tools: reading NumPy .npz files (numpy.savez: a zip archive of NAME.npy members),
// such as the projected_w.npz NVIDIA's projector writes (array 'w', [1, num_ws, w_dim]).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sg2/npy.h"

namespace sg2 {

/// True when the file starts like a zip archive (an .npz), whatever its name.
bool is_npz_file(const std::string& path);

/// Every array of an .npz file, in archive order, under its name without ".npy" (made printable:
/// safe to show). Stored
/// (numpy.savez) members only: a compressed archive (numpy.savez_compressed) is Error(unsupported)
/// saying how to save it instead. Throws Error(bad_file) naming `path` for a broken archive, a
/// member that is not a .npy file, or no arrays at all; Error(io) when it cannot be read.
std::vector<std::pair<std::string, NpyArray>> read_npz(const std::string& path);

}  // namespace sg2
