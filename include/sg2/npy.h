// sg2: reading and writing NumPy .npy files (format versions 1.0-3.0), and reading .npz files
// (numpy.savez archives of .npy members, such as NVIDIA projector's projected_w.npz).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sg2/export.h"
#include "sg2/tensor.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// A raw .npy array: numpy dtype string ("<f4", "<f8", "|u1", ...), shape, C-order bytes.
struct NpyArray {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Parses a .npy file. Fortran-order arrays are transposed to C order. Throws Error(bad_file)
/// naming `path` on a bad magic, header, or a payload shorter than the header says.
NpyArray read_npy(const std::string& path);

/// The same from the bytes of a .npy file in memory (an .npz member); `what` names it in errors.
NpyArray parse_npy(const uint8_t* data, size_t size, const std::string& what);

/// Reads a float32, float64 or float16 .npy file as float32 (float64 is rounded to nearest).
/// Throws Error(bad_file) for other dtypes.
Tensor read_npy_tensor(const std::string& path);

/// The array as float32, as read_npy_tensor; `what` names it in errors.
Tensor npy_float_tensor(const NpyArray& array, const std::string& what);

/// Values [first, first + count) of a float16, float32, float64 or uint8 array ("|u1") as double,
/// into out[0, count): exact (every such value is a double; NaN stays NaN, infinities stay
/// infinite). Throws Error(bad_file) naming `what` for another dtype, Error(invalid_argument)
/// for a range beyond the array.
void npy_values_f64(const NpyArray& array, size_t first, size_t count, double* out, const std::string& what);

/// Reads a float64 .npy file exactly (float32 is widened). Throws Error(bad_file) otherwise.
std::vector<double> read_npy_f64(const std::string& path, std::vector<int64_t>* shape = nullptr);

/// Writes `t` as a little-endian float32 .npy (version 1.0). Atomic: written to a temporary
/// file and renamed. Throws Error(io).
void write_npy(const std::string& path, const Tensor& t);

/// Writes uint8 values of `shape` (C order) as a .npy file ("|u1", version 1.0), atomically.
/// Throws Error(invalid_argument) for a negative dimension, Error(io) when it cannot write.
void write_npy_u8(const std::string& path, const uint8_t* data, const std::vector<int64_t>& shape);

/// The bytes of a .npy file holding `t` as float32 (what write_npy writes).
std::vector<uint8_t> npy_bytes(const Tensor& t);

/// True when the file starts like a zip archive (an .npz), whatever its name. Throws Error(io).
bool is_npz_file(const std::string& path);

/// Every array of an .npz file, in archive order, under its name without ".npy" (made printable:
/// safe to show). Stored (numpy.savez) members only: a compressed archive (numpy.savez_compressed)
/// is Error(unsupported) saying how to save it instead. Throws Error(bad_file) naming `path` for a
/// broken archive, a member that is not a .npy file, or no arrays at all; Error(io) when it cannot
/// be read. (Implemented with the checkpoint readers' zip reader, readers/npz.cpp.)
std::vector<std::pair<std::string, NpyArray>> read_npz(const std::string& path);

}  // namespace sg2
SG2_PUBLIC_END
