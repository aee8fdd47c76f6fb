// sg2 internal: files — whole-file reads, memory maps, atomic writes, sha256.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sg2::detail {

/// A read-only memory map of a whole file (move-only RAII). An empty file maps to size 0.
class MappedFile {
 public:
  /// Throws Error(io) naming `path` when it cannot be opened, is a directory, or cannot be mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Reads a whole file. Throws Error(io) naming `path`.
std::vector<uint8_t> read_file(const std::string& path);

/// A temporary file beside `path` ("<path>.tmp.<pid>", or "<path>.tmp.<pid>.<n>" when that name
/// is taken), for an atomic write: created new (O_EXCL, O_NOFOLLOW: never written through a link
/// or into an existing file) on construction and registered with the interrupt cleanup (sg2/interrupt.h) until it is
/// renamed onto `path` by commit() or removed by the destructor. Move-only.
class TempFile {
 public:
  /// Throws Error(io) "<path>: cannot write: reason", also when `path` exists and is not a
  /// regular file (check_output_path).
  explicit TempFile(std::string path);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  std::FILE* file() const { return f_; }
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }
  /// Flushes, closes and renames the temporary onto path(). Throws Error(io); the temporary is
  /// removed on failure.
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  int slot_ = -1;  // index in the interrupt cleanup's table, -1 once the file is renamed or removed
};

/// Creates the temporary file for `path` — new (O_EXCL), never through a link (O_NOFOLLOW), and
/// registered with the interrupt cleanup before it exists: `path.tmp.PID`, then `.1`, `.2`, ...
/// when that name is taken (a leftover of an earlier process with the same PID), and
/// `.sg2-PID.tmp.N` in the same folder when `path` is too long for a suffix. Returns the open
/// descriptor; *tmp and *slot receive its name and cleanup slot (call unregister_temp(*slot) once
/// it is renamed or removed). Throws Error(io) "<path>: cannot write: reason".
int create_temp_file(const std::string& path, std::string* tmp, int* slot);

/// Registers a temporary file with the interrupt cleanup (sg2/interrupt.h: SIGINT, SIGTERM and
/// SIGHUP unlink it) before it is created; returns the slot for temp_created and unregister_temp.
/// Waits while 1,024 are registered; once an interrupt is being handled it waits for the end of
/// the process instead of returning. Throws Error(io) for a path of 4,096 bytes or more.
/// Thread-safe.
int register_temp(const std::string& temp_path);
/// The file of `slot` now exists (call right after creating it; the interrupt cleanup waits, at
/// most 2 s in all, for registered files still being created).
void temp_created(int slot);
/// The file of `slot` was renamed or removed by its owner (-1 is ignored).
void unregister_temp(int slot);

/// Throws Error(io) "<path>: cannot write: it exists and is a directory (a symbolic link, a FIFO,
/// a socket, a device), not a regular file ..." when `path` exists and is not a regular file
/// (checked with lstat: a link is not followed). Every atomic write checks its destination so
/// before it starts and again before the rename.
void check_output_path(const std::string& path);

/// Writes a file atomically: `write` fills a TempFile, which is flushed and renamed onto `path`;
/// on any failure the temporary is removed and the error is rethrown (Error(io) for write
/// errors), so `path` is either the complete new file or untouched.
void write_file_atomic(const std::string& path, const std::function<void(std::FILE*)>& write);
void write_file_atomic(const std::string& path, const void* data, size_t size);

/// Writes `size` bytes to `f`, throwing Error(io) mentioning `path` on a short write.
void write_all(std::FILE* f, const void* data, size_t size, const std::string& path);

/// Creates a directory and its parents (like mkdir -p). Throws Error(io).
void make_dirs(const std::string& path);

/// Lowercase hex SHA-256 of a byte range / of a whole file (streamed). util/sha256.cpp: the x86 SHA
/// extensions where the CPU has them, else portable code; the same digest.
std::string sha256_hex(const uint8_t* data, size_t size);
std::string sha256_file(const std::string& path);
/// The portable code alone, and whether sha256_hex uses the SHA extensions on this CPU (tests).
std::string sha256_hex_portable(const uint8_t* data, size_t size);
bool sha256_uses_sha_extensions();

/// The last path component ("a/b/c.pkl" -> "c.pkl").
std::string base_name(const std::string& path);

/// Little-endian loads (unaligned-safe).
inline uint16_t load_le16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
inline uint64_t load_le64(const uint8_t* p) { return uint64_t(load_le32(p)) | (uint64_t(load_le32(p + 4)) << 32); }

/// IEEE half / bfloat16 -> float.
float half_to_float(uint16_t h);
float bf16_to_float(uint16_t b);
/// float -> IEEE half, round to nearest even (overflow -> inf).
uint16_t float_to_half(float f);

}  // namespace sg2::detail
