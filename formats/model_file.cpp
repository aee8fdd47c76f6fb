// sg2: the model file — safetensors with sg2 metadata (model.h; design.md §5).
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <new>
#include <nlohmann/json.hpp>

#include "formats/json_util.h"
#include "formats/model_file.h"
#include "sg2/error.h"
#include "sg2/model.h"
#include "util/file_util.h"
#include "util/text_util.h"

namespace sg2 {

using json = nlohmann::json;

namespace {

/// The newest format_version this build reads. Square networks are written as 1 (every sg2
/// reads them); a non-square one as 2 (its config has img_height / img_width, and a reader of
/// version 1 only would take it for square: design.md §5), so an older sg2 refuses it by version.
constexpr int kFormatVersion = 2;
int format_version_for(const ModelConfig& c) { return c.square() ? 1 : 2; }

size_t dtype_bytes(const std::string& dt) {
  if (dt == "F32") return 4;
  if (dt == "F16" || dt == "BF16") return 2;
  return 0;
}

}  // namespace

bool is_model_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // never block on a FIFO
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  uint8_t head[9];
  size_t n = std::fread(head, 1, 9, f);
  std::fclose(f);
  if (n < 9) return false;
  uint64_t len = detail::load_le64(head);
  return len >= 2 && len < detail::kMaxModelHeader && head[8] == '{';
}

namespace detail {

Model parse_model_file(const uint8_t* d, const size_t size, const std::string& path) {
  auto bad = [&](auto&&... a) { fail(ErrorKind::bad_file, path, ": ", a...); };
  if (size < 8) bad("not a model file: ", size, " bytes is too short for a safetensors header");
  const uint64_t hlen = load_le64(d);
  if (hlen > kMaxModelHeader || hlen > size - 8)
    bad("not a model file or truncated: header length ", hlen, " exceeds the file size ", size);
  const json header =
      parse_json_bounded(std::string_view(reinterpret_cast<const char*>(d + 8), static_cast<size_t>(hlen)),
                         path + ": not a model file: the safetensors header");
  if (!header.is_object()) bad("the safetensors header is not a JSON object");
  if (!header.contains("__metadata__") || !header["__metadata__"].is_object())
    fail_hint(ErrorKind::bad_file, "convert a checkpoint with `sg2 convert`", path,
              ": a safetensors file without sg2 metadata (no __metadata__)");
  const json& meta = header["__metadata__"];
  auto meta_str = [&](const char* key, bool required) -> std::string {
    if (!meta.contains(key)) {
      if (required)
        fail_hint(ErrorKind::bad_file, "convert the checkpoint with `sg2 convert`", path, ": __metadata__ has no '",
                  key, "'");
      return "";
    }
    if (!meta[key].is_string()) bad("__metadata__['", key, "'] is not a string but ", json_brief(meta[key]));
    return meta[key].get<std::string>();
  };
  if (const std::string format = meta_str("format", true); format != "sg2")
    bad("__metadata__.format is '", printable(format), "', not 'sg2'");
  const std::string fv = meta_str("format_version", true);
  int version = 0;
  {
    const auto r = std::from_chars(fv.data(), fv.data() + fv.size(), version);
    if (fv.empty() || r.ec != std::errc() || r.ptr != fv.data() + fv.size())
      bad("__metadata__.format_version '", printable(fv, 24), "' is not a number");
  }
  if (version > kFormatVersion)
    fail_hint(ErrorKind::unsupported, "update sg2", path, ": model file format_version ", version,
              " is newer than this sg2 reads (", kFormatVersion, ")");
  if (version < 1) bad("format_version ", version, " is invalid");

  Model model;
  model.config = config_from_json(meta_str("config", true), path);
  if (version < format_version_for(model.config))
    bad("format_version ", version, " cannot hold a non-square network (", model.config.height(), "x",
        model.config.width(), "): its config's img_height / img_width need format_version 2");
  model.provenance.source_file = meta_str("source_file", false);
  model.provenance.source_sha256 = meta_str("source_sha256", false);
  model.provenance.source_family = meta_str("source_family", false);
  model.provenance.converter = meta_str("converter", false);

  const uint8_t* data = d + 8 + hlen;
  const uint64_t data_size = size - 8 - hlen;
  // Pass 1: every entry described and checked, nothing copied.
  struct Entry {
    std::string dtype;
    size_t elem_bytes = 0;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0, numel = 0;
  };
  std::map<std::string, Entry> entries;
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string& name = it.key();
    const std::string shown = "tensor '" + printable(name) + "'";
    const json& e = it.value();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      bad(shown, ": header entry lacks dtype, shape or data_offsets");
    if (!e["dtype"].is_string()) bad(shown, ": dtype is not a string but ", json_brief(e["dtype"]));
    Entry t;
    t.dtype = e["dtype"].get<std::string>();
    t.elem_bytes = dtype_bytes(t.dtype);
    if (t.elem_bytes == 0) bad(shown, ": dtype '", printable(t.dtype, 24), "' is not supported (F32, F16, BF16)");
    if (!e["shape"].is_array()) bad(shown, ": shape is not a list but ", json_brief(e["shape"]));
    if (e["shape"].size() > 8) bad(shown, ": shape has ", e["shape"].size(), " dimensions (at most 8)");
    for (const json& v : e["shape"]) {
      const auto dim = json_int(v, 0, int64_t(1) << 32);
      if (!dim) bad(shown, ": shape entry ", json_brief(v), " is not an integer in [0, 2^32]");
      t.shape.push_back(*dim);
    }
    const json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad(shown, ": data_offsets must be two non-negative integers");
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size)
      bad(shown, ": data_offsets [", t.begin, ", ", t.end, "] lie outside the ", data_size,
          " data bytes (truncated file?)");
    // The element count in checked arithmetic: a shape cannot need more bytes than its range.
    uint64_t numel = 1;
    for (int64_t dim : t.shape) {
      if (dim != 0 && numel > (t.end - t.begin) / t.elem_bytes / static_cast<uint64_t>(dim)) {
        numel = UINT64_MAX;
        break;
      }
      numel *= static_cast<uint64_t>(dim);
    }
    if (numel == UINT64_MAX || numel * t.elem_bytes != t.end - t.begin)
      bad(shown, ": ", t.end - t.begin, " bytes do not hold ", t.dtype, " ", shape_to_string(t.shape));
    t.numel = numel;
    ranges.push_back({{t.begin, t.end}, name});
    entries.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  size_t reach = 0;  // the range, among those before i, that ends last (empty ranges overlap nothing)
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first.first == ranges[i].first.second) continue;
    if (ranges[i].first.first < ranges[reach].first.second)
      bad("the data ranges of tensors '", printable(ranges[reach].second), "' and '", printable(ranges[i].second),
          "' overlap");
    if (ranges[i].first.second > ranges[reach].first.second) reach = i;
  }
  {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [name, t] : entries) shapes.emplace(name, t.shape);
    throw_model_problems(shape_problems(model.config, shapes), path);
  }
  // Pass 2: the data, now known to be what the config needs.
  for (auto& [name, t] : entries) {
    std::vector<float> v;
    try {
      v.resize(static_cast<size_t>(t.numel));
    } catch (const std::bad_alloc&) {
      fail(ErrorKind::out_of_memory, path, ": out of host memory for tensor '", printable(name), "' (",
           byte_size(int64_t(t.numel) * 4), ")");
    }
    const uint8_t* p = data + t.begin;
    if (v.empty()) {
      // nothing to copy (and no memcpy from or to a null pointer)
    } else if (t.dtype == "F32") {
      std::memcpy(v.data(), p, v.size() * 4);
    } else if (t.dtype == "F16") {
      for (size_t i = 0; i < v.size(); ++i) v[i] = half_to_float(load_le16(p + 2 * i));
    } else {
      for (size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_float(load_le16(p + 2 * i));
    }
    model.tensors.emplace(name, Tensor(std::move(t.shape), std::move(v)));
  }
  check_model(model, path);
  return model;
}

}  // namespace detail

