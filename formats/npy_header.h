// sg2 internal: the header of a .npy file without its payload, for readers that check an array's
// size against a bound before copying it (sg2/latents.h: an .npz member's shape vs memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sg2 {

struct NpyHeaderInfo {
  std::string dtype;
  std::vector<int64_t> shape;
  bool fortran_order = false;
  size_t item_size = 0;    ///< bytes per element
  size_t data_offset = 0;  ///< where the payload starts
};

/// The header of the .npy bytes d[0, n) (the payload is not looked at). Same header errors as
/// parse_npy (sg2/npy.h), Error(bad_file) naming `what`.
NpyHeaderInfo peek_npy_header(const uint8_t* d, size_t n, const std::string& what);

}  // namespace sg2
