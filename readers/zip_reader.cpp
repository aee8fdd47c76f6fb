// sg2 readers: read-only zip reader (zip_reader.h). Record layouts from PKWARE's APPNOTE.TXT
// (end of central directory 4.3.16, ZIP64 end record 4.3.14/4.3.15, central file header 4.3.12,
// local file header 4.3.7, ZIP64 extra field 4.5.3).
#include "readers/zip_reader.h"

#include "formats/zip_inflate.h"

#include <algorithm>
#include <array>
#include <climits>

#include <zlib.h>

#include "readers/pickle.h"
#include "sg2/error.h"
#include "util/file_util.h"

namespace sg2::readers {

using detail::load_le16;
using detail::load_le32;
using detail::load_le64;

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kLocator64Sig = 0x07064b50;

struct CrcTables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  CrcTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};

}  // namespace

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc) {
  static const CrcTables tables;
  const auto& t = tables.t;
  crc = ~crc;
  while (n >= 8) {  // slicing-by-8
    uint32_t a = load_le32(p) ^ crc;
    uint32_t b = load_le32(p + 4);
    crc = t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^ t[5][(a >> 16) & 0xff] ^ t[4][a >> 24] ^ t[3][b & 0xff] ^
          t[2][(b >> 8) & 0xff] ^ t[1][(b >> 16) & 0xff] ^ t[0][b >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool looks_like_zip(const uint8_t* data, size_t size) {
  if (size < 4 || data[0] != 'P' || data[1] != 'K') return false;
  const uint32_t sig = load_le32(data);
  return sig == kLocalSig || sig == kEndSig;
}

ZipArchive::ZipArchive(const uint8_t* data, size_t size, std::string what)
    : data_(data), size_(size), what_(std::move(what)) {
  auto bad = [&](auto&&... a) { fail(ErrorKind::bad_file, what_, ": corrupt zip archive: ", a...); };
  if (size_ < 22) bad("only ", size_, " bytes, too short for a zip end record (truncated?)");
  // 1. The end of central directory record: the last 22 + comment bytes.
  size_t eocd = SIZE_MAX;
  const size_t lowest = size_ >= 22 + 65535 ? size_ - 22 - 65535 : 0;
  for (size_t p = size_ - 22 + 1; p-- > lowest;) {
    if (load_le32(data_ + p) == kEndSig && p + 22 + load_le16(data_ + p + 20) == size_) {
      eocd = p;
      break;
    }
  }
  if (eocd == SIZE_MAX)
    bad("no end-of-central-directory record in the last 64 KiB (the file is truncated or not a zip)");
  const uint8_t* e = data_ + eocd;
  if (load_le16(e + 4) != 0 || load_le16(e + 6) != 0) bad("multi-disk archives are not supported");
  uint64_t count = load_le16(e + 10);
  uint64_t cd_size = load_le32(e + 12);
  uint64_t cd_offset = load_le32(e + 16);
  // 2. ZIP64: a locator right before the end record points to the ZIP64 end record.
  //    Exactly 65,535 entries have no ZIP64 records where Python's zipfile wrote them (it adds them
  //    only for more): the plain count then stands.
  const bool locator = eocd >= 20 && load_le32(data_ + eocd - 20) == kLocator64Sig;
  if ((count == 0xffff && locator) || cd_size == 0xffffffffu || cd_offset == 0xffffffffu) {
    if (!locator) bad("ZIP64 end record locator missing before byte ", eocd);
    const uint64_t z = load_le64(data_ + eocd - 20 + 8);
    if (size_ < 56 || z > size_ - 56 || load_le32(data_ + z) != kEnd64Sig) bad("ZIP64 end record expected at byte ", z);
    count = load_le64(data_ + z + 32);
    cd_size = load_le64(data_ + z + 40);
    cd_offset = load_le64(data_ + z + 48);
  }
  if (cd_offset > size_ || cd_size > size_ - cd_offset)
    bad("the central directory (", cd_size, " bytes at byte ", cd_offset, ") lies outside the ", size_, "-byte file");
  if (count > cd_size / 46)
    bad("the end record claims ", count, " entries, more than its ", cd_size, "-byte directory can hold");
  // 3. Central directory file headers.
  entries_.reserve(static_cast<size_t>(count));
  uint64_t p = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (cd_end - p < 46 || load_le32(data_ + p) != kCentralSig)
      bad("entry ", i, " of the central directory: bad header at byte ", p);
    const uint8_t* h = data_ + p;
    ZipEntry z;
    z.flags = load_le16(h + 8);
    z.method = load_le16(h + 10);
    z.crc32 = load_le32(h + 16);
    uint64_t csize = load_le32(h + 20);
    uint64_t usize = load_le32(h + 24);
    const uint16_t name_len = load_le16(h + 28), extra_len = load_le16(h + 30), comment_len = load_le16(h + 32);
    uint64_t local = load_le32(h + 42);
    const uint64_t rec = 46ull + name_len + extra_len + comment_len;
    if (cd_end - p < rec) bad("entry ", i, " of the central directory at byte ", p, " runs past the directory");
    z.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
    const std::string shown = pickle::printable(z.name, 80);
    // ZIP64 extended information: the 8-byte values replace the fields set to 0xffffffff, in order.
    const uint8_t* x = h + 46 + name_len;
    for (size_t k = 0; k + 4 <= extra_len;) {
      const uint16_t id = load_le16(x + k), len = load_le16(x + k + 2);
      if (k + 4 + len > extra_len) bad("entry '", shown, "': extra field runs past its record");
      if (id == 0x0001) {
        size_t q = k + 4;
        auto next = [&](uint64_t* field) {
          if (*field != 0xffffffffu) return;
          if (q + 8 > k + 4 + len) bad("entry '", shown, "': short ZIP64 extra field");
          *field = load_le64(x + q);
          q += 8;
        };
        next(&usize);
        next(&csize);
        next(&local);
      }
      k += 4 + len;
    }
    z.size = usize;
    z.compressed_size = csize;
    z.header_offset = local;
    if (local > size_ || size_ - local < 30 || load_le32(data_ + local) != kLocalSig)
      bad("entry '", shown, "': no local header at byte ", local);
    z.data_offset = local + 30 + load_le16(data_ + local + 26) + load_le16(data_ + local + 28);
    if (z.method == 0 && csize != usize) bad("stored entry '", shown, "' has different compressed and plain sizes");
    if (z.data_offset > size_ || csize > size_ - z.data_offset)
      bad("entry '", shown, "' (", csize, " bytes at byte ", z.data_offset, ") runs past the end of the ", size_,
          "-byte file (truncated?)");
    entries_.push_back(std::move(z));
    p += rec;
  }
  // 4. No two entries share bytes (a zip bomb's trick: many entries over one region would make
  //    every CRC check read it again). Sorted by local header, each must end before the next.
  std::vector<size_t> order(entries_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return entries_[a].header_offset < entries_[b].header_offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const ZipEntry& prev = entries_[order[k - 1]];
    const ZipEntry& next = entries_[order[k]];
    if (next.header_offset < prev.data_offset + prev.compressed_size)
      bad("entries '", pickle::printable(prev.name, 80), "' and '", pickle::printable(next.name, 80),
          "' overlap at byte ", next.header_offset);
  }
  // 5. The name index (the names live in entries_, which no longer changes).
  index_.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(std::string_view(entries_[i].name), i);
  crc_checked_.assign(entries_.size(), false);
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  ++stats_.names_compared;
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::string_view ZipArchive::data(const ZipEntry& e) const {
  if (e.flags & 1)
    fail(ErrorKind::unsupported, what_, ": unsupported: zip entry '", pickle::printable(e.name, 80), "' is encrypted");
  if (e.method != 0)
    fail_hint(ErrorKind::unsupported, "re-save it with torch.save", what_, ": unsupported: zip entry '",
              pickle::printable(e.name, 80), "' is compressed (method ", e.method,
              "); torch.save writes stored entries");
  const uint8_t* p = data_ + e.data_offset;
  const size_t i = static_cast<size_t>(&e - entries_.data());
  if (&e < entries_.data() || i >= entries_.size())
    fail(ErrorKind::internal, what_, ": zip entry '", pickle::printable(e.name, 80), "' is not from this archive");
  if (crc_checked_[i]) return {reinterpret_cast<const char*>(p), static_cast<size_t>(e.size)};
  stats_.crc_bytes += e.size;
  if (crc32(p, static_cast<size_t>(e.size)) != e.crc32)
    fail(ErrorKind::bad_file, what_, ": corrupt zip archive: the data of entry '", pickle::printable(e.name, 80),
         "' at byte ", e.data_offset, " fails its CRC-32 check");
  crc_checked_[i] = true;
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(e.size)};
}

void ZipArchive::check_inflated_size(const ZipEntry& e) const {
  if (e.method == 8 && e.size / 1032 > e.compressed_size)  // deflate's largest ratio is about 1032:1
    fail(ErrorKind::bad_file, what_, ": corrupt zip archive: entry '", pickle::printable(e.name, 80), "' claims ",
         e.size, " bytes from ", e.compressed_size, " deflated bytes, more than deflate can produce");
}

std::vector<uint8_t> ZipArchive::inflated(const ZipEntry& e, uint64_t max_size) const {
  const std::string shown = pickle::printable(e.name, 80);
  if (e.method == 0) {
    const std::string_view v = data(e);
    return std::vector<uint8_t>(v.begin(), v.end());
  }
  if (e.flags & 1) fail(ErrorKind::unsupported, what_, ": unsupported: zip entry '", shown, "' is encrypted");
  if (e.method != 8)
    fail(ErrorKind::unsupported, what_, ": unsupported: zip entry '", shown, "' uses compression method ", e.method,
         " (only stored and deflated entries are read)");
  if (e.size > max_size)
    fail(ErrorKind::unsupported, what_, ": unsupported: zip entry '", shown, "' inflates to ", e.size,
         " bytes, more than the ", max_size, " bytes read from such an entry");
  check_inflated_size(e);
  std::vector<uint8_t> out(static_cast<size_t>(e.size));
  detail::inflate_raw(data_ + e.data_offset, static_cast<size_t>(e.compressed_size), out.data(), out.size(),
                      what_ + ": zip entry '" + shown + "'");
  if (crc32(out.data(), out.size()) != e.crc32)
    fail(ErrorKind::bad_file, what_, ": corrupt zip archive: the data of entry '", shown, "' fails its CRC-32 check");
  return out;
}

}  // namespace sg2::readers
