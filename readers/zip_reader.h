// sg2 readers: a read-only zip reader for torch.save archives (spec §7c).
//
// torch.save (PyTorch >= 1.6) writes an uncompressed ("stored") zip. Its local headers carry
// size 0 (general-purpose flag bit 3, sizes in a trailing data descriptor), so entry sizes and
// offsets are taken from the central directory, as the zip format (PKWARE APPNOTE 4.3) intends.
// ZIP64 end records and extra fields are understood. Every offset and size is checked against the
// file before use; compressed or encrypted entries are refused. Entry data is returned as a view
// into the caller's buffer (never copied) after its CRC-32 is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sg2::readers {

struct ZipEntry {
  std::string name;
  uint64_t header_offset = 0;    ///< local header position
  uint64_t data_offset = 0;      ///< first byte of the entry's data
  uint64_t size = 0;             ///< uncompressed (= stored) size
  uint64_t compressed_size = 0;  ///< bytes of data in the archive (= size when stored)
  uint32_t crc32 = 0;
  uint16_t method = 0;  ///< 0 = stored
  uint16_t flags = 0;
};

/// Work done by a ZipArchive, for tests that check it is linear in the file (not timed).
struct ZipStats {
  uint64_t names_compared = 0;  ///< directory names looked at by find()
  uint64_t crc_bytes = 0;       ///< bytes run through CRC-32 by data()
};

/// True when the buffer starts like a zip archive ("PK\3\4", or "PK\5\6" for an empty one).
bool looks_like_zip(const uint8_t* data, size_t size);

/// CRC-32 (IEEE 802.3, as zip uses).
uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0);

class ZipArchive {
 public:
  /// Reads the central directory of the zip in `data[0, size)` once and indexes it by name (the
  /// first of repeated names wins); `what` names the file in errors. Throws Error(bad_file)
  /// naming the byte offset where the structure breaks (no end record, a record signature
  /// mismatch, an entry past the end of the file, two entries whose bytes overlap, ...). Entries
  /// never overlap in a real archive, so every byte is CRC-checked at most once in all.
  ZipArchive(const uint8_t* data, size_t size, std::string what);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  /// The entry called `name`, or nullptr (one hash lookup).
  const ZipEntry* find(std::string_view name) const;
  /// The entry's bytes (a view into the buffer; `e` must be one of entries()). Throws
  /// Error(unsupported) for a compressed or encrypted entry and Error(bad_file) when its CRC-32
  /// does not match (corrupt data). The CRC is computed on the first call only.
  std::string_view data(const ZipEntry& e) const;
  /// A deflated (method 8) or stored entry's bytes, inflated and CRC-checked, when its size is at
  /// most `max_size` (Error(unsupported) otherwise, and for another method or an encrypted entry;
  /// Error(bad_file) for a broken stream or a CRC mismatch). numpy.savez_compressed's members.
  std::vector<uint8_t> inflated(const ZipEntry& e, uint64_t max_size) const;
  /// Error(bad_file) when a deflated entry claims a size its compressed bytes cannot inflate to
  /// (deflate's largest ratio is about 1032:1): a zip bomb's lie, refused before any allocation.
  void check_inflated_size(const ZipEntry& e) const;
  const std::string& what() const { return what_; }
  const ZipStats& stats() const { return stats_; }

 private:
  const uint8_t* data_;
  size_t size_;
  std::string what_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string_view, size_t> index_;  // name (a view of entries_[i].name) -> i
  mutable std::vector<bool> crc_checked_;
  mutable ZipStats stats_;
};

}  // namespace sg2::readers
