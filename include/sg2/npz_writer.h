// sg2: a streamed .npz writer — numpy.savez's layout (a zip of stored, uncompressed .npy members),
// filled row by row for arrays of millions of rows, in fixed memory.
//
//   sg2::NpzWriter npz("out/latents.npz", {{"seeds", "<u4", {n}}, {"w", "<f4", {n, 14, 512}}});
//   for (...) { npz.append(0, &seed, 4); npz.append(1, w_row, 14 * 512 * 4); }   // rows in C order
//   npz.finish();                                   // every array complete, then the rename
//
// Every array's shape (so its size) is declared up front, which the .npy headers need; each array's
// bytes are then appended in order (C order, little-endian), arrays interleaved as the caller
// likes. Since every size is known, each member has its place in the file from the start: bytes
// are written there (through a buffer of NpzOptions::buffer_bytes per array) and nothing is ever
// copied again; the CRC-32 of each member is computed as it goes, and the local headers, the
// central directory and the end records are written by finish(). ZIP64 records where the archive
// needs them (a member of 4 GiB or more, offsets past 4 GiB, 65,535 members or more), as Python's
// zipfile writes them, so numpy.load reads the archive (and so does sg2's own reader,
// sg2::read_npz / read_latents). Memory: the buffers, whatever the number of rows.
//
// No half archive: written to `path.tmp.PID` beside `path` (registered with the interrupt cleanup,
// sg2/interrupt.h) and renamed onto `path` by finish() after an fsync. A writer destroyed or
// abandon()ed before finish() removes the temporary file and leaves `path` untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// One array of an .npz archive.
struct NpzMember {
  std::string name;            ///< the array's name (the member is name + ".npy"): 1-200 bytes, [A-Za-z0-9_.-]
  std::string dtype;           ///< numpy descr: "<f4", "<f8", "<f2", "<u4", "<i4", "<u8", "<i8", "|u1", "|i1",
                               ///< "|b1", "|Sk" (bytes of width k) or "<Uk" (unicode of k characters, UTF-32LE)
  std::vector<int64_t> shape;  ///< C order; () is a scalar
};

/// Bytes of one element of `dtype` (NpzMember::dtype). Throws Error(invalid_argument) for another.
size_t npz_dtype_size(const std::string& dtype);

/// The bytes of a .npy header (format 1.0: magic, version, length, the dict numpy.save writes,
/// padded with spaces to a multiple of 64 bytes) for an array of `dtype` and `shape`.
std::vector<uint8_t> npy_header_bytes(const std::string& dtype, const std::vector<int64_t>& shape);

struct NpzOptions {
  size_t buffer_bytes = size_t(1) << 20;  ///< per array: bytes gathered before a write (>= 1)
  bool force_zip64 = false;               ///< ZIP64 records for every member (as Python's force_zip64)
};

/// See the top of this header. Not thread-safe; move-only.
class NpzWriter {
 public:
  /// Opens `path.tmp.PID` and writes the .npy headers. Throws Error(invalid_argument) for a bad
  /// member (name, dtype, a negative dimension, a size that overflows 64 bits, repeated names,
  /// none at all), Error(io) naming `path` when it cannot be written (its folder missing, not
  /// writable, `path` a directory).
  NpzWriter(const std::string& path, std::vector<NpzMember> members, NpzOptions options = {});
  ~NpzWriter();
  NpzWriter(NpzWriter&& other) noexcept;
  NpzWriter& operator=(NpzWriter&& other) noexcept;
  NpzWriter(const NpzWriter&) = delete;
  NpzWriter& operator=(const NpzWriter&) = delete;

  /// Appends `size` bytes to array `member` (its index in the constructor's list). Throws
  /// Error(invalid_argument) for more bytes than its shape holds (the writer stays usable),
  /// Error(io) naming `path` on a write failure (disk full, a file-size limit: the temporary
  /// file is then removed and every later call throws).
  void append(size_t member, const void* data, size_t size);

  /// Bytes still missing from array `member`.
  uint64_t remaining(size_t member) const;

  /// Writes the headers and the directory, fsyncs and renames the archive onto `path`. Throws
  /// Error(invalid_argument) naming the first array that is not complete, Error(io) on a write
  /// failure; in both cases the temporary file is removed.
  void finish();

  /// Removes the temporary file now, leaving `path` untouched (idempotent; also done by the
  /// destructor when finish() was not called).
  void abandon() noexcept;

  const std::string& path() const;       ///< the archive's final name
  const std::string& temp_path() const;  ///< where it is written until finish()
  uint64_t file_bytes() const;           ///< the size the finished archive has

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg2
SG2_PUBLIC_END
