// sg2 bench: throughput, latency and memory of the generator on a GPU, and the accuracy of each
// precision against sg2's own fp32 (performance.md §2 and §4).
//
//   sg2 bench --config ffhq1024-f --batch 1,8,32,128 --precision auto,fp16,tf32,fp32
//   sg2 bench --network model.safetensors --batch 1,32 --accuracy --json
//
// Timing: CUDA events around each replay of the CUDA graph of the whole generate (mapping with
// psi 1, synthesis with const noise) on random non-zero inputs, after warm-up; median and min-max.
#include <cxxopts.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench_cpu.h"
#include "bench_e2e.h"
#include "bench_reference_json.h"  // generated from apps/bench_reference.json
#include "cli_util.h"
#include "commands.h"
#include "sg2/bench.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/model.h"
#include "sg2/random_model.h"

namespace {

using namespace sg2;

/// The reference figures of apps/bench_reference.json: roofline floors and the official
/// implementation's measurements, each with its source (printed under the table).
struct Reference {
  nlohmann::json j = nlohmann::json::parse(kBenchReferenceJson);
  /// Floor in us/image of (config, precision) at batch 1 or >= 8; < 0 when unknown.
  double floor_us(const std::string& config, const std::string& precision, int batch) const {
    const auto& c = j["floors"]["configs"];
    if (!c.contains(config) || !c[config].contains(precision)) return -1;
    return c[config][precision][batch == 1 ? 0 : 1].get<double>();
  }
  /// Official (batch-1 ms, best img/s); false when unknown.
  bool official(const std::string& config, const std::string& precision, double* n1_ms, double* img_s) const {
    const auto& c = j["official"]["configs"];
    if (!c.contains(config) || !c[config].contains(precision)) return false;
    *n1_ms = c[config][precision][0].get<double>();
    *img_s = c[config][precision][1].get<double>();
    return true;
  }
};

std::vector<int> parse_int_list(const std::string& s, const char* what) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos || tok.size() > 6)
      fail(ErrorKind::invalid_argument, "bad ", what, " '", tok, "' in '", s, "'");
    v.push_back(std::stoi(tok));
    if (v.back() <= 0) fail(ErrorKind::invalid_argument, what, " must be positive");
  }
  if (v.empty()) fail(ErrorKind::invalid_argument, "no ", what, " given");
  return v;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) v.push_back(tok);
  return v;
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (double(v[n / 2 - 1]) + v[n / 2]);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

