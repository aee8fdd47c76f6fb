// sg2: TEMPORARY stand-in for load_model() until the checkpoint readers (branch `loaders`) are
// merged. It is a weak symbol: the real definition replaces it at link time. Remove this file
// once weights_tools/ provides load_model.
#include "sg2/error.h"
#include "sg2/model.h"

namespace sg2 {

__attribute__((weak)) Model load_model(const std::string& path) {
  if (is_model_file(path)) return load_model_file(path);
  fail(ErrorKind::unsupported, path, ": checkpoint reading is not built into this sg2 yet. HINT: use a model file");
}

}  // namespace sg2
