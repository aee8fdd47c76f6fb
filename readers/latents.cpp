// sg2 readers: latents files (sg2/latents.h): .npy, .npz, and torch.save / pickle files read by the
// safe pickle reader (tensors and numpy arrays only; nothing is ever called).
#include "sg2/latents.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "formats/npy_header.h"
#include "formats/zip_inflate.h"
#include "readers/checkpoint.h"
#include "readers/npz.h"
#include "readers/pickle_access.h"
#include "sg2/error.h"
#include "sg2/npy.h"
#include "util/file_util.h"
#include "util/host_memory.h"

namespace sg2 {

namespace {

using readers::TensorReader;
using readers::pickle::Node;
namespace pk = readers::pickle;

constexpr const char* kAccepted =
    "latents files are .npy, .npz (numpy.savez) or torch.save files holding one float tensor (e4e / pSp "
    "latents.pt), a dict with a tensor called 'w', 'ws', 'latent' or 'latents' (or with only one tensor), or "
    "rosinality projector.py's result";

[[noreturn]] void not_latents(const std::string& what, const std::string& holds) {
  fail(ErrorKind::bad_file, what, ": not latents: ", holds, "; ", kAccepted);
}

std::string quoted_names(const std::vector<std::string>& names, size_t max) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > max) s += " and " + std::to_string(names.size() - max) + " more";
  return s;
}

/// Bytes of memory that reading `bytes` more may take, against what the host has: Error(out_of_memory).
void check_memory(uint64_t bytes, const std::string& what, const std::string& for_what) {
  const int64_t avail = detail::host_memory_available();
  if (avail >= 0 && bytes > uint64_t(avail))
    fail_hint(ErrorKind::out_of_memory, "read fewer rows (split the archive) or use a machine with more memory", what,
              ": ", for_what, " needs ", bytes, " bytes of memory, more than the ", avail, " available");
}

/// An .npz's array 'w' (or its only array): only that member is read (an archive of sg2 generate
/// --save-latents also holds seeds, z, c and styles), from a stored member (numpy.savez) or a
/// DEFLATE one (numpy.savez_compressed, inflated with zlib). Its size is checked against the
/// host's memory before anything is allocated.
Latents from_npz(const uint8_t* data, size_t size, const std::string& what) {
  readers::ZipArchive zip(data, size, what);
  std::vector<std::string> names;
  const readers::ZipEntry* pick = nullptr;
  for (const readers::ZipEntry& e : zip.entries()) {
    const std::string shown = pk::printable(e.name, 80);
    if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
      fail(ErrorKind::bad_file, what, ": not an .npz file: member '", shown, "' is not a .npy array");
    names.push_back(pk::printable(e.name.substr(0, e.name.size() - 4), 200));
    if (e.name == "w.npy") pick = &e;
  }
  if (names.empty()) fail(ErrorKind::bad_file, what, ": an .npz file without arrays");
  if (pick == nullptr && names.size() == 1) pick = &zip.entries()[0];
  if (pick == nullptr) {
    const bool has_z = std::find(names.begin(), names.end(), "z") != names.end() ||
                       std::find(names.begin(), names.end(), "seeds") != names.end();
    if (has_z)  // seeds or z without w: images come from those by --seeds, not --ws
      fail_hint(ErrorKind::bad_file, "for the images of its seeds use --seeds (sg2 generate --save-latents saves w)",
                what, ": an .npz with arrays ", quoted_names(names, 8),
                ", none called 'w' (the name NVIDIA's projector uses); save the latents as .npy or under the name w");
    fail(ErrorKind::bad_file, what, ": an .npz with arrays ", quoted_names(names, 8),
         ", none called 'w' (the name NVIDIA's projector uses); save the latents as .npy or under the name w");
  }
  const std::string name = pick->name.substr(0, pick->name.size() - 4);
  const std::string member = what + ": array '" + pk::printable(name, 200) + "'";
  std::vector<uint8_t> inflated;
  const uint8_t* bytes = nullptr;
  size_t nbytes = 0;
  if (pick->method == 8 && (pick->flags & 1) == 0) {  // numpy.savez_compressed
    check_memory(pick->size, what, "inflating array '" + pk::printable(name, 200) + "'");
    zip.check_inflated_size(*pick);  // a bomb's claimed size is refused before any allocation
    inflated.resize(static_cast<size_t>(pick->size));
    detail::inflate_raw(data + pick->data_offset, static_cast<size_t>(pick->compressed_size), inflated.data(),
                        inflated.size(), member);
    if (readers::crc32(inflated.data(), inflated.size()) != pick->crc32)
      fail(ErrorKind::bad_file, member, ": corrupt: the inflated data fails its CRC-32 check");
    bytes = inflated.data();
    nbytes = inflated.size();
  } else {
    if (pick->method != 0 || (pick->flags & 1))
      fail_hint(ErrorKind::unsupported, "save it with numpy.savez or numpy.savez_compressed", member, ": zip method ",
                pick->method, (pick->flags & 1) ? " (encrypted)" : "", " is not supported");
    // The header's shape against memory first (rows x row bytes, checked), then the CRC over it all.
    const NpyHeaderInfo h = peek_npy_header(data + pick->data_offset, static_cast<size_t>(pick->size), member);
    uint64_t count = 1;
    bool overflow = false;
    for (int64_t d : h.shape) overflow = overflow || __builtin_mul_overflow(count, uint64_t(d), &count);
    uint64_t need = 0;  // the payload's copy and its float32 tensor
    overflow = overflow || __builtin_mul_overflow(count, uint64_t(h.item_size + 4), &need);
    const uint64_t payload = pick->size - std::min<uint64_t>(pick->size, h.data_offset);
    if (!overflow && count * h.item_size <= payload)
      check_memory(need, what, "array '" + pk::printable(name, 200) + "' " + shape_to_string(h.shape));
    const std::string_view v = zip.data(*pick);
    bytes = reinterpret_cast<const uint8_t*>(v.data());
    nbytes = v.size();
  }
  Latents out;
  {
    NpyArray a = parse_npy(bytes, nbytes, member);
    std::vector<uint8_t>().swap(inflated);
    out.values = npy_float_tensor(a, member);
  }
  out.format = "npz";
  out.note = "array '" + pk::printable(name, 200) + "' of the .npz";
  return out;
}

