// libFuzzer target: the zip reader and the torch.save readers (zip and legacy), and tensor views
// of what they hold. Any input must end in values or an sg2::Error.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "sg2/error.h"
#include "weights_tools/pickle_access.h"
#include "weights_tools/torch_storage.h"
#include "weights_tools/zip_reader.h"

using namespace sg2;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pickle::Budget budget = pickle::Budget::for_file_size(size, "fuzz.pt");
  pickle::Document doc(&budget);
  try {
    std::unique_ptr<weights::ZipArchive> zip;
    std::unique_ptr<weights::StorageTable> table;
    const pickle::Node* root = nullptr;
    if (weights::looks_like_legacy_torch(data, size)) {
      auto legacy = std::make_unique<weights::LegacyStorageTable>();
      root = weights::parse_legacy_stream(doc, data, size, 0, "fuzz.pt", legacy.get());
      table = std::move(legacy);
    } else {
      zip = std::make_unique<weights::ZipArchive>(data, size, "fuzz.pt");
      for (const weights::ZipEntry& e : zip->entries()) {
        try {
          (void)zip->data(e);
        } catch (const Error&) {
        }
      }
      std::unique_ptr<weights::ZipStorageTable> t;
      root = weights::parse_zip_checkpoint(doc, *zip, data, &t);
      table = std::move(t);
    }
    weights::TensorReader reader(doc, data, size, "fuzz.pt", table.get());
    // Read every tensor of the top-level dict and of dicts one level below (state dicts).
    std::vector<std::pair<const pickle::Node*, const pickle::Node*>> top, inner;
    if (!pickle::dict_items(root, &top)) return 0;
    int count = 0;
    for (const auto& [k, v] : top) {
      if (++count > 500) break;
      try {
        if (weights::TensorReader::is_tensor(v)) (void)reader.read(v, "t");
        if (pickle::dict_items(v, &inner))
          for (const auto& [k2, v2] : inner)
            if (weights::TensorReader::is_tensor(v2) && ++count < 500) (void)reader.read(v2, "t");
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
