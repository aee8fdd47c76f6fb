// sg2 readers: torch.save streams and torch tensors without torch (torch_storage.h).
#include "readers/torch_storage.h"

#include <cstring>
#include <unordered_set>

#include "readers/numpy_decode.h"
#include "readers/pickle_access.h"
#include "sg2/error.h"

namespace sg2::readers {

using pickle::Kind;
using pickle::Node;

namespace {

// torch.serialization MAGIC_NUMBER = 0x1950a86a20f9469cfc6c, as LONG1's little-endian bytes.
const uint8_t kMagic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

std::optional<DType> torch_dtype(const Node* g) {
  const std::string p = pickle::global_path(g);
  if (p == "torch.float32" || p == "torch.float") return DType::f32;
  if (p == "torch.float16" || p == "torch.half") return DType::f16;
  if (p == "torch.bfloat16") return DType::bf16;
  if (p == "torch.float64" || p == "torch.double") return DType::f64;
  if (p == "torch.int64" || p == "torch.long") return DType::i64;
  if (p == "torch.int32" || p == "torch.int") return DType::i32;
  if (p == "torch.int16" || p == "torch.short") return DType::i16;
  if (p == "torch.int8") return DType::i8;
  if (p == "torch.uint8") return DType::u8;
  if (p == "torch.bool") return DType::boolean;
  return std::nullopt;
}

/// The fields of a storage persistent id.
struct StoragePid {
  DType dtype;
  std::string key;
  uint64_t numel;
  const Node* view = nullptr;  // legacy view_metadata (view_key, offset, view_size) or nullptr
};

StoragePid storage_pid(const Node* pid, const std::string& what) {
  const auto* t = pickle::as_seq(pid);
  if (t == nullptr || t->size() < 5 || pickle::as_str((*t)[0]) != std::optional<std::string_view>("storage"))
    fail(ErrorKind::bad_file, what, ": a persistent id that is not a torch storage (", pickle::describe(pid), ")");
  StoragePid s;
  auto dt = storage_dtype((*t)[1]);
  if (!dt) fail(ErrorKind::unsupported, what, ": unsupported: storage type ", pickle::describe((*t)[1]));
  s.dtype = *dt;
  auto key = pickle::as_str((*t)[2]);
  auto numel = pickle::as_int((*t)[4]);
  if (!key || !numel || *numel < 0) fail(ErrorKind::bad_file, what, ": malformed storage persistent id");
  s.key = std::string(*key);
  s.numel = static_cast<uint64_t>(*numel);
  if (t->size() >= 6 && !pickle::is_none((*t)[5])) s.view = (*t)[5];
  return s;
}

/// The legacy format's persistent id of an nn.Module class: ('module', class, source_file, source).
bool is_module_pid(const Node* pid) {
  const auto* t = pickle::as_seq(pid);
  return t != nullptr && !t->empty() && pickle::as_str((*t)[0]) == std::optional<std::string_view>("module");
}

bool read_dims(const Node* n, std::vector<int64_t>* out) {
  if (pickle::is_call(n, "torch.Size") && pickle::call_args(n).size() == 1) n = pickle::call_args(n)[0];
  const auto* items = pickle::as_seq(n);
  if (items == nullptr || items->size() > 16) return false;
  out->clear();
  for (const Node* d : *items) {
    auto v = pickle::as_int(d);
    if (!v) return false;
    out->push_back(*v);
  }
  return true;
}

}  // namespace

std::optional<DType> storage_dtype(const Node* g) {
  if (g == nullptr || g->kind != Kind::global) return std::nullopt;
  if (g->s != "torch" && g->s != "torch.cuda") return std::nullopt;
  const std::string_view n = g->s2;
  if (n == "FloatStorage") return DType::f32;
  if (n == "HalfStorage") return DType::f16;
  if (n == "BFloat16Storage") return DType::bf16;
  if (n == "DoubleStorage") return DType::f64;
  if (n == "LongStorage") return DType::i64;
  if (n == "IntStorage") return DType::i32;
  if (n == "ShortStorage") return DType::i16;
  if (n == "CharStorage") return DType::i8;
  if (n == "ByteStorage" || n == "UntypedStorage") return DType::u8;
  if (n == "BoolStorage") return DType::boolean;
  return std::nullopt;
}

Storage LegacyStorageTable::resolve(const Node* pid, const std::string& what) {
  StoragePid p = storage_pid(pid, what);
  auto it = storages.find(p.key);
  if (it == storages.end())
    fail(ErrorKind::bad_file, what, ": storage '", pickle::printable(p.key), "' has no data in the stream");
  Storage s = it->second;
  if (p.view != nullptr) {  // a view into the root storage: (view_key, offset, size)
    const auto* v = pickle::as_seq(p.view);
    auto off = v && v->size() == 3 ? pickle::as_int((*v)[1]) : std::nullopt;
    auto len = v && v->size() == 3 ? pickle::as_int((*v)[2]) : std::nullopt;
    if (!off || !len || *off < 0 || *len < 0 || static_cast<uint64_t>(*off) > s.elements ||
        static_cast<uint64_t>(*len) > s.elements - static_cast<uint64_t>(*off))
      fail(ErrorKind::bad_file, what, ": storage view outside its storage '", pickle::printable(p.key), "'");
    s.data += static_cast<size_t>(*off) * static_cast<size_t>(dtype_size(s.dtype));
    s.elements = static_cast<uint64_t>(*len);
  }
  return s;
}

Storage ZipStorageTable::resolve(const Node* pid, const std::string& what) {
  StoragePid p = storage_pid(pid, what);
  auto it = cache_.find(p.key);
  if (it != cache_.end()) return it->second;
  const std::string name = prefix_ + "data/" + p.key;
  const ZipEntry* e = zip_.find(name);
  if (e == nullptr)
    fail(ErrorKind::bad_file, what, ": the archive has no entry '", pickle::printable(name, 80), "' for a storage");
  std::string_view bytes = zip_.data(*e);
  const uint64_t need = p.numel * static_cast<uint64_t>(dtype_size(p.dtype));
  if (p.numel > (uint64_t(1) << 60) || bytes.size() < need)
    fail(ErrorKind::bad_file, what, ": storage entry '", pickle::printable(name, 80), "' has ", bytes.size(),
         " bytes, ", need, " expected");
  Storage s{p.dtype, reinterpret_cast<const uint8_t*>(bytes.data()), p.numel};
  cache_.emplace(p.key, s);
  return s;
}

bool looks_like_legacy_torch(const uint8_t* data, size_t size) {
  return size >= 14 && data[0] == 0x80 && data[1] == 0x02 && data[2] == 0x8a && data[3] == 10 &&
         std::memcmp(data + 4, kMagic, 10) == 0;
}

const Node* parse_legacy_stream(pickle::Document& doc, const uint8_t* data, size_t size, size_t base,
                                const std::string& what, LegacyStorageTable* table) {
  size_t pos = 0;
  auto next = [&]() {
    size_t used = 0;
    const Node* v = pickle::parse(doc, data + pos, size - pos, base + pos, what, &used);
    pos += used;
    return v;
  };
  const Node* magic = next();
  if (magic->kind != Kind::big_integer || magic->i != 0 || magic->s.size() != 10 ||
      std::memcmp(magic->s.data(), kMagic, 10) != 0)
    fail(ErrorKind::bad_file, what, ": not a torch.save stream: its first pickle at byte ", base, " is ",
         pickle::describe(magic), ", not torch's magic number");
  const Node* version = next();
  if (pickle::as_int(version) != std::optional<int64_t>(1001))
    fail(ErrorKind::unsupported, what, ": unsupported torch.save protocol version (", pickle::describe(version), ")");
  const Node* info = next();
  if (auto le = pickle::as_bool(pickle::dict_get(info, "little_endian")); le && !*le)
    fail(ErrorKind::unsupported, what, ": unsupported: a big-endian torch.save stream");
  const size_t pid_start = doc.persistent_ids().size();
  const Node* object = next();
  const size_t pid_end = doc.persistent_ids().size();
  const Node* keys = next();
  const auto* key_list = pickle::as_seq(keys);
  if (key_list == nullptr)
    fail(ErrorKind::bad_file, what, ": the storage key list at byte ", base + pos, " is ", pickle::describe(keys));
  std::unordered_map<std::string, DType> types;
  for (size_t k = pid_start; k < pid_end; ++k) {
    const Node* pid = doc.persistent_ids()[k]->args;
    if (is_module_pid(pid)) continue;  // a pickled module's class (torch.save(model)): detection names it
    StoragePid p = storage_pid(pid, what);
    types.emplace(p.key, p.dtype);
  }
  for (const Node* kn : *key_list) {
    auto key = pickle::as_str(kn);
    if (!key) fail(ErrorKind::bad_file, what, ": a storage key is ", pickle::describe(kn));
    auto t = types.find(std::string(*key));
    if (t == types.end())
      fail(ErrorKind::bad_file, what, ": storage '", pickle::printable(*key), "' is listed but never used");
    if (size - pos < 8)
      fail(ErrorKind::bad_file, what, ": truncated: the data of storage '", pickle::printable(*key),
           "' should start at byte ", base + pos, " but the stream ends at byte ", base + size);
    uint64_t count;
    std::memcpy(&count, data + pos, 8);
    pos += 8;
    const uint64_t esz = static_cast<uint64_t>(dtype_size(t->second));
    if (count > (size - pos) / esz)
      fail(ErrorKind::bad_file, what, ": truncated: storage '", pickle::printable(*key), "' claims ", count,
           " elements (",
           count > (uint64_t(1) << 60) ? std::string("impossibly many") : std::to_string(count * esz) + " bytes",
           ") at byte ", base + pos, " but only ", size - pos, " bytes remain");
    doc.budget().charge(64, "storage index");
    table->storages[std::string(*key)] = Storage{t->second, data + pos, count};
    pos += static_cast<size_t>(count * esz);
  }
  return object;
}

const Node* parse_zip_checkpoint(pickle::Document& doc, const ZipArchive& zip, const uint8_t* file_start,
                                 std::unique_ptr<ZipStorageTable>* table) {
  const ZipEntry* pkl = nullptr;
  for (const ZipEntry& e : zip.entries()) {
    const std::string& n = e.name;
    if (n.find("/code/") != std::string::npos || (n.size() >= 13 && n.compare(n.size() - 13, 13, "constants.pkl") == 0))
      fail(ErrorKind::unsupported, zip.what(),
           ": unsupported: a TorchScript archive (torch.jit.save); sg2 reads torch.save checkpoints");
    const size_t slash = n.find('/');
    const bool top =
        n == "data.pkl" || (slash != std::string::npos && n.compare(slash, std::string::npos, "/data.pkl") == 0);
    if (top) {
      if (pkl != nullptr) fail(ErrorKind::bad_file, zip.what(), ": the archive holds more than one data.pkl");
      pkl = &e;
    }
  }
  if (pkl == nullptr)
    fail(ErrorKind::bad_file, zip.what(), ": a zip archive without data.pkl: not a torch.save checkpoint (",
         zip.entries().size(), " entries)");
  const std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);
  if (const ZipEntry* bo = zip.find(prefix + "byteorder")) {
    std::string_view order = zip.data(*bo);
    if (order.substr(0, 3) == "big")
      fail(ErrorKind::unsupported, zip.what(), ": unsupported: big-endian torch.save data");
  }
  std::string_view bytes = zip.data(*pkl);
  const auto* start = reinterpret_cast<const uint8_t*>(bytes.data());
  const Node* root = pickle::parse(doc, start, bytes.size(), static_cast<size_t>(start - file_start),
                                   zip.what() + " (" + pickle::printable(pkl->name, 80) + ")");
  *table = std::make_unique<ZipStorageTable>(zip, prefix);
  return root;
}

