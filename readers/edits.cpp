// sg2 readers: edit direction files (sg2/edit.h): .npy, GANSpace .npz (stored or compressed),
// other .npz and torch.save / pickle files through the latents reader (sg2/latents.h).
#include <cmath>
#include <cstdio>

#include "readers/zip_reader.h"
#include "sg2/edit.h"
#include "sg2/error.h"
#include "sg2/latents.h"
#include "sg2/npy.h"
#include "util/file_util.h"

namespace sg2 {

namespace {

/// The most bytes one GANSpace member may inflate to (lat_comp of 10,000 components of 18 x 512
/// floats is 369 MB; real files hold tens of components).
constexpr uint64_t kMaxMember = uint64_t(512) << 20;

void check_finite(const Tensor& t, const std::string& what, const std::string& which) {
  for (float v : t.vec())
    if (!std::isfinite(v)) fail(ErrorKind::bad_file, what, ": ", which, " contains NaN or infinite values");
}

/// Component `component` of a stack [K, ...] (K > 1), or the whole array.
EditDirection pick_component(Tensor values, const std::string& what, const std::string& which, int component,
                             bool stack) {
  EditDirection out;
  if (!stack) {  // any shape, a 0-d one too: check_edits fits it to the model and names the file
    out.values = std::move(values);
    return out;
  }
  const int64_t k = values.dim(0);
  out.components = static_cast<int>(std::min<int64_t>(k, 1 << 30));
  if (component < 0)
    fail(ErrorKind::invalid_argument, what, ": ", which, " holds ", k,
         " directions (components); choose one with --edit-component K (0-", k - 1, ")");
  if (component >= k)
    fail(ErrorKind::invalid_argument, what, ": --edit-component ", component, " is out of range: ", which, " holds ", k,
         " components (0-", k - 1, ")");
  std::vector<int64_t> shape(values.shape().begin() + 1, values.shape().end());
  out.values = values.slice0(component, component + 1).reshaped(shape);
  return out;
}

/// The member called `name`, the last of several so called as numpy.load takes it (its zipfile keeps
/// the last of repeated names; ZipArchive::find gives the first), or nullptr.
const readers::ZipEntry* npz_member(const readers::ZipArchive& zip, const std::string& name) {
  const readers::ZipEntry* out = nullptr;
  for (const readers::ZipEntry& e : zip.entries())
    if (e.name == name) out = &e;
  return out;
}

}  // namespace

EditDirection read_edit_direction(const std::string& path, int component) {
  detail::MappedFile f(path);
  const uint8_t* data = f.data();
  const size_t size = f.size();
  if (readers::looks_like_zip(data, size)) {
    readers::ZipArchive zip(data, size, path);
    const readers::ZipEntry* comp = npz_member(zip, "lat_comp.npy");
    if (comp != nullptr) {  // GANSpace (decomposition.py: np.savez_compressed of lat_comp, lat_stdev, ...)
      const std::vector<uint8_t> bytes = zip.inflated(*comp, kMaxMember);
      Tensor values = npy_float_tensor(parse_npy(bytes.data(), bytes.size(), path + ": array 'lat_comp'"),
                                       path + ": array 'lat_comp'");
      check_finite(values, path, "array 'lat_comp'");
      if (values.ndim() < 2 || values.ndim() > 3 || values.dim(0) < 1)
        fail(ErrorKind::bad_file, path, ": GANSpace array 'lat_comp' has shape ", values.shape_str(),
             "; expected [K, 1, w_dim] or [K, w_dim]");
      const int64_t k = values.dim(0);
      EditDirection out = pick_component(std::move(values), path, "GANSpace array 'lat_comp'", component, k > 1);
      const int c = k > 1 ? component : 0;
      out.note = "GANSpace component " + std::to_string(c) + " of " + std::to_string(k) + " ('lat_comp')";
      if (const readers::ZipEntry* sd = npz_member(zip, "lat_stdev.npy")) {
        const std::vector<uint8_t> sb = zip.inflated(*sd, kMaxMember);
        const Tensor stdev = npy_float_tensor(parse_npy(sb.data(), sb.size(), path + ": array 'lat_stdev'"),
                                              path + ": array 'lat_stdev'");
        if (stdev.numel() == k) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.9g", double(stdev[c]));
          out.note += std::string(", a unit vector: its lat_stdev (one sigma) is ") + buf;
        }
      }
      return out;
    }
  }
  Latents l = parse_latents(data, size, path);
  const std::string which = l.note.empty() ? std::string("the array") : l.note;
  const bool stack = l.values.ndim() == 3 && l.values.dim(0) > 1;
  EditDirection out = pick_component(std::move(l.values), path, which, component, stack);
  out.note = l.note;
  if (stack) out.note += (out.note.empty() ? "" : ", ") + std::string("direction ") + std::to_string(component);
  return out;
}

}  // namespace sg2
