// sg2 readers: .npz reading (sg2/npy.h read_npz, readers/npz.h) over the zip reader of the
// torch.save checkpoints.
#include "readers/npz.h"

#include "readers/pickle.h"
#include "readers/zip_reader.h"
#include "sg2/error.h"
#include "sg2/npy.h"
#include "util/file_util.h"

namespace sg2 {

namespace readers {

std::vector<std::pair<std::string, NpyArray>> npz_arrays(const uint8_t* data, size_t size, const std::string& what) {
  ZipArchive zip(data, size, what);
  std::vector<std::pair<std::string, NpyArray>> out;
  for (const ZipEntry& e : zip.entries()) {
    const std::string shown = pickle::printable(e.name, 80);
    if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
      fail(ErrorKind::bad_file, what, ": not an .npz file: member '", shown, "' is not a .npy array");
    if (e.method != 0)
      fail_hint(ErrorKind::unsupported, "save it with numpy.savez or numpy.save", what,
                ": a compressed .npz (numpy.savez_compressed) is not supported");
    const std::string_view bytes = zip.data(e);
    out.emplace_back(
        pickle::printable(e.name.substr(0, e.name.size() - 4), 200),
        parse_npy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), what + ": array '" + shown + "'"));
  }
  if (out.empty()) fail(ErrorKind::bad_file, what, ": an .npz file without arrays");
  return out;
}

}  // namespace readers

bool is_npz_file(const std::string& path) {
  detail::MappedFile f(path);
  return readers::looks_like_zip(f.data(), f.size());
}

std::vector<std::pair<std::string, NpyArray>> read_npz(const std::string& path) {
  detail::MappedFile f(path);
  return readers::npz_arrays(f.data(), f.size(), path);
}

}  // namespace sg2
