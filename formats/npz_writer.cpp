// sg2: the streamed .npz writer (sg2/npz_writer.h). Record layouts from PKWARE's APPNOTE.TXT:
// local file header 4.3.7, central directory header 4.3.12, ZIP64 extra field 4.5.3, ZIP64 end of
// central directory record and locator 4.3.14-15, end of central directory record 4.3.16.
#include "sg2/npz_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>

#include "sg2/error.h"
#include "util/file_util.h"
#include "util/text_util.h"

namespace sg2 {

namespace {

constexpr uint64_t k32 = 0xffffffffu;

std::string printable(const std::string& s) { return detail::printable(s, 200); }

void put16(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(uint8_t(v));
  b.push_back(uint8_t(v >> 8));
}
void put32(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
}
void put64(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

/// a * b, or false when it overflows 64 bits.
bool mul_ok(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add_ok(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

/// The DOS date and time of `t` (local time, as zip tools write them).
void dos_time(time_t t, uint16_t* time, uint16_t* date) {
  struct tm tm {};
  localtime_r(&t, &tm);
  const int year = tm.tm_year + 1900 < 1980 ? 1980 : tm.tm_year + 1900;
  *time = uint16_t((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
  *date = uint16_t(((year - 1980) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
}

}  // namespace

size_t npz_dtype_size(const std::string& d) {
  static const std::set<std::string> fixed = {"<f4", "<f8", "<f2", "<u4", "<i4", "<u8",
                                              "<i8", "<u2", "<i2", "|u1", "|i1", "|b1"};
  if (fixed.count(d)) return static_cast<size_t>(d[2] - '0');
  if (d.size() >= 3 && d.size() <= 8 && (d.compare(0, 2, "|S") == 0 || d.compare(0, 2, "<U") == 0)) {
    size_t k = 0;
    bool digits = true;
    for (size_t i = 2; i < d.size(); ++i) {
      digits = digits && d[i] >= '0' && d[i] <= '9';
      if (digits) k = k * 10 + size_t(d[i] - '0');
    }
    if (digits && k >= 1 && k <= 65536) return d[0] == '<' ? 4 * k : k;
  }
  fail(ErrorKind::invalid_argument, "npz: unsupported dtype '", printable(d), "'");
}

std::vector<uint8_t> npy_header_bytes(const std::string& dtype, const std::vector<int64_t>& shape) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = 10 + header.size() + 1;  // magic, version, length, dict, '\n'
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 65535) fail(ErrorKind::invalid_argument, "npz: a .npy header of ", header.size(), " bytes");
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  put16(out, static_cast<uint32_t>(header.size()));
  out.insert(out.end(), header.begin(), header.end());
  return out;
}

struct NpzWriter::Impl {
  struct Member {
    std::string file_name;                                  // name + ".npy"
    uint64_t header_offset = 0, data_offset = 0, size = 0;  // the local header, the .npy's bytes
    uint64_t payload = 0, written = 0;                      // array bytes declared / appended
    uint64_t at = 0;                                        // next file position of its bytes
    uint32_t crc = 0;
    bool zip64 = false;  // sizes in a ZIP64 extra field
    std::vector<uint8_t> buf;
  };
  std::string path, tmp;
  int fd = -1, slot = -1;
  bool open = false;
  std::vector<Member> members;
  NpzOptions options;
  uint64_t data_end = 0, file_bytes = 0;
  uint16_t time = 0, date = 0;

  void discard() noexcept {
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
    if (open) ::unlink(tmp.c_str());
    open = false;
    detail::unregister_temp(slot);
    slot = -1;
    for (Member& m : members) std::vector<uint8_t>().swap(m.buf);
  }

  [[noreturn]] void fail_write(int err) {
    discard();
    std::string why = std::strerror(err);
    if (err == EFBIG) why += " (the process's file-size limit, ulimit -f, or the largest file this file system holds)";
    fail(ErrorKind::io, printable(path), ": cannot write: ", why);
  }

  void pwrite_all(const uint8_t* p, size_t n, uint64_t off) {
    while (n > 0) {
      const ssize_t w = ::pwrite(fd, p, std::min<size_t>(n, size_t(1) << 30), static_cast<off_t>(off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail_write(w < 0 ? errno : ENOSPC);
      p += w;
      n -= static_cast<size_t>(w);
      off += static_cast<uint64_t>(w);
    }
  }

  void flush(Member& m) {
    if (m.buf.empty()) return;
    pwrite_all(m.buf.data(), m.buf.size(), m.at);
    m.at += m.buf.size();
    m.buf.clear();
  }

  /// The local header of `m` (its CRC known).
  std::vector<uint8_t> local_header(const Member& m) const {
    std::vector<uint8_t> h;
    put32(h, 0x04034b50);
    put16(h, m.zip64 ? 45 : 20);
    put16(h, 0);  // flags
    put16(h, 0);  // stored
    put16(h, time);
    put16(h, date);
    put32(h, m.crc);
    put32(h, m.zip64 ? k32 : m.size);
    put32(h, m.zip64 ? k32 : m.size);
    put16(h, static_cast<uint32_t>(m.file_name.size()));
    put16(h, m.zip64 ? 20 : 0);
    h.insert(h.end(), m.file_name.begin(), m.file_name.end());
    if (m.zip64) {
      put16(h, 1);
      put16(h, 16);
      put64(h, m.size);
      put64(h, m.size);
    }
    return h;
  }

  std::vector<uint8_t> directory() const {
    std::vector<uint8_t> cd;
    for (const Member& m : members) {
      const bool big = m.zip64, far = options.force_zip64 || m.header_offset >= k32;
      std::vector<uint8_t> extra;
      if (big) {
        put64(extra, m.size);
        put64(extra, m.size);
      }
      if (far) put64(extra, m.header_offset);
      put32(cd, 0x02014b50);
      put16(cd, (3u << 8) | 45u);  // made by: Unix, 4.5
      put16(cd, big || far ? 45 : 20);
      put16(cd, 0);
      put16(cd, 0);
      put16(cd, time);
      put16(cd, date);
      put32(cd, m.crc);
      put32(cd, big ? k32 : m.size);
      put32(cd, big ? k32 : m.size);
      put16(cd, static_cast<uint32_t>(m.file_name.size()));
      put16(cd, extra.empty() ? 0 : static_cast<uint32_t>(extra.size() + 4));
      put16(cd, 0);  // comment
      put16(cd, 0);  // disk
      put16(cd, 0);  // internal attributes
      put32(cd, uint64_t(0100644) << 16);
      put32(cd, far ? k32 : m.header_offset);
      cd.insert(cd.end(), m.file_name.begin(), m.file_name.end());
      if (!extra.empty()) {
        put16(cd, 1);
        put16(cd, static_cast<uint32_t>(extra.size()));
        cd.insert(cd.end(), extra.begin(), extra.end());
      }
    }
    // The end records: ZIP64 ones where a field does not fit (or asked for).
    const uint64_t n = members.size(), cd_size = cd.size(), cd_off = data_end;
    const bool zip64_end = options.force_zip64 || n >= 0xffff || cd_size >= k32 || cd_off >= k32;
    if (zip64_end) {
      const uint64_t end64 = cd_off + cd_size;
      put32(cd, 0x06064b50);
      put64(cd, 44);               // the record's size after this field
      put16(cd, (3u << 8) | 45u);  // made by
      put16(cd, 45);               // needed
      put32(cd, 0);                // this disk
      put32(cd, 0);                // the directory's disk
      put64(cd, n);
      put64(cd, n);
      put64(cd, cd_size);
      put64(cd, cd_off);
      put32(cd, 0x07064b50);  // the locator
      put32(cd, 0);
      put64(cd, end64);
      put32(cd, 1);
    }
    put32(cd, 0x06054b50);
    put16(cd, 0);
    put16(cd, 0);
    put16(cd, zip64_end ? 0xffff : static_cast<uint32_t>(n));
    put16(cd, zip64_end ? 0xffff : static_cast<uint32_t>(n));
    put32(cd, zip64_end ? k32 : cd_size);
    put32(cd, zip64_end ? k32 : cd_off);
    put16(cd, 0);
    return cd;
  }
};

NpzWriter::NpzWriter(const std::string& path, std::vector<NpzMember> members, NpzOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& z = *impl_;
  z.path = path;
  z.options = options;
  if (z.options.buffer_bytes == 0) z.options.buffer_bytes = 1;
  if (members.empty()) fail(ErrorKind::invalid_argument, printable(path), ": an .npz needs at least one array");
  std::set<std::string> names;
  uint64_t off = 0;
  std::vector<std::vector<uint8_t>> npy_headers;
  for (const NpzMember& a : members) {
    bool ok = !a.name.empty() && a.name.size() <= 200;
    for (char ch : a.name)
      ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                  ch == '.' || ch == '-');
    if (!ok) fail(ErrorKind::invalid_argument, printable(path), ": bad array name '", printable(a.name), "'");
    if (!names.insert(a.name).second)
      fail(ErrorKind::invalid_argument, printable(path), ": array '", a.name, "' given twice");
    uint64_t bytes = npz_dtype_size(a.dtype);
    for (int64_t d : a.shape)
      if (d < 0 || !mul_ok(bytes, static_cast<uint64_t>(d), &bytes))
        fail(ErrorKind::invalid_argument, printable(path), ": array '", a.name, "' has a shape whose size ",
             d < 0 ? "is negative" : "overflows 64 bits");
    Impl::Member m;
    m.file_name = a.name + ".npy";
    m.payload = bytes;
    npy_headers.push_back(npy_header_bytes(a.dtype, a.shape));
    m.size = npy_headers.back().size() + bytes;
    if (m.size < bytes) fail(ErrorKind::invalid_argument, printable(path), ": array '", a.name, "' is too large");
    m.zip64 = options.force_zip64 || m.size >= k32;
    m.header_offset = off;
    const uint64_t local = 30 + m.file_name.size() + (m.zip64 ? 20 : 0);
    if (!add_ok(off, local, &m.data_offset) || !add_ok(m.data_offset, m.size, &off))
      fail(ErrorKind::invalid_argument, printable(path), ": the archive would exceed 2^64 bytes");
    m.at = m.data_offset + npy_headers.back().size();
    m.crc = static_cast<uint32_t>(::crc32_z(0, npy_headers.back().data(), npy_headers.back().size()));
    z.members.push_back(std::move(m));
  }
  z.data_end = off;
  detail::check_output_path(path);
  z.fd = detail::create_temp_file(path, &z.tmp, &z.slot);
  z.open = true;
  dos_time(std::time(nullptr), &z.time, &z.date);
  for (size_t i = 0; i < z.members.size(); ++i)
    z.pwrite_all(npy_headers[i].data(), npy_headers[i].size(), z.members[i].data_offset);
  z.file_bytes = z.data_end + z.directory().size();
}

NpzWriter::~NpzWriter() {
  if (impl_) impl_->discard();
}
NpzWriter::NpzWriter(NpzWriter&& other) noexcept = default;
NpzWriter& NpzWriter::operator=(NpzWriter&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->discard();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void NpzWriter::append(size_t member, const void* data, size_t size) {
  if (!impl_ || !impl_->open)
    fail(ErrorKind::invalid_argument, impl_ ? printable(impl_->path) : std::string("npz"),
         ": append() after the archive was finished or closed");
  Impl& z = *impl_;
  if (member >= z.members.size())
    fail(ErrorKind::invalid_argument, printable(z.path), ": no array ", member, " (", z.members.size(), " arrays)");
  Impl::Member& m = z.members[member];
  if (size > m.payload - m.written)
    fail(ErrorKind::invalid_argument, printable(z.path), ": array '", m.file_name, "' holds ", m.payload,
         " bytes; appending ", size, " more after ", m.written);
  if (size == 0) return;
  if (data == nullptr) fail(ErrorKind::invalid_argument, printable(z.path), ": append() without data");
  const auto* p = static_cast<const uint8_t*>(data);
  m.crc = static_cast<uint32_t>(::crc32_z(m.crc, p, size));
  m.written += size;
  if (m.buf.empty() && size >= z.options.buffer_bytes) {  // large pieces go straight to the file
    z.pwrite_all(p, size, m.at);
    m.at += size;
    return;
  }
  while (size > 0) {
    if (m.buf.capacity() < z.options.buffer_bytes) m.buf.reserve(z.options.buffer_bytes);
    const size_t n = std::min(size, z.options.buffer_bytes - m.buf.size());
    m.buf.insert(m.buf.end(), p, p + n);
    p += n;
    size -= n;
    if (m.buf.size() >= z.options.buffer_bytes) z.flush(m);
  }
}

uint64_t NpzWriter::remaining(size_t member) const {
  const auto& m = impl_->members.at(member);
  return m.payload - m.written;
}

void NpzWriter::finish() {
  if (!impl_ || !impl_->open)
    fail(ErrorKind::invalid_argument, impl_ ? printable(impl_->path) : std::string("npz"),
         ": finish() after the archive was finished or closed");
  Impl& z = *impl_;
  for (const Impl::Member& m : z.members)
    if (m.written != m.payload) {
      const std::string what = m.file_name;
      const uint64_t have = m.written, want = m.payload;
      z.discard();
      fail(ErrorKind::invalid_argument, printable(z.path), ": array '", what, "' got ", have, " of its ", want,
           " bytes; the archive was not written");
    }
  for (Impl::Member& m : z.members) z.flush(m);
  for (const Impl::Member& m : z.members) {
    const std::vector<uint8_t> h = z.local_header(m);
    z.pwrite_all(h.data(), h.size(), m.header_offset);
  }
  const std::vector<uint8_t> cd = z.directory();
  z.pwrite_all(cd.data(), cd.size(), z.data_end);
  if (::fsync(z.fd) != 0) z.fail_write(errno);
  const int fd = z.fd;
  z.fd = -1;
  if (::close(fd) != 0) z.fail_write(errno);
  try {
    detail::check_output_path(z.path);
  } catch (...) {
    z.discard();
    throw;
  }
  if (std::rename(z.tmp.c_str(), z.path.c_str()) != 0) {
    const int e = errno;
    z.discard();
    fail(ErrorKind::io, printable(z.path), ": cannot rename the finished archive into place: ", std::strerror(e));
  }
  z.open = false;
  detail::unregister_temp(z.slot);
  z.slot = -1;
}

void NpzWriter::abandon() noexcept {
  if (impl_) impl_->discard();
}

const std::string& NpzWriter::path() const { return impl_->path; }
const std::string& NpzWriter::temp_path() const { return impl_->tmp; }
uint64_t NpzWriter::file_bytes() const { return impl_->file_bytes; }

}  // namespace sg2
