// libFuzzer target: the zip reader and the torch.save readers (zip and legacy), and tensor views
// of what they hold. Any input must end in values or an sg2::Error.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "readers/pickle_access.h"
#include "readers/torch_storage.h"
#include "readers/zip_reader.h"
#include "sg2/error.h"

using namespace sg2;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  readers::pickle::Budget budget = readers::pickle::Budget::for_file_size(size, "fuzz.pt");
  readers::pickle::Document doc(&budget);
  try {
    std::unique_ptr<readers::ZipArchive> zip;
    std::unique_ptr<readers::StorageTable> table;
    const readers::pickle::Node* root = nullptr;
    if (readers::looks_like_legacy_torch(data, size)) {
      auto legacy = std::make_unique<readers::LegacyStorageTable>();
      root = readers::parse_legacy_stream(doc, data, size, 0, "fuzz.pt", legacy.get());
      table = std::move(legacy);
    } else {
      zip = std::make_unique<readers::ZipArchive>(data, size, "fuzz.pt");
      for (const readers::ZipEntry& e : zip->entries()) {
        try {
          (void)zip->data(e);
        } catch (const Error&) {
        }
      }
      std::unique_ptr<readers::ZipStorageTable> t;
      root = readers::parse_zip_checkpoint(doc, *zip, data, &t);
      table = std::move(t);
    }
    readers::TensorReader reader(doc, data, size, "fuzz.pt", table.get());
    // Read every tensor of the top-level dict and of dicts one level below (state dicts).
    std::vector<std::pair<const readers::pickle::Node*, const readers::pickle::Node*>> top, inner;
    if (!readers::pickle::dict_items(root, &top)) return 0;
    int count = 0;
    for (const auto& [k, v] : top) {
      if (++count > 500) break;
      try {
        if (readers::TensorReader::is_tensor(v)) (void)reader.read(v, "t");
        if (readers::pickle::dict_items(v, &inner))
          for (const auto& [k2, v2] : inner)
            if (readers::TensorReader::is_tensor(v2) && ++count < 500) (void)reader.read(v2, "t");
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
