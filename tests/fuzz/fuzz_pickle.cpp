// libFuzzer target: the pickle VM (weights_tools/pickle.h) and everything that reads its values.
// Any input must end in a value or an sg2::Error; crashes, sanitizer reports, leaks, hangs and
// other exceptions are findings.
#include <cstddef>
#include <cstdint>

#include "sg2/error.h"
#include "weights_tools/numpy_decode.h"
#include "weights_tools/pickle.h"
#include "weights_tools/pickle_access.h"
#include "weights_tools/torch_storage.h"

using namespace sg2;

namespace {

/// Touches a value and its children down to a small depth and node count, as the converters do.
void walk(const pickle::Node* n, pickle::Document& doc, weights::TensorReader& reader, int depth, int& budget) {
  if (n == nullptr || depth > 6 || --budget < 0) return;
  (void)pickle::describe(n);
  (void)pickle::key_list(n);
  try {
    (void)weights::as_number(n, doc, "fuzz");
    if (weights::TensorReader::is_tensor(n)) (void)reader.read(n, "t");
    (void)weights::bytes_of(n, doc);
  } catch (const Error&) {
  }
  std::vector<std::pair<const pickle::Node*, const pickle::Node*>> items;
  if (pickle::dict_items(n, &items))
    for (const auto& [k, v] : items) {
      walk(k, doc, reader, depth + 1, budget);
      walk(v, doc, reader, depth + 1, budget);
    }
  for (const pickle::Node* c : n->items) walk(c, doc, reader, depth + 1, budget);
  walk(n->callable, doc, reader, depth + 1, budget);
  walk(n->args, doc, reader, depth + 1, budget);
  walk(n->state, doc, reader, depth + 1, budget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pickle::Budget budget = pickle::Budget::for_file_size(size, "fuzz.pkl");
  pickle::Document doc(&budget);
  weights::TensorReader reader(doc, data, size, "fuzz.pkl", nullptr);
  try {
    size_t end = 0;
    const pickle::Node* root = pickle::parse(doc, data, size, 0, "fuzz.pkl", &end);
    int nodes = 2000;
    walk(root, doc, reader, 0, nodes);
    if (end < size) {  // a second pickle after the first, as torch.save legacy streams have
      const pickle::Node* next = pickle::parse(doc, data + end, size - end, end, "fuzz.pkl");
      nodes = 2000;
      walk(next, doc, reader, 0, nodes);
    }
  } catch (const Error&) {
  }
  return 0;
}