int run_bench(int argc, char** argv) {
  cxxopts::Options opts =
      cli::make_options("bench", "Throughput, latency, memory and accuracy of the generator on a GPU (or the CPU)");
  opts.add_options()("config", "named configuration with seeded random weights: ffhq1024-f, paper512, paper256",
                     cxxopts::value<std::string>())("network", "model file or checkpoint instead of --config",
                                                    cxxopts::value<std::string>())(
      "batch", "batch sizes, comma separated (default 1,8,32,128; on the CPU 1,8)", cxxopts::value<std::string>())(
      "precision", "auto, fp32, tf32, fp16 (comma separated; default all four; on the CPU fp32)",
      cxxopts::value<std::string>())("iters", "timed runs per batch size (default 20; on the CPU 5)",
                                     cxxopts::value<int>())("warmup", "untimed runs first (default 3; on the CPU 1)",
                                                            cxxopts::value<int>())(
      "device", "cuda, cuda:N or cpu; --end-to-end also a list: cuda:0,1 or cuda:all",
      cxxopts::value<std::string>()->default_value("cuda"))(
      "batch-invariance", "on, off or on,off (both, side by side: the cost of batch invariance)",
      cxxopts::value<std::string>()->default_value("on"))(
      "threads", "CPU threads, comma separated to compare (--device cpu; default: every core)",
      cxxopts::value<std::string>())("seed", "seed of the random weights and inputs",
                                     cxxopts::value<uint64_t>()->default_value("0"))(
      "accuracy", "also PSNR and max|diff| of each precision against sg2's own fp32")("accuracy-only",
                                                                                      "only the accuracy table")(
      "profile", "per-step times of one eager run at this batch size (0 = off)",
      cxxopts::value<int>()->default_value("0"))("verbose", "print the convolution algorithms chosen")(
      "end-to-end",
      "seeds to files as sg2 generate writes them, timed per stage (--seeds, --format png|u8npy, "
      "--png-level, --jobs, --device cuda:0,1 / cuda:all, --outdir, --keep)")(
      "seeds", "--end-to-end: the seeds (default 0-255)", cxxopts::value<std::string>())(
      "format", "--end-to-end: png or u8npy (default png)", cxxopts::value<std::string>())(
      "png-level", "--end-to-end: PNG level 0-9, fast, smallest or default", cxxopts::value<std::string>())(
      "jobs", "--end-to-end: encoder threads (default: the cores available)", cxxopts::value<std::string>())(
      "outdir", "--end-to-end: write here and keep the files (default: a temporary folder, removed)",
      cxxopts::value<std::string>())("keep", "--end-to-end: keep the temporary folder")(
      "json", "print the results as JSON")("q,quiet", "no progress lines on stderr");
  auto args = cli::parse(opts, argc, argv);
  if (cli::print_help_if_asked(opts, args)) return 0;
  if (args.count("config") == args.count("network"))
    fail(ErrorKind::invalid_argument, "give exactly one of --config NAME or --network FILE");
  if (args.count("end-to-end")) {
    const uint64_t wseed = args["seed"].as<uint64_t>();
    if (args.count("config")) {
      const std::string name = args["config"].as<std::string>();
      return cli::run_end_to_end_bench(args, make_random_model(named_config(name), wseed),
                                       name + " (random weights, seed " + std::to_string(wseed) + ")");
    }
    return cli::run_end_to_end_bench(args, load_model(args["network"].as<std::string>()),
                                     args["network"].as<std::string>());
  }
  for (const char* o : {"seeds", "format", "png-level", "jobs", "outdir", "keep"})
    if (args.count(o)) fail(ErrorKind::invalid_argument, "--", o, " is an option of --end-to-end");
  const Device device = Device::parse(args["device"].as<std::string>());
  const bool on_cpu = device.kind == Device::Kind::cpu;
  std::string why;
  if (!on_cpu && !cuda_available(&why))
    fail(ErrorKind::device, "sg2 bench needs a usable GPU: ", why, " (--device cpu times the CPU backend)");
  if (args.count("iters") && args["iters"].as<int>() < 1) fail(ErrorKind::invalid_argument, "--iters must be >= 1");
  if (args.count("warmup") && args["warmup"].as<int>() < 0) fail(ErrorKind::invalid_argument, "--warmup must be >= 0");
  if (!on_cpu && args.count("threads")) fail(ErrorKind::invalid_argument, "--threads applies to --device cpu only");
  const bool quiet = args.count("quiet") > 0;
  const uint64_t seed = args["seed"].as<uint64_t>();
  std::string label;
  Model model;
  std::string config_name;
  if (args.count("config")) {
    config_name = args["config"].as<std::string>();
    model = make_random_model(named_config(config_name), seed);
    label = config_name + " (random weights, seed " + std::to_string(seed) + ")";
  } else {
    label = args["network"].as<std::string>();
    model = load_model(label);
  }
  if (on_cpu) return cli::run_cpu_bench(args, model, label, config_name, kBenchReferenceJson);
  std::vector<Precision> precisions;
  for (const std::string& p :
       split(args.count("precision") ? args["precision"].as<std::string>() : "auto,fp16,tf32,fp32"))
    precisions.push_back(parse_precision(p));
  std::vector<bool> invariances;
  for (const std::string& v : split(args["batch-invariance"].as<std::string>())) {
    if (v != "on" && v != "off")
      fail(ErrorKind::invalid_argument, "--batch-invariance: expected on, off or on,off, got '", v, "'");
    invariances.push_back(v == "on");
  }
  const std::vector<int> batches =
      parse_int_list(args.count("batch") ? args["batch"].as<std::string>() : "1,8,32,128", "batch size");
  const int iters = args.count("iters") ? args["iters"].as<int>() : 20;
  const int warmup = args.count("warmup") ? args["warmup"].as<int>() : 3;
  const bool as_json = args.count("json") > 0, verbose = args.count("verbose") > 0;
  const bool accuracy_only = args.count("accuracy-only") > 0;
  const bool accuracy = accuracy_only || args.count("accuracy") > 0;
  const int profile_batch = args["profile"].as<int>();

  nlohmann::json out;
  out["model"] = label;
  out["iters"] = iters;
  out["warmup"] = warmup;
  std::ostringstream table;
  char line[512];
  std::snprintf(line, sizeof line, "%-9s %-9s %5s %9s %17s %9s %8s %10s %10s %9s\n", "precision", "invariant", "batch",
                "median ms", "min-max ms", "img/s", "ms/img", "peak MiB", "vs official", "vs floor");
  table << line;
  std::string device_desc;
  const Reference reference;
  for (Precision p : precisions)
    for (bool invariant : invariances) {
      if (accuracy_only) break;
      GeneratorOptions o;
      o.device = device;
      o.precision = p;
      o.batch_invariant = invariant;
      const char* inv = invariant ? "on" : "off";
      Generator gen(model, o);
      device_desc = device_description(gen);
      const std::string pn = to_string(p);
      for (int n : batches) {
        nlohmann::json row;
        row["precision"] = pn;
        row["batch_invariant"] = invariant;
        row["batch"] = n;
        BenchResult r;
        try {
          r = bench_generate(gen, n, warmup, iters, seed);
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::out_of_memory) throw;
          std::snprintf(line, sizeof line, "%-9s %-9s %5d  out of device memory\n", pn.c_str(), inv, n);
          table << line;
          row["error"] = e.what();
          out["runs"].push_back(row);
          release_batches(gen);
          continue;
        }
        const double med = median(r.ms), mn = *std::min_element(r.ms.begin(), r.ms.end()),
                     mx = *std::max_element(r.ms.begin(), r.ms.end());
        const double img_s = 1000.0 * n / med, ms_img = med / n;
        const double peak_mib = double(r.peak_bytes) / 1048576.0;
        std::string vs_off = "-", vs_floor = "-";
        row["median_ms"] = med;
        row["min_ms"] = mn;
        row["max_ms"] = mx;
        row["img_per_s"] = img_s;
        row["ms_per_img"] = ms_img;
        row["peak_bytes"] = r.peak_bytes;
        row["model_bytes"] = r.model_bytes;
        row["batch_bytes"] = r.batch_bytes;
        row["workspace_bytes"] = r.workspace_bytes;
        row["meminfo_delta_bytes"] = r.meminfo_delta;
        row["output_finite"] = r.output_finite;
        row["output_mean_abs"] = r.output_mean_abs;
        if (!config_name.empty()) {
          double off_n1_ms = 0, off_img_s = 0;
          if (reference.official(config_name, pn, &off_n1_ms, &off_img_s)) {
            // batch 1: latency ratio; larger batches: throughput ratio (official best batch)
            const double ratio = n == 1 ? off_n1_ms / med : img_s / off_img_s;
            vs_off = fmt("%.2fx", ratio);
            row["vs_official"] = ratio;
          }
          const double floor_us = reference.floor_us(config_name, pn, n);
          if (floor_us > 0) {
            vs_floor = fmt("%.1fx", ms_img * 1000.0 / floor_us);
            row["floor_us_per_img"] = floor_us;
            row["vs_floor"] = ms_img * 1000.0 / floor_us;
          }
        }
        if (verbose) row["conv_algorithms"] = r.conv_algorithms;
        row["cuda_graph"] = r.graph;
        if (!r.graph) row["cuda_graph_error"] = r.graph_error;
        out["runs"].push_back(row);
        std::snprintf(line, sizeof line, "%-9s %-9s %5d %9.3f %8.3f-%-8.3f %9.1f %8.3f %10.0f %10s %9s%s\n", pn.c_str(),
                      inv, n, med, mn, mx, img_s, ms_img, peak_mib, vs_off.c_str(), vs_floor.c_str(),
                      r.output_finite && r.output_mean_abs > 0 ? (r.graph ? "" : "  (no CUDA graph)")
                                                               : "  (OUTPUT NOT FINITE OR ZERO)");
        table << line;
        if (!as_json && !quiet) std::cerr << line << std::flush;  // progress
        if (verbose && !as_json)
          for (const std::string& a : r.conv_algorithms) std::cerr << "    " << a << "\n";
        if (!r.graph && !as_json) std::cerr << "    CUDA graph capture failed: " << r.graph_error << "\n";
      }
      if (profile_batch > 0) {
        release_batches(gen);
        const auto steps = profile_generate(gen, profile_batch, seed);
        double total = 0;
        for (const auto& s : steps) total += s.second;
        std::vector<std::pair<std::string, float>> sorted = steps;
        std::stable_sort(sorted.begin(), sorted.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        std::ostringstream ps;
        ps << "profile " << pn << " (batch invariance " << inv << ") batch " << profile_batch
           << " (eager, events around each step): total " << fmt("%.3f", total) << " ms\n";
        nlohmann::json pj;
        for (const auto& s : sorted) {
          ps << fmt("  %8.3f ms ", s.second) << fmt("%5.1f%%  ", 100.0 * s.second / total) << s.first << "\n";
          pj.push_back({{"step", s.first}, {"ms", s.second}});
        }
        out["profiles"][pn + (invariant ? "" : " (batch invariance off)")] = pj;
        if (!as_json) std::cout << ps.str();
      }
      release_batches(gen);
    }

  std::ostringstream acc;
  if (accuracy) {
    // 4 images of a named config, 16 (classes cycled) of a network; const noise, psi 1
    const int count = config_name.empty() ? 16 : 4;
    std::vector<uint32_t> seeds;
    std::vector<int> classes;
    for (int i = 0; i < count; ++i) {
      seeds.push_back(uint32_t(seed + uint64_t(i)));
      classes.push_back(model.config.c_dim > 0 ? i % model.config.c_dim : 0);
    }
    const Tensor z = z_from_seeds(seeds, model.config.z_dim);
    const Tensor c = model.config.c_dim > 0 ? one_hot(classes, model.config.c_dim) : Tensor();
    GeneratorOptions o;
    o.device = device;
    o.precision = Precision::fp32;
    o.max_batch = 4;
    Tensor ref;
    {
      Generator g(model, o);
      ref = g.generate(z, c);
    }
    acc << "accuracy vs sg2 fp32 (" << count << " images, const noise, psi 1; PSNR over [-1, 1]):\n";
    for (Precision p : precisions) {
      if (p == Precision::fp32) continue;
      o.precision = p;
      Generator g(model, o);
      const Tensor x = g.generate(z, c);
      double mx = 0;
      const double db = cli::psnr_pm1(x, ref, &mx);
      char row[160];
      std::snprintf(row, sizeof row, "  %-5s PSNR %6.2f dB   max|diff| %.5f\n", to_string(p), db, mx);
      acc << row;
      out["accuracy"].push_back(
          {{"precision", to_string(p)}, {"psnr_db", db}, {"max_abs_diff", mx}, {"images", count}});
    }
  }
  out["device"] = device_desc;
  out["reference_sources"] = {{"official", reference.j["official"]["source"]},
                              {"floors", reference.j["floors"]["source"]}};
  if (as_json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "sg2 bench: " << label << "\n";
    if (!device_desc.empty()) std::cout << "device: " << device_desc << "\n";
    std::cout << "CUDA-graph replays of the whole generate (mapping + synthesis, const noise); " << warmup
              << " warm-up, " << iters << " timed; vs official: batch 1 latency ratio, else img/s ratio to the best"
              << " official throughput; vs floor: ms/img over the roofline floor\n";
    if (!config_name.empty())
      std::cout << "reference figures (" << reference.j["device"].get<std::string>()
                << "): official: " << reference.j["official"]["source"].get<std::string>()
                << "; floors: " << reference.j["floors"]["source"].get<std::string>() << "\n";
    if (!accuracy_only) std::cout << table.str();
    std::cout << acc.str();
  }
  return 0;
}

}  // namespace

SG2_COMMAND(bench, 70, "throughput, latency, memory and accuracy (sg2 bench --config ffhq1024-f [--device cpu])",
            run_bench);
