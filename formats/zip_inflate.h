// sg2 internal: raw DEFLATE (zip method 8) with zlib, for compressed .npz members
// (numpy.savez_compressed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sg2::detail {

/// Inflates the raw DEFLATE stream in[0, in_size) into exactly out[0, out_size). Throws
/// Error(bad_file) naming `what` when the stream is corrupt, ends early, or holds more or fewer
/// than out_size bytes.
void inflate_raw(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size, const std::string& what);

}  // namespace sg2::detail
