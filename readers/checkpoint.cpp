// sg2 readers: opening checkpoints (checkpoint.h).
#include "readers/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "sg2/error.h"
#include "util/file_util.h"

namespace sg2::readers {

const char* container_name(Container c) {
  switch (c) {
    case Container::pickle:
      return "pickle";
    case Container::torch_zip:
      return "torch.save zip";
    case Container::torch_legacy:
      return "torch.save legacy";
  }
  return "?";
}

namespace {

std::string lower_prefix(const uint8_t* d, size_t n, size_t max) {
  std::string s;
  for (size_t i = 0; i < n && i < max; ++i) s += static_cast<char>(std::tolower(d[i]));
  return s;
}

std::string first_bytes(const uint8_t* d, size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n && i < 8; ++i) {
    if (i) s += ' ';
    s += hex[d[i] >> 4];
    s += hex[d[i] & 15];
  }
  return s;
}

/// Says what a non-checkpoint file looks like, or returns "" when it could be a pickle; *hint gets
/// what to do about it, where there is advice.
std::string sniff_foreign(const uint8_t* d, size_t n, std::string* hint) {
  size_t i = 0;
  while (i < n && i < 512 && std::isspace(d[i])) ++i;
  const std::string head = lower_prefix(d + i, n - i, 512);
  if (head.rfind("<", 0) == 0) {
    const bool html = head.find("<html") != std::string::npos || head.find("<!doctype html") != std::string::npos ||
                      head.find("<head") != std::string::npos || head.find("<body") != std::string::npos;
    std::string shown =
        pickle::printable(std::string(reinterpret_cast<const char*>(d + i), std::min<size_t>(n - i, 40)), 40);
    return html ? "an HTML page, not a checkpoint (a failed or redirected download?); it starts with '" + shown + "'"
                : "an XML/HTML document, not a checkpoint; it starts with '" + shown + "'";
  }
  if (n >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
    *hint = "decompress it first";
    return "a gzip-compressed file, not a checkpoint";
  }
  if (n >= 8 && std::memcmp(d, "\x89HDF\r\n\x1a\n", 8) == 0)
    return "an HDF5 file (Keras / TensorFlow 2 weights?), not a supported checkpoint";
  if (n >= 6 && std::memcmp(d, "7z\xbc\xaf\x27\x1c", 6) == 0) {
    *hint = "extract it first";
    return "a 7-zip archive, not a checkpoint";
  }
  if (n >= 262 && std::memcmp(d + 257, "ustar", 5) == 0)
    return "a tar archive (the torch.save format of PyTorch < 0.4 is not supported), not a checkpoint";
  if (n >= 9) {
    const uint64_t hlen = detail::load_le64(d);
    if (hlen >= 2 && hlen <= n - 8 && d[8] == '{') {
      *hint = "sg2 model files are used directly; other safetensors files are not supported";
      return "a safetensors file, not a checkpoint";
    }
  }
  if (head.rfind("{", 0) == 0 || head.rfind("version https://git-lfs", 0) == 0)
    return head.rfind("version https://git-lfs", 0) == 0 ? "a Git LFS pointer file (the real file was never downloaded)"
                                                         : "a JSON/text file, not a checkpoint";
  // Plain text (a README, an error page, a list of URLs saved under the checkpoint's name). A
  // protocol 0 pickle is text too, but ends with its STOP opcode '.'; checkpoints are binary.
  if (d[0] != 0x80) {
    bool text = true;
    for (size_t k = 0; k < n && k < 4096 && text; ++k)
      text = (d[k] >= 0x20 && d[k] < 0x7f) || d[k] == '\n' || d[k] == '\r' || d[k] == '\t' || d[k] >= 0xc2;
    size_t last = n;
    while (last > 0 && std::isspace(d[last - 1])) --last;
    if (text && !(last > 0 && d[last - 1] == '.')) {
      const std::string shown =
          pickle::printable(std::string(reinterpret_cast<const char*>(d + i), std::min<size_t>(n - i, 40)), 40);
      return "a text file, not a checkpoint (it starts with '" + shown +
             "'); checkpoints are binary: pickles start with the byte 0x80, torch.save zips with 'PK'";
    }
  }
  return "";
}

}  // namespace

std::unique_ptr<Checkpoint> open_checkpoint(const uint8_t* data, size_t size, const std::string& what) {
  auto ck = std::make_unique<Checkpoint>(data, size, what);
  if (size == 0) fail(ErrorKind::bad_file, what, ": empty file (0 bytes), not a checkpoint");
  std::string hint;
  if (std::string foreign = sniff_foreign(data, size, &hint); !foreign.empty())
    throw Error(ErrorKind::bad_file, what + ": " + foreign, hint);
  if (looks_like_zip(data, size)) {
    ck->container = Container::torch_zip;
    ck->zip = std::make_unique<ZipArchive>(data, size, what);
    std::unique_ptr<ZipStorageTable> table;
    ck->root = parse_zip_checkpoint(ck->doc, *ck->zip, data, &table);
    ck->storages = std::move(table);
    const ZipEntry* pkl = nullptr;
    for (const ZipEntry& e : ck->zip->entries())
      if (e.name.size() >= 8 && e.name.compare(e.name.size() - 8, 8, "data.pkl") == 0) pkl = &e;
    if (pkl != nullptr && pkl->size >= 2 && data[pkl->data_offset] == 0x80)
      ck->pickle_protocol = data[pkl->data_offset + 1];
  } else if (looks_like_legacy_torch(data, size)) {
    ck->container = Container::torch_legacy;
    auto table = std::make_unique<LegacyStorageTable>();
    ck->root = parse_legacy_stream(ck->doc, data, size, 0, what, table.get());
    ck->storages = std::move(table);
    ck->pickle_protocol = 2;
  } else {
    if (pickle::opcode_name(data[0]) == nullptr) {
      std::string shown =
          pickle::printable(std::string(reinterpret_cast<const char*>(data), std::min<size_t>(size, 16)), 24);
      fail(ErrorKind::bad_file, what, ": not a checkpoint: unknown format (it starts with bytes ",
           first_bytes(data, size), ", '", shown, "'; pickles start with 0x80, torch.save zips with 'PK')");
    }
    ck->container = Container::pickle;
    if (data[0] == 0x80 && size >= 2) ck->pickle_protocol = data[1];
    ck->root = pickle::parse(ck->doc, data, size, 0, what);
  }
  ck->tensors = std::make_unique<TensorReader>(ck->doc, data, size, what, ck->storages.get());
  return ck;
}

}  // namespace sg2::readers
