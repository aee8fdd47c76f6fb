// sg2 bench --device cpu: throughput and latency of the CPU backend (apps/bench_cpu.cpp).
#pragma once

#include <cxxopts.hpp>

#include <string>

#include "sg2/model.h"
#include "sg2/tensor.h"

namespace sg2::cli {

/// Times Generator::generate on the CPU for each --batch size (wall clock, median and range of
/// --iters runs after --warmup; CPU seconds too) with --threads threads, prints img/s beside the
/// official PyTorch CPU figures of `reference_json`'s "cpu_official" (apps/bench_reference.json;
/// docs/performance.md §6), and with --accuracy compares the oneDNN path with the reference ops.
/// `config_name` is empty for --network.
/// PSNR in dB of `b` against `a` over the [-1, 1] range (10 log10(4 / MSE); infinity when equal),
/// and max |a - b| in *max_abs. Both tensors hold the same number of elements.
double psnr_pm1(const Tensor& a, const Tensor& b, double* max_abs);

int run_cpu_bench(const cxxopts::ParseResult& args, const Model& model, const std::string& label,
                  const std::string& config_name, const char* reference_json);

}  // namespace sg2::cli