// --- tensors -------------------------------------------------------------------------------

bool TensorReader::is_tensor(const Node* n) {
  const std::string p = pickle::call_path(n);
  return p == "torch._utils._rebuild_tensor_v2" || p == "torch._utils._rebuild_tensor" ||
         p == "torch._utils._rebuild_tensor_v3" || p == "torch._utils._rebuild_parameter" ||
         p == "torch._utils._rebuild_parameter_with_state" || p == "torch._tensor._rebuild_from_type_v2" ||
         p == "numpy.core.multiarray._reconstruct" || p == "numpy.core.numeric._frombuffer" ||
         p == "numpy.core.multiarray.scalar";
}

Storage TensorReader::storage_of(const Node* n, const std::string& name) {
  const std::string ctx = what_ + ": tensor '" + name + "'";
  if (n != nullptr && n->kind == Kind::persistent_id) {
    if (table_ == nullptr) fail(ErrorKind::bad_file, ctx, ": a persistent id in a plain pickle");
    return table_->resolve(n->args, ctx);
  }
  if (!pickle::is_call(n, "torch.storage._load_from_bytes"))
    fail(ErrorKind::bad_file, ctx, ": its storage is a ", pickle::describe(n), ", not a torch storage");
  auto cached = blob_cache_.find(n);
  if (cached != blob_cache_.end()) return cached->second;
  const auto& a = pickle::call_args(n);
  auto blob = a.size() == 1 ? bytes_of(a[0], doc_) : std::nullopt;
  if (!blob) fail(ErrorKind::bad_file, ctx, ": _load_from_bytes without bytes");
  const auto* p = reinterpret_cast<const uint8_t*>(blob->data());
  const size_t base = p >= file_ && p < file_ + file_size_ ? static_cast<size_t>(p - file_) : 0;
  const std::string blob_what = what_ + " (storage of '" + name + "')";
  Storage s;
  if (looks_like_zip(p, blob->size())) {
    nested_zips_.push_back(std::make_unique<ZipArchive>(p, blob->size(), blob_what));
    std::unique_ptr<ZipStorageTable> t;
    const Node* root = parse_zip_checkpoint(doc_, *nested_zips_.back(), file_, &t);
    if (root->kind != Kind::persistent_id)
      fail(ErrorKind::bad_file, blob_what, ": the stream holds a ", pickle::describe(root));
    s = t->resolve(root->args, blob_what);
    nested_tables_.push_back(std::move(t));
  } else {
    LegacyStorageTable t;
    const Node* root = parse_legacy_stream(doc_, p, blob->size(), base, blob_what, &t);
    if (root->kind != Kind::persistent_id)
      fail(ErrorKind::bad_file, blob_what, ": the stream holds a ", pickle::describe(root));
    s = t.resolve(root->args, blob_what);
  }
  blob_cache_.emplace(n, s);
  return s;
}

