// sg2: dataset archives (dataset_zip.h) — a streamed zip writer on libarchive (libarchive-dev).
//
// libarchive's zip writer streams: each entry is a local header, the data and a data descriptor
// (CRC and sizes after the data), so nothing is held back but the central directory (~100 bytes per
// entry), and it switches to zip64 records by itself where the archive needs them. Only the calls
// below are used: archive_write_set_options / _format_option would pull every format writer into
// a static link (and with them xml2, lzma, bz2, zstd, lz4 and acl), so they stay out.
#include "sg2/dataset_zip.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "sg2/error.h"
#include "util/file_util.h"
#include "util/text_util.h"

namespace sg2 {

std::string dataset_image_name(uint64_t index) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%08llu", static_cast<unsigned long long>(index));
  const std::string s = digits;
  return s.substr(0, 5) + "/img" + s + ".png";
}

std::string dataset_json(uint64_t first_index, uint64_t count, std::optional<int64_t> label) {
  if (!label) return "{\"labels\": null}";
  if (*label < 0) fail(ErrorKind::invalid_argument, "dataset.json: label ", *label, " is negative");
  if (count > (uint64_t(1) << 32) || first_index > UINT64_MAX - count)
    fail(ErrorKind::invalid_argument, "dataset.json: ", count, " images from index ", first_index, " is too many");
  const std::string tail = ", " + std::to_string(*label) + "]";
  std::string out = "{\"labels\": [";
  out.reserve(out.size() + count * (28 + tail.size()) + 2);
  for (uint64_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out += "[\"";
    out += dataset_image_name(first_index + i);  // digits, '/' and letters: nothing to escape
    out += '"';
    out += tail;
  }
  out += "]}";
  return out;
}

namespace {

bool ends_with_zip(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".zip" && path.size() > 4 && path[path.size() - 5] != '/';
}

/// Empty when `name` is a valid entry name, else why not.
std::string bad_name(const std::string& name) {
  if (name.empty() || name.size() > 4096) return "must be 1-4096 characters";
  for (unsigned char c : name)
    if (c < 0x20 || c > 0x7e || c == '\\') return "must be printable ASCII without '\\'";
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string::npos) slash = name.size();
    const std::string part = name.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return "must be a relative path without empty, '.' or '..' parts";
    start = slash + 1;
  }
  if (name == "dataset.json") return "is written by finish()";
  return {};
}

/// A value for the terminal (util/text_util.h): escaped, at most 200 characters.
std::string printable(const std::string& s) { return detail::printable(s, 200); }

}  // namespace

struct DatasetZip::Impl {
  enum class State { open, finished, closed };
  std::string path, tmp;
  int slot = -1;  // the temporary's slot in the interrupt cleanup (util/file_util.h register_temp)
  int fd = -1;
  struct archive* a = nullptr;
  struct archive_entry* entry = nullptr;
  time_t mtime = 0;
  uint64_t entries = 0, bytes = 0;
  State state = State::closed;

  /// libarchive's message for the last failure (its errno's text when it has one).
  std::string archive_reason() const {
    std::string why;
    if (a != nullptr) {
      const char* s = archive_error_string(a);
      if (s != nullptr) why = s;
      const int e = archive_errno(a);
      if (e > 0 && why.find(std::strerror(e)) == std::string::npos)
        why += (why.empty() ? "" : ": ") + std::string(std::strerror(e));
      if (e == EFBIG)  // SIGXFSZ is ignored (install_interrupt_cleanup): the write fails instead
        why += " (the process's file-size limit, ulimit -f, or the largest file this file system holds)";
    }
    return why.empty() ? "unknown error" : why;
  }

  /// Frees libarchive's objects, closes and removes the temporary file.
  void discard() noexcept {
    if (a != nullptr) {
      archive_write_fail(a);  // no trailer: the archive is thrown away
      archive_write_free(a);
      a = nullptr;
    }
    if (entry != nullptr) {
      archive_entry_free(entry);
      entry = nullptr;
    }
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
    if (state == State::open) ::unlink(tmp.c_str());
    detail::unregister_temp(slot);
    slot = -1;
    state = State::closed;
  }

  /// Throws Error(io) "<path>: cannot write: <why>" after discarding the temporary file.
  [[noreturn]] void fail_write(const std::string& why) {
    discard();
    fail(ErrorKind::io, printable(path), ": cannot write: ", why);
  }