/// The latents in the value of a torch.save file or pickle.
class TorchLatents {
 public:
  explicit TorchLatents(readers::Checkpoint& ck) : ck_(ck), what_(ck.what) {}

  Latents pick(const Node* root) {
    Latents out;
    out.format = container_name(ck_.container);
    const std::string file = ck_.container == readers::Container::pickle ? "pickle" : "torch.save file";
    if (TensorReader::is_tensor(root)) {
      out.values = read_float(root, "the tensor");
      out.note = "the tensor of the " + file;
      return out;
    }
    if (std::string cls = pk::torch_module_class(root); !cls.empty())
      not_latents(what_, "a pickled torch module (class " + pk::printable(cls, 80) + "), not latents");
    if (pk::is_dict_like(root)) return from_dict(root, out);
    if (pk::as_seq(root) != nullptr)
      not_latents(what_, "a " + pk::describe(root) +
                             " values (save one tensor instead: torch.save(torch.stack(latents), 'latents.pt'))");
    if (root != nullptr && root->kind == pk::Kind::object) {
      const std::string p = pk::call_path(root);
      fail(ErrorKind::bad_file, what_, ": not latents: its top-level value is a call to ",
           p.empty() ? std::string("a non-global callable") : pk::printable(p, 80),
           ", refused (sg2 never runs code from a pickle; Python would have run it on load); ", kAccepted);
    }
    not_latents(what_, "the " + file + " holds " + pk::describe(root));
  }

 private:
  /// Tensor `n` as float32; Error(bad_file) unless it is a float tensor.
  Tensor read_float(const Node* n, const std::string& name) {
    auto v = ck_.tensors->view(n, name);
    if (!v) not_latents(what_, name + " is a " + pk::describe(n) + ", not a tensor");
    if (v->dtype != readers::DType::f32 && v->dtype != readers::DType::f16 && v->dtype != readers::DType::bf16 &&
        v->dtype != readers::DType::f64)
      fail(ErrorKind::bad_file, what_, ": ", name, " holds ", readers::dtype_name(v->dtype),
           " values, not floats (latents are float32, float16, bfloat16 or float64)");
    return readers::to_float_tensor(*v, ck_.budget, what_ + ": " + name);
  }

  static bool has_tensor(const Node* dict, std::string_view key) {
    return TensorReader::is_tensor(pk::dict_get(dict, key));
  }

