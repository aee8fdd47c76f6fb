// sg2_kernel_bench: times every candidate implementation of a layer of a configuration against the
// engine's choice and against each other (sg2's kernels and their variants, cuDNN's algorithms),
// with CUDA events (the median of many launches after warm-up, on random inputs, never zeros), and
// checks each candidate's output against the chosen one's. The A/B switches of the kernels live
// here, not in the engine (docs/developing.md "Kernel runner").
//
//   build/sg2_kernel_bench --config ffhq1024-f --layer b256.conv0 --precision fp16 --batch 32
//   build/sg2_kernel_bench --config paper256 --layer all --precision auto,fp16 --batch 1,128
//
// The last table sums up every layer measured: the chosen kernel's time, the layer's floor (max of
// tensor-core time and HBM time at the measured H200 ceilings), and the fastest candidate.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cxxopts.hpp>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dev/layer_bench.h"
#include "engine/cuda/cuda_raii.h"
#include "engine/cuda/device_caps.h"
#include "engine/cuda/device_info.h"
#include "engine/plan.h"
#include "sg2/error.h"
#include "sg2/random_model.h"
#include "sg2/text.h"

using namespace sg2;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string fmt(double v, int prec = 3) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(prec) << v;
  return o.str();
}

std::string diff_text(double d) {
  if (d < 0) return "(reference)";
  std::ostringstream o;
  o << std::scientific << std::setprecision(2) << d;
  return o.str();
}

