// libFuzzer target: the pickle VM (readers/pickle.h) and everything that reads its values.
// Any input must end in a value or an sg2::Error; crashes, sanitizer reports, leaks, hangs and
// other exceptions are findings.
#include <cstddef>
#include <cstdint>

#include "readers/numpy_decode.h"
#include "readers/pickle.h"
#include "readers/pickle_access.h"
#include "readers/torch_storage.h"
#include "sg2/error.h"

using namespace sg2;

namespace {

/// Touches a value and its children down to a small depth and node count, as the converters do.
void walk(const readers::pickle::Node* n, readers::pickle::Document& doc, readers::TensorReader& reader, int depth,
          int& budget) {
  if (n == nullptr || depth > 6 || --budget < 0) return;
  (void)readers::pickle::describe(n);
  (void)readers::pickle::key_list(n);
  try {
    (void)readers::as_number(n, doc, "fuzz");
    if (readers::TensorReader::is_tensor(n)) (void)reader.read(n, "t");
    (void)readers::bytes_of(n, doc);
  } catch (const Error&) {
  }
  std::vector<std::pair<const readers::pickle::Node*, const readers::pickle::Node*>> items;
  if (readers::pickle::dict_items(n, &items))
    for (const auto& [k, v] : items) {
      walk(k, doc, reader, depth + 1, budget);
      walk(v, doc, reader, depth + 1, budget);
    }
  for (const readers::pickle::Node* c : n->items) walk(c, doc, reader, depth + 1, budget);
  walk(n->callable, doc, reader, depth + 1, budget);
  walk(n->args, doc, reader, depth + 1, budget);
  walk(n->state, doc, reader, depth + 1, budget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  readers::pickle::Budget budget = readers::pickle::Budget::for_file_size(size, "fuzz.pkl");
  readers::pickle::Document doc(&budget);
  readers::TensorReader reader(doc, data, size, "fuzz.pkl", nullptr);
  try {
    size_t end = 0;
    const readers::pickle::Node* root = readers::pickle::parse(doc, data, size, 0, "fuzz.pkl", &end);
    int nodes = 2000;
    walk(root, doc, reader, 0, nodes);
    if (end < size) {  // a second pickle after the first, as torch.save legacy streams have
      const readers::pickle::Node* next = readers::pickle::parse(doc, data + end, size - end, end, "fuzz.pkl");
      nodes = 2000;
      walk(next, doc, reader, 0, nodes);
    }
  } catch (const Error&) {
  }
  return 0;
}