Model load_model_file(const std::string& path) {
  detail::MappedFile m(path);
  try {
    return detail::parse_model_file(m.data(), m.size(), path);
  } catch (const std::bad_alloc&) {
    fail(ErrorKind::out_of_memory, path, ": out of host memory while reading the model file");
  }
}

void save_model_file(const std::string& path, const Model& model) {
  check_model(model, "cannot save " + path);
  json header = json::object();
  json meta = {
      {"format", "sg2"},
      {"format_version", std::to_string(format_version_for(model.config))},
      {"config", config_to_json(model.config)},
      {"source_file", model.provenance.source_file},
      {"source_sha256", model.provenance.source_sha256},
      {"source_family", model.provenance.source_family},
      {"converter", model.provenance.converter.empty() ? std::string("sg2 ") + version() : model.provenance.converter},
  };
  header["__metadata__"] = meta;
  const auto expected = expected_tensors(model.config);
  uint64_t offset = 0;
  for (const auto& [name, shape] : expected) {
    const Tensor& t = model.at(name);
    uint64_t bytes = static_cast<uint64_t>(t.numel()) * 4;
    header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = detail::json_dump(header);
  h.append((8 - h.size() % 8) % 8, ' ');
  detail::write_file_atomic(path, [&](std::FILE* f) {
    uint8_t len[8];
    uint64_t n = h.size();
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
    detail::write_all(f, len, 8, path);
    detail::write_all(f, h.data(), h.size(), path);
    for (const auto& [name, shape] : expected) {
      const Tensor& t = model.at(name);
      detail::write_all(f, t.data(), static_cast<size_t>(t.numel()) * 4, path);
    }
  });
}

}  // namespace sg2