  void write_entry(const std::string& name, const void* data, size_t size) {
    archive_entry_clear(entry);
    archive_entry_set_pathname(entry, name.c_str());
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_size(entry, static_cast<la_int64_t>(size));
    archive_entry_set_mtime(entry, mtime, 0);
    if (archive_write_header(a, entry) != ARCHIVE_OK) fail_write(archive_reason());
    const auto* p = static_cast<const uint8_t*>(data);
    size_t left = size;
    while (left > 0) {
      const size_t n = std::min<size_t>(left, size_t(1) << 30);
      const la_ssize_t w = archive_write_data(a, p, n);
      if (w <= 0) fail_write(archive_reason());
      p += w;
      left -= static_cast<size_t>(w);
    }
    if (archive_write_finish_entry(a) != ARCHIVE_OK) fail_write(archive_reason());
  }
};

DatasetZip::DatasetZip(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& z = *impl_;
  z.path = path;
  if (!ends_with_zip(path))
    fail(ErrorKind::invalid_argument, printable(path),
         ": a dataset archive's name must end in .zip (the training code requires it)");
  detail::check_output_path(path);  // an existing directory or link fails now, not after the whole run
  // The folder writer's temporary: a new private file, another name when a leftover (the same PID
  // of an earlier run) holds it or the name is too long for a suffix.
  z.fd = detail::create_temp_file(path, &z.tmp, &z.slot);
  z.state = Impl::State::open;
  z.mtime = std::time(nullptr);
  z.a = archive_write_new();
  z.entry = archive_entry_new();
  if (z.a == nullptr || z.entry == nullptr) {
    z.discard();
    fail(ErrorKind::out_of_memory, printable(path), ": cannot allocate the zip writer");
  }
  if (archive_write_set_format_zip(z.a) != ARCHIVE_OK || archive_write_zip_set_compression_store(z.a) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(z.a, 1 << 20) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(z.a, 1) != ARCHIVE_OK || archive_write_open_fd(z.a, z.fd) != ARCHIVE_OK)
    z.fail_write(z.archive_reason());
}

DatasetZip::~DatasetZip() {
  if (impl_) impl_->discard();
}

DatasetZip::DatasetZip(DatasetZip&& other) noexcept = default;

DatasetZip& DatasetZip::operator=(DatasetZip&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->discard();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void DatasetZip::add(const std::string& name, const void* data, size_t size) {
  if (!impl_ || impl_->state != Impl::State::open)
    fail(ErrorKind::invalid_argument, impl_ ? printable(impl_->path) : std::string("zip"),
         ": add() after the archive was finished or closed");
  const std::string why = bad_name(name);
  if (!why.empty())
    fail(ErrorKind::invalid_argument, printable(impl_->path), ": entry name '", printable(name), "' ", why);
  if (data == nullptr && size > 0)
    fail(ErrorKind::invalid_argument, printable(impl_->path), ": no data for '", printable(name), "'");
  impl_->write_entry(name, data, size);
  impl_->entries += 1;
  impl_->bytes += size;
}

void DatasetZip::finish(const std::string& dataset_json) {
  if (!impl_ || impl_->state != Impl::State::open)
    fail(ErrorKind::invalid_argument, impl_ ? printable(impl_->path) : std::string("zip"),
         ": finish() after the archive was finished or closed");
  Impl& z = *impl_;
  z.write_entry("dataset.json", dataset_json.data(), dataset_json.size());
  if (archive_write_close(z.a) != ARCHIVE_OK) z.fail_write(z.archive_reason());
  if (::fsync(z.fd) != 0) z.fail_write(std::strerror(errno));
  const int fd = z.fd;
  z.fd = -1;
  if (::close(fd) != 0) z.fail_write(std::strerror(errno));
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
  z.state = Impl::State::finished;
  detail::unregister_temp(z.slot);
  z.slot = -1;
  archive_write_free(z.a);
  z.a = nullptr;
  archive_entry_free(z.entry);
  z.entry = nullptr;
}

void DatasetZip::abandon() noexcept {
  if (impl_) impl_->discard();
}

const std::string& DatasetZip::path() const { return impl_->path; }
const std::string& DatasetZip::temp_path() const { return impl_->tmp; }
uint64_t DatasetZip::entries() const { return impl_->entries; }
uint64_t DatasetZip::data_bytes() const { return impl_->bytes; }

}  // namespace sg2
