// sg2: dataset archives — a streamed zip writer in the layout of stylegan2-ada-pytorch's
// dataset_tool.py, which the official training code (training/dataset.py ImageFolderDataset) reads.
//
//   sg2::DatasetZip zip("out/fakes.zip");                       // writes out/fakes.zip.tmp.PID
//   for (uint64_t i = 0; i < n; ++i)
//     zip.add(sg2::dataset_image_name(i), sg2::encode_png(images[i]));
//   zip.finish(sg2::dataset_json(0, n, std::nullopt));          // dataset.json, then the rename
//
// Layout (dataset_tool.py, `--dest NAME.zip`): image i is `f'{i:08d}'[:5] + '/img' + f'{i:08d}' +
// '.png'` (00000/img00000000.png, ..., 00001/img00001000.png, ...), then `dataset.json` holding
// {"labels": [["00000/img00000000.png", 6], ...]} for a conditional dataset or {"labels": null};
// every entry stored (no compression), no directory entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// The archive name of image `index` in dataset_tool.py's layout: "00000/img00000000.png",
/// "00012/img00012345.png"; indices of 10^8 and more keep every digit, as Python's f'{i:08d}' does
/// ("10000/img100000000.png").
std::string dataset_image_name(uint64_t index);

/// dataset.json for the images with indices [first_index, first_index + count), as dataset_tool.py
/// writes it with json.dumps: {"labels": [["00000/img00000000.png", 7], ...]} where every image
/// has the class `label` (a conditional model generated with --class), or {"labels": null} when
/// `label` is nullopt. Throws Error(invalid_argument) for a negative label.
std::string dataset_json(uint64_t first_index, uint64_t count, std::optional<int64_t> label);

/// A zip archive written as it goes (libarchive): entries stored uncompressed, each with its
/// CRC-32, a real modification time (the time the writer was opened) and mode 0644; zip64 records
/// where the archive needs them (more than 65,535 entries, or past 4 GiB). Memory: about 100 bytes
/// per entry for the central directory, which the zip format writes at the end; nothing else
/// grows with the number of entries.
///
/// No half archive: the archive is written to `path.tmp.PID` beside `path` and renamed onto `path`
/// only by finish(), after every byte is flushed to disk. A writer destroyed or abandon()ed before
/// finish() — an error, an exception, an interrupted run that unwinds — removes the temporary file,
/// and `path` is untouched (an existing file stays as it was). Only a process killed outright
/// (SIGKILL, power loss) can leave `path.tmp.PID` behind, never a file under `path`.
///
/// Not thread-safe: call add() from one thread at a time (entries are written in call order).
/// Move-only.
class DatasetZip {
 public:
  /// Opens `path.tmp.PID` for writing. Throws Error(invalid_argument) when `path` does not end in
  /// ".zip" (the training code requires it), Error(io) naming `path` when its folder is missing or
  /// not writable.
  explicit DatasetZip(const std::string& path);
  ~DatasetZip();
  DatasetZip(DatasetZip&& other) noexcept;
  DatasetZip& operator=(DatasetZip&& other) noexcept;
  DatasetZip(const DatasetZip&) = delete;
  DatasetZip& operator=(const DatasetZip&) = delete;

  /// Appends the entry `name` with `size` bytes. Names: 1-4096 bytes of printable ASCII, '/'
  /// separated, relative, without empty, "." or ".." components and not "dataset.json" (finish()
  /// writes it); else Error(invalid_argument). Names are not checked for duplicates (give each
  /// image its own index). Error(io) naming `path` on a write failure (disk full, ...): the writer
  /// is then closed, its temporary file removed, and every later call throws.
  void add(const std::string& name, const void* data, size_t size);
  void add(const std::string& name, const std::vector<uint8_t>& data) { add(name, data.data(), data.size()); }

  /// Writes `dataset_json` as the last entry, "dataset.json" (dataset_json() makes it), closes
  /// the archive, flushes it to disk and renames it onto `path`. Error(io) naming `path` on
  /// failure (the temporary file is removed). Calls after finish() throw Error(invalid_argument).
  void finish(const std::string& dataset_json);

  /// Closes and removes the temporary file now, leaving `path` untouched (idempotent; also done
  /// by the destructor when finish() was not called).
  void abandon() noexcept;

  const std::string& path() const;       ///< the archive's final name
  const std::string& temp_path() const;  ///< where it is written until finish()
  uint64_t entries() const;              ///< entries added so far (dataset.json not counted)
  uint64_t data_bytes() const;           ///< their bytes so far (without zip headers)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg2
SG2_PUBLIC_END
