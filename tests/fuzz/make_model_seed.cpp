// Writes small, valid model files as seeds of fuzz_model_file (scripts/fuzz.sh runs it): random
// weights; skip, resnet and orig; conditional and not; 1, 3 and 4 channels. Usage: make_model_seed DIR
#include <cstdio>
#include <string>

#include "sg2/error.h"
#include "sg2/model.h"
#include "sg2/random_model.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_model_seed DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    sg2::save_model_file(
        dir + "/skip8.safetensors",
        sg2::make_random_model(sg2::make_config(8, 64, 8, 4, 4, 0, 3, 2, sg2::Architecture::skip, 256.0f, 1), 1));
    sg2::save_model_file(
        dir + "/resnet8_cond.safetensors",
        sg2::make_random_model(sg2::make_config(8, 64, 8, 4, 4, 3, 1, 1, sg2::Architecture::resnet, 256.0f, 1), 2));
    sg2::save_model_file(
        dir + "/orig4.safetensors",
        sg2::make_random_model(sg2::make_config(4, 32, 4, 2, 2, 0, 4, 1, sg2::Architecture::orig, std::nullopt, 0), 3));
  } catch (const sg2::Error& e) {
    std::fprintf(stderr, "make_model_seed: %s\n", e.what());
    return 1;
  }
  return 0;
}