  Latents from_dict(const Node* root, Latents& out) {
    std::vector<std::pair<const Node*, const Node*>> items;
    pk::dict_items(root, &items);
    // One image of rosinality's projector: {"img", "latent", "noise"} -> [1, ...].
    if (has_tensor(root, "latent") &&
        (pk::dict_get(root, "img") != nullptr || pk::dict_get(root, "noise") != nullptr)) {
      Tensor t = read_float(pk::dict_get(root, "latent"), "'latent'");
      std::vector<int64_t> shape{1};
      shape.insert(shape.end(), t.shape().begin(), t.shape().end());
      out.values = t.reshaped(shape);
      out.note = "'latent' of one image's rosinality projector result";
      return out;
    }
    // rosinality projector.py: {image path: {"img", "latent", "noise"}}, stacked in file order.
    bool projector = !items.empty();
    for (const auto& kv : items)
      projector = projector && pk::is_dict_like(kv.second) && has_tensor(kv.second, "latent");
    if (projector) return stack_projector(items, out);
    std::vector<std::string> keys, named, tensors;
    const Node* named_node = nullptr;
    const Node* only_tensor = nullptr;
    bool nested = false;  // a dict in the dict: a checkpoint (state dicts), not latents with their names
    for (const auto& kv : items) {
      nested = nested || pk::is_dict_like(kv.second) || !pk::torch_module_class(kv.second).empty();
      auto k = pk::as_str(kv.first);
      const std::string key = k ? pk::printable(*k, 60) : pk::describe(kv.first);
      keys.push_back(key);
      if (!TensorReader::is_tensor(kv.second)) continue;
      tensors.push_back(key);
      only_tensor = kv.second;
      if (k && (*k == "w" || *k == "ws" || *k == "latent" || *k == "latents")) {
        named.push_back(key);
        named_node = kv.second;
      }
    }
    const Node* use = named.size() == 1                                 ? named_node
                      : named.empty() && tensors.size() == 1 && !nested ? only_tensor
                                                                        : nullptr;
    if (use == nullptr) {
      std::string holds = "a dict with keys " + quoted_names(keys, 8);
      if (nested && named.empty())
        holds += " (and dicts in it: a checkpoint? --network reads those)";
      else if (named.size() > 1)
        holds += " (several latent tensors: " + quoted_names(named, 4) + ")";
      else if (tensors.empty())
        holds += " (no tensor)";
      else
        holds += " (" + std::to_string(tensors.size()) + " tensors, none called 'w', 'ws', 'latent' or 'latents')";
      not_latents(what_, holds);
    }
    const std::string name = named.size() == 1 ? named[0] : tensors[0];
    out.values = read_float(use, "tensor '" + name + "'");
    out.note = "tensor '" + name + "' of the dict";
    return out;
  }

  Latents stack_projector(const std::vector<std::pair<const Node*, const Node*>>& items, Latents& out) {
    std::vector<std::string> names;
    std::vector<Tensor> rows;
    for (const auto& kv : items) {
      auto k = pk::as_str(kv.first);
      names.push_back(k ? pk::printable(*k, 60) : pk::describe(kv.first));
      rows.push_back(read_float(pk::dict_get(kv.second, "latent"), "'latent' of image '" + names.back() + "'"));
      if (rows.back().shape() != rows[0].shape())
        fail(ErrorKind::bad_file, what_, ": the projector result's latents differ in shape: image '", names.back(),
             "' has ", rows.back().shape_str(), ", image '", names[0], "' ", rows[0].shape_str());
    }
    std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};
    shape.insert(shape.end(), rows[0].shape().begin(), rows[0].shape().end());
    ck_.budget.charge(static_cast<uint64_t>(rows[0].numel()) * rows.size() * 4, "stacked latents");
    Tensor t(shape);
    const int64_t row = rows[0].numel();
    for (size_t i = 0; i < rows.size(); ++i)
      if (row > 0) std::memcpy(t.data() + static_cast<int64_t>(i) * row, rows[i].data(), static_cast<size_t>(row) * 4);
    out.values = std::move(t);
    out.note = "'latent' of " + std::to_string(rows.size()) + " image" + (rows.size() == 1 ? "" : "s") +
               " of a rosinality projector result (" + quoted_names(names, 2) + ")";
    return out;
  }

  readers::Checkpoint& ck_;
  const std::string& what_;
};

/// True when the zip holds a torch.save pickle (`data.pkl`, or `<folder>/data.pkl`).
bool is_torch_zip(const uint8_t* data, size_t size, const std::string& what) {
  readers::ZipArchive zip(data, size, what);
  for (const readers::ZipEntry& e : zip.entries()) {
    const std::string& n = e.name;
    if (n == "data.pkl" || (n.size() > 9 && n.compare(n.size() - 9, 9, "/data.pkl") == 0)) return true;
  }
  return false;
}

}  // namespace

Latents parse_latents(const uint8_t* data, size_t size, const std::string& what) {
  Latents out;
  if (size == 0) not_latents(what, "an empty file (0 bytes)");
  const bool zip = readers::looks_like_zip(data, size);
  if (size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0) {
    out.values = npy_float_tensor(parse_npy(data, size, what), what);
    out.format = "npy";
  } else if (zip && !is_torch_zip(data, size, what)) {
    out = from_npz(data, size, what);
  } else if (zip || readers::looks_like_legacy_torch(data, size) || data[0] == 0x80) {
    auto ck = readers::open_checkpoint(data, size, what);
    out = TorchLatents(*ck).pick(ck->root);
  } else {
    const size_t n = std::min<size_t>(size, 16);
    not_latents(what, "an unknown format (it starts with '" +
                          pk::printable(std::string_view(reinterpret_cast<const char*>(data), n), 24) +
                          "'; .npy files start with '\\x93NUMPY', zips with 'PK', pickles with \\x80)");
  }
  for (float v : out.values.vec())
    if (!std::isfinite(v))
      fail(ErrorKind::bad_file, what, ": contains NaN or infinite values",
           out.note.empty() ? std::string() : " (" + out.note + ")");
  return out;
}

Latents read_latents(const std::string& path) {
  detail::MappedFile f(path);
  return parse_latents(f.data(), f.size(), path);
}

}  // namespace sg2
