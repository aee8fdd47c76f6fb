// Writes small, valid model files as seeds of fuzz_model_file (scripts/fuzz.sh runs it): random
// weights; skip, resnet and orig; conditional and not; 1, 3 and 4 channels; and one with an extra
// zero-element tensor (issue 15 item 4: nothing may be copied from or to a null pointer, which the
// fuzzers' UndefinedBehaviorSanitizer reports, so the bounded run of test.sh checks it on every
// build). Usage: make_model_seed DIR
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
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
    // skip8 with `"empty": F32 [0, 5]` added at the front of its header (data offsets are relative
    // to the data section, so they stay valid).
    std::ifstream in(dir + "/skip8.safetensors", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes.at(static_cast<size_t>(i)));
    const std::string header = "{\"empty\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[0,0]}," +
                               bytes.substr(9, static_cast<size_t>(n) - 1);
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    out += header + bytes.substr(8 + static_cast<size_t>(n));
    std::ofstream(dir + "/skip8_empty_tensor.safetensors", std::ios::binary) << out;
  } catch (const std::exception& e) {  // sg2::Error, or a short skip8 file
    std::fprintf(stderr, "make_model_seed: %s\n", e.what());
    return 1;
  }
  return 0;
}
