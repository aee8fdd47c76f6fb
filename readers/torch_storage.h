// sg2 readers: torch.save streams and torch tensors, read without torch (spec §7.1, §7a, §7c).
//
// Whitelisted calls interpreted here (PyTorch's torch/_utils.py, torch/_tensor.py, torch/storage.py):
//  * `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, meta])`,
//    `_rebuild_tensor(storage, offset, size, stride)`, `_rebuild_tensor_v3(..., dtype[, meta])`
//  * `torch._utils._rebuild_parameter(tensor, requires_grad, hooks)` and
//    `_rebuild_parameter_with_state(tensor, requires_grad, hooks, state)`
//  * `torch._tensor._rebuild_from_type_v2(func, type, args, state)` with one of the above as func
//  * `torch.storage._load_from_bytes(bytes)`: the bytes are a whole legacy torch.save stream of one
//    storage (or, defensively, a zip-format one)
//  * persistent ids `('storage', torch.XStorage, key, location, numel[, view_metadata])` of the
//    legacy and zip torch.save formats, resolved by a StorageTable
//  * numpy arrays and scalars (numpy_decode.h), which TensorFlow pickles use for every variable.
// Size, stride and storage offset are always honoured (channels-last weights exist); storages of
// float32, float16, bfloat16, float64 (and integer / bool) are read.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "readers/arrays.h"
#include "readers/pickle.h"
#include "readers/zip_reader.h"
#include "sg2/tensor.h"

namespace sg2::readers {

/// A typed storage: `elements` items of `dtype` starting at `data` (a view into the file).
struct Storage {
  DType dtype = DType::f32;
  const uint8_t* data = nullptr;
  uint64_t elements = 0;
};

/// Storage element type of a torch storage class global (`torch.FloatStorage` -> f32,
/// `torch.HalfStorage` -> f16, `torch.BFloat16Storage`, `DoubleStorage`, `LongStorage`, ...,
/// `torch.cuda.*Storage` alike; `torch.UntypedStorage` -> u8). nullopt for anything else.
std::optional<DType> storage_dtype(const pickle::Node* storage_class);

/// Resolves the persistent ids of one torch.save stream.
class StorageTable {
 public:
  virtual ~StorageTable() = default;
  /// `pid` is the value of a persistent_id node. Throws Error(bad_file) naming `what` when it is
  /// malformed or names a storage the stream does not hold.
  virtual Storage resolve(const pickle::Node* pid, const std::string& what) = 0;
};

/// Storages of a legacy torch.save stream: raw data after the pickles, one `int64 count + bytes`
/// record per key in the order of the key list.
class LegacyStorageTable : public StorageTable {
 public:
  Storage resolve(const pickle::Node* pid, const std::string& what) override;
  std::unordered_map<std::string, Storage> storages;
};

/// Storages of a zip torch.save archive: entry `<prefix>data/<key>`.
class ZipStorageTable : public StorageTable {
 public:
  ZipStorageTable(const ZipArchive& zip, std::string prefix) : zip_(zip), prefix_(std::move(prefix)) {}
  Storage resolve(const pickle::Node* pid, const std::string& what) override;

 private:
  const ZipArchive& zip_;
  std::string prefix_;
  std::unordered_map<std::string, Storage> cache_;
};

/// True when `data` starts with the legacy torch.save magic number pickle.
bool looks_like_legacy_torch(const uint8_t* data, size_t size);

/// Parses a legacy torch.save stream (spec §7.1) at `data[0, size)`, whose first byte is at byte
/// `base` of the file: magic number, protocol version 1001, system info (little-endian only), the
/// object, the storage keys, then the raw storage records, which are indexed into `table`.
/// Returns the object. Throws Error(bad_file | unsupported) naming `what` and the byte offset.
const pickle::Node* parse_legacy_stream(pickle::Document& doc, const uint8_t* data, size_t size, size_t base,
                                        const std::string& what, LegacyStorageTable* table);

/// The `data.pkl` object of a zip torch.save archive, with its storages in `*table` (which keeps
/// a reference to `zip`). Throws Error(bad_file) when the archive holds no `*/data.pkl`, and
/// Error(unsupported) for TorchScript archives and big-endian data.
const pickle::Node* parse_zip_checkpoint(pickle::Document& doc, const ZipArchive& zip, const uint8_t* file_start,
                                         std::unique_ptr<ZipStorageTable>* table);

/// Reads tensors out of the values of one checkpoint.
class TensorReader {
 public:
  /// `file` / `file_size`: the whole checkpoint (for byte offsets in messages); `what`: its name;
  /// `table`: persistent-id resolver of the file's torch.save stream (nullptr for plain pickles).
  TensorReader(pickle::Document& doc, const uint8_t* file, size_t file_size, std::string what, StorageTable* table)
      : doc_(doc), file_(file), file_size_(file_size), what_(std::move(what)), table_(table) {}

  /// True when `n` is a tensor-like value this reader understands (cheap: looks at its callable).
  static bool is_tensor(const pickle::Node* n);
  /// A view of the tensor `n`; nullopt when it is not tensor-like. `name` labels messages.
  std::optional<ArrayView> view(const pickle::Node* n, const std::string& name);
  /// The tensor as float32. Throws Error(bad_file) naming `name` when `n` is not a tensor.
  Tensor read(const pickle::Node* n, const std::string& name);
  /// The storage dtype of tensor `n` (nullopt when not a tensor).
  std::optional<DType> dtype(const pickle::Node* n, const std::string& name);

  pickle::Document& doc() { return doc_; }
  const std::string& what() const { return what_; }

 private:
  std::optional<ArrayView> view_at(const pickle::Node* n, const std::string& name, int depth);
  Storage storage_of(const pickle::Node* n, const std::string& name);

  pickle::Document& doc_;
  const uint8_t* file_;
  size_t file_size_;
  std::string what_;
  StorageTable* table_;
  std::unordered_map<const pickle::Node*, Storage> blob_cache_;
  std::vector<std::unique_ptr<ZipArchive>> nested_zips_;
  std::vector<std::unique_ptr<ZipStorageTable>> nested_tables_;
};

}  // namespace sg2::readers
