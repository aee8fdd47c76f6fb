// sg2 bench --device cpu: throughput and latency of the CPU backend (apps/bench_cpu.cpp).
#pragma once

#include <string>

#include "bench_json.h"
#include "cli_options.h"
#include "sg2/model.h"
#include "sg2/tensor.h"

namespace sg2::cli {

/// PSNR in dB of `b` against `a` over the [-1, 1] range (10 log10(4 / MSE); infinity when equal),
/// and max |a - b| in *max_abs. Both tensors hold the same number of elements.
double psnr_pm1(const Tensor& a, const Tensor& b, double* max_abs);

/// Times Generator::generate on the CPU for each --batch size (wall clock, median and range of
/// `iters` runs after `warmup`; CPU seconds too) with --threads threads, prints img/s beside the
/// official PyTorch CPU figures of `reference` (apps/bench_reference.json; docs/performance.md §6),
/// and with --accuracy compares the oneDNN path with the reference ops. `config_name` is empty for
/// a --network (or the bundled) model. The table goes to stdout at the end, progress to stderr.
int run_cpu_bench(const Args& args, const Model& model, const std::string& label, const std::string& config_name,
                  const BenchReference& reference, int iters, int warmup);

}  // namespace sg2::cli