std::optional<ArrayView> TensorReader::view_at(const Node* n, const std::string& name, int depth) {
  const std::string ctx = what_ + ": tensor '" + name + "'";
  if (depth > 4) fail(ErrorKind::bad_file, ctx, ": tensor wrappers nested too deeply");
  const std::string path = pickle::call_path(n);
  if (path.rfind("numpy.", 0) == 0) return numpy_array(n, doc_, ctx);
  const auto& a = pickle::call_args(n);
  if (path == "torch._utils._rebuild_parameter" || path == "torch._utils._rebuild_parameter_with_state") {
    if (a.empty()) fail(ErrorKind::bad_file, ctx, ": parameter without data");
    auto v = view_at(a[0], name, depth + 1);
    if (!v) fail(ErrorKind::bad_file, ctx, ": parameter data is a ", pickle::describe(a[0]));
    return v;
  }
  if (path == "torch._tensor._rebuild_from_type_v2") {
    // (func, type, args, state): func(*args) is the tensor; the Python subclass is dropped.
    if (a.size() < 3 || a[2]->kind != Kind::tuple) fail(ErrorKind::bad_file, ctx, ": malformed _rebuild_from_type_v2");
    Node call;
    call.kind = Kind::object;
    call.callable = a[0];
    call.args = a[2];
    return view_at(&call, name, depth + 1);
  }
  const bool v2 = path == "torch._utils._rebuild_tensor_v2" || path == "torch._utils._rebuild_tensor";
  const bool v3 = path == "torch._utils._rebuild_tensor_v3";
  if (!v2 && !v3) return std::nullopt;
  if (a.size() < (v3 ? 7u : 4u)) fail(ErrorKind::bad_file, ctx, ": ", path, " with ", a.size(), " arguments");
  Storage s = storage_of(a[0], name);
  ArrayView v;
  auto offset = pickle::as_int(a[1]);
  if (!offset) fail(ErrorKind::bad_file, ctx, ": storage offset is a ", pickle::describe(a[1]));
  if (!read_dims(a[2], &v.shape)) fail(ErrorKind::bad_file, ctx, ": size is a ", pickle::describe(a[2]));
  if (!read_dims(a[3], &v.strides)) fail(ErrorKind::bad_file, ctx, ": stride is a ", pickle::describe(a[3]));
  if (v.shape.size() != v.strides.size())
    fail(ErrorKind::bad_file, ctx, ": size ", shape_to_string(v.shape), " and stride ", shape_to_string(v.strides),
         " differ in length");
  v.offset = *offset;
  v.dtype = s.dtype;
  v.data = s.data;
  v.storage_elements = s.elements;
  if (v3) {
    auto dt = torch_dtype(a[6]);
    if (!dt) fail(ErrorKind::unsupported, ctx, ": unsupported tensor dtype ", pickle::describe(a[6]));
    if (*dt != s.dtype) {  // reinterpret the storage bytes
      const uint64_t bytes = s.elements * static_cast<uint64_t>(dtype_size(s.dtype));
      v.dtype = *dt;
      v.storage_elements = bytes / static_cast<uint64_t>(dtype_size(*dt));
    }
  }
  check_bounds(v, ctx);
  return v;
}

std::optional<ArrayView> TensorReader::view(const Node* n, const std::string& name) { return view_at(n, name, 0); }

std::optional<DType> TensorReader::dtype(const Node* n, const std::string& name) {
  auto v = view(n, name);
  if (!v) return std::nullopt;
  return v->dtype;
}

Tensor TensorReader::read(const Node* n, const std::string& name) {
  auto v = view(n, name);
  if (!v) fail(ErrorKind::bad_file, what_, ": '", name, "' should be a tensor but is a ", pickle::describe(n));
  return to_float_tensor(*v, doc_.budget(), what_ + ": tensor '" + name + "'");
}

}  // namespace sg2::readers
