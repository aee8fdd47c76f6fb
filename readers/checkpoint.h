// sg2 readers: opening a checkpoint file of any container (plain pickle, torch.save zip,
// legacy torch.save), with friendly messages for files that are not checkpoints at all.
#pragma once

#include <memory>
#include <string>

#include "readers/pickle.h"
#include "readers/torch_storage.h"
#include "readers/zip_reader.h"

namespace sg2::readers {

enum class Container { pickle, torch_zip, torch_legacy };

/// "pickle", "torch.save zip", "torch.save legacy".
const char* container_name(Container c);

/// A parsed checkpoint: the top-level value and what is needed to read its tensors. Holds views
/// into the caller's buffer, which must outlive it.
struct Checkpoint {
  Checkpoint(const uint8_t* d, size_t n, std::string w)
      : what(std::move(w)), data(d), size(n), budget(pickle::Budget::for_file_size(n, what)), doc(&budget) {}

  std::string what;  ///< the file's name, for messages
  const uint8_t* data;
  size_t size;
  Container container = Container::pickle;
  int pickle_protocol = 0;  ///< of the top-level pickle (0: protocol 0/1 or unknown)
  pickle::Budget budget;
  pickle::Document doc;
  std::unique_ptr<ZipArchive> zip;
  std::unique_ptr<StorageTable> storages;
  const pickle::Node* root = nullptr;
  std::unique_ptr<TensorReader> tensors;
};

/// Recognises the container from the first bytes and parses the top-level pickle. Files that are
/// not checkpoints get Error(bad_file) saying what they look like: empty, an HTML page, gzip,
/// HDF5, an sg2/safetensors model file, text, unknown binary. Throws Error(bad_file | unsupported)
/// naming `what` and the byte offset where a checkpoint breaks.
std::unique_ptr<Checkpoint> open_checkpoint(const uint8_t* data, size_t size, const std::string& what);

}  // namespace sg2::readers