struct Summary {
  std::string layer, precision, chosen, best;
  int batch;
  double chosen_ms, floor_ms, best_ms;
};

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options opts("sg2_kernel_bench", "time every candidate kernel of a layer against the engine's choice");
  opts.add_options()("config", "named configuration: ffhq1024-f, paper512, paper256",
                     cxxopts::value<std::string>()->default_value("ffhq1024-f"))(
      "layer", "layers: b256.conv0, b64.conv1, b32.skip, ... (comma-separated) or all",
      cxxopts::value<std::string>()->default_value("all"))("precision", "fp32, tf32, fp16, auto (comma-separated)",
                                                           cxxopts::value<std::string>()->default_value("fp16"))(
      "batch", "batch sizes (comma-separated)", cxxopts::value<std::string>()->default_value("32"))(
      "iters", "timed launches per candidate", cxxopts::value<int>()->default_value("20"))(
      "warmup", "untimed launches first", cxxopts::value<int>()->default_value("3"))(
      "slow-ms", "candidates slower than this per launch run three times only",
      cxxopts::value<float>()->default_value("50"))(
      "reference", "also check the chosen output of image 0 against the CPU reference")(
      "quiet", "only the summary table")("h,help", "this help");
  try {
    const auto args = opts.parse(argc, argv);
    if (args.count("help")) {
      std::cout << opts.help() << "\n";
      return 0;
    }
    const ModelConfig cfg = named_config(args["config"].as<std::string>());
    const SynthesisPlan plan = make_synthesis_plan(cfg);
    std::vector<Precision> precisions;
    for (const std::string& p : split(args["precision"].as<std::string>())) precisions.push_back(parse_precision(p));
    std::vector<int> batches;
    for (const std::string& b : split(args["batch"].as<std::string>())) batches.push_back(std::stoi(b));
    const std::vector<std::string> wanted = split(args["layer"].as<std::string>());
    const bool all = wanted.size() == 1 && wanted[0] == "all";
    const bool quiet = args.count("quiet") > 0;

    cuda::DeviceGuard guard(0);
    std::string why;
    if (!cuda::device_usable(0, &why)) fail(ErrorKind::device, why);
    const cuda::DeviceCaps caps = cuda::DeviceCaps::probe(0);
    cuda::Stream stream;
    cuda::CudnnHandle cudnn(stream.get());
    std::cout << "device: " << cuda::device_name(0) << (caps.wgmma ? ", wgmma" : ", no wgmma") << "\n";

    std::vector<Summary> summary;
    int matched = 0;
    for (Precision p : precisions)
      for (int batch : batches)
        for (const BlockPlan& b : plan.blocks) {
          std::vector<const LayerPlan*> layers;
          if (b.skip) layers.push_back(&*b.skip);
          if (b.conv0) layers.push_back(&*b.conv0);
          layers.push_back(&b.conv1);
          for (const LayerPlan* l : layers) {
            const std::string name = l->name.substr(l->name.find('.') + 1);
            if (!all && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
            ++matched;
            dev::LayerOptions lo;
            lo.batch = batch;
            lo.iters = args["iters"].as<int>();
            lo.warmup = args["warmup"].as<int>();
            lo.slow_ms = args["slow-ms"].as<float>();
            lo.reference = args.count("reference") > 0;
            const dev::LayerResult r = dev::bench_conv_layer(b, *l, p, caps, cudnn.get(), lo, stream.get());
            Summary sm{r.layer, to_string(p), "", "", batch, 0, r.floor_ms, 1e30};
            if (!quiet) {
              std::cout << "\n" << r.layer << ": " << r.what << " (floor " << fmt(r.floor_ms) << " ms)\n";
              std::cout << "  " << std::left << std::setw(92) << "candidate" << std::right << std::setw(10)
                        << "median ms" << std::setw(10) << "min ms" << std::setw(9) << "vs *" << std::setw(14)
                        << "max|diff|/scale"
                        << "\n";
            }
            for (const dev::LayerRow& row : r.rows) {
              if (row.chosen) {
                sm.chosen = row.candidate.substr(2);
                sm.chosen_ms = row.timing.median_ms;
              }
              if (row.timing.ran && row.timing.median_ms < sm.best_ms && (row.chosen || row.diff < 1e-2)) {
                sm.best_ms = row.timing.median_ms;
                sm.best = row.candidate;
              }
              if (quiet) continue;
              std::cout << "  " << std::left << std::setw(92) << row.candidate.substr(0, 91) << std::right;
              if (!row.timing.ran) {
                std::cout << "  " << row.timing.note << "\n";
                continue;
              }
              std::cout << std::setw(10) << fmt(row.timing.median_ms) << std::setw(10) << fmt(row.timing.min_ms)
                        << std::setw(9) << fmt(row.timing.median_ms / std::max(sm.chosen_ms, 1e-9), 2) << std::setw(14)
                        << diff_text(row.diff) << (row.timing.note.empty() ? "" : "  " + row.timing.note) << "\n";
            }
            summary.push_back(sm);
          }
        }
    if (matched == 0) fail(ErrorKind::invalid_argument, "--layer: no layer of this configuration is named so");
    std::cout << "\nsummary (" << args["config"].as<std::string>()
              << "): layer, precision, batch, chosen ms, floor ms, "
              << "% of floor, fastest correct candidate (ms)\n";
    double tot_chosen = 0, tot_floor = 0, tot_best = 0;
    for (const Summary& s : summary) {
      tot_chosen += s.chosen_ms;
      tot_floor += s.floor_ms;
      tot_best += s.best_ms;
      std::cout << "  " << std::left << std::setw(12) << s.layer << std::setw(6) << s.precision << std::right
                << std::setw(5) << s.batch << std::setw(10) << fmt(s.chosen_ms) << std::setw(10) << fmt(s.floor_ms)
                << std::setw(7) << fmt(100.0 * s.floor_ms / std::max(s.chosen_ms, 1e-9), 0) << "%  " << std::left
                << s.chosen.substr(0, 70)
                << (s.best.rfind("* ", 0) == 0 ? ""
                                               : "  | faster: " + s.best.substr(0, 60) + " (" + fmt(s.best_ms) + ")")
                << "\n";
    }
    std::cout << "  total: chosen " << fmt(tot_chosen) << " ms, floor " << fmt(tot_floor) << " ms, fastest "
              << fmt(tot_best) << " ms\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "sg2_kernel_bench: error: " << printable(e.what()) << "\n";
    return 1;
  }
}
