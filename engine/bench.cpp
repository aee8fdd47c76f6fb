// sg2: timing the generator (sg2/bench.h) through the backend's timing hooks (device_bench.h).
#include "sg2/bench.h"

#include "engine/device_bench.h"
#include "engine/generator_access.h"
#include "sg2/error.h"

namespace sg2 {

namespace {
DeviceBench& hooks(Generator& gen) {
  Backend& b = GeneratorAccess::backend(gen);
  DeviceBench* d = b.device_bench();
  if (d == nullptr) fail(ErrorKind::unsupported, "the ", b.name(), " backend has no timing hooks");
  return *d;
}
}  // namespace

BenchResult bench_generate(Generator& gen, int batch, int warmup, int iters, uint64_t seed) {
  if (batch < 1 || iters < 1 || warmup < 0)
    fail(ErrorKind::invalid_argument, "bench: batch ", batch, ", iters ", iters, ", warmup ", warmup,
         " (need batch >= 1, iters >= 1, warmup >= 0)");
  return hooks(gen).time_generate(batch, warmup, iters, seed);
}

std::vector<std::pair<std::string, float>> profile_generate(Generator& gen, int batch, uint64_t seed) {
  if (batch < 1) fail(ErrorKind::invalid_argument, "bench: profile batch ", batch, " (need >= 1)");
  return hooks(gen).profile(batch, seed);
}

void release_batches(Generator& gen) { hooks(gen).release_batches(); }

std::string device_description(Generator& gen) { return hooks(gen).device_description(); }

}  // namespace sg2
