// sg2 bench: throughput, latency and memory of the generator on a GPU, and the accuracy of each
// precision against sg2's own fp32 (performance.md §2 and §4); on the CPU (--device cpu, or by
// default where no GPU is usable) bench_cpu.h's table; --end-to-end bench_e2e.h's.
//
//   sg2 bench --config ffhq1024-f --batch 1,8,32,128 --precision auto,fp16,tf32,fp32
//   sg2 bench --network model.safetensors --batch 1,32 --accuracy --json
//   sg2 bench                          (the bundled digits32 model, on the GPU or else the CPU)
//
// The table goes to stdout once, at the end; while it runs, a progress bar on stderr (-q: none).
// Timing: CUDA events around each replay of the CUDA graph of the whole generate (mapping with
// psi 1, synthesis with const noise) on random non-zero inputs, after warm-up; median and min-max.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "bench_cpu.h"
#include "bench_e2e.h"
#include "bench_json.h"
#include "cli_util.h"
#include "commands.h"
#include "sg2/bench.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/model.h"
#include "sg2/random_model.h"
#include "sg2/text.h"

namespace {

using namespace sg2;

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
  cli::Options opts = cli::make_options(
      "bench",
      "Throughput, latency, memory and accuracy of the generator on a GPU, or on the CPU (--device cpu; also\n"
      "the default where no GPU is usable). The model: --config NAME (seeded random weights), --network FILE,\n"
      "or by default the bundled digits32 model.");
  opts.option("config", "named configuration with seeded random weights: ffhq1024-f, paper512, paper256", "NAME")
      .option("network",
              "model file or checkpoint instead of --config (default: the bundled digits32 model, env SG2_MODEL "
              "overrides)",
              "FILE")
      .option("batch", "batch sizes, comma separated (default 1,8,32,128; on the CPU 1,8)", "LIST")
      .option("precision", "auto, fp32, tf32, fp16 (comma separated; default all four; on the CPU fp32)", "LIST")
      .option("iters", "timed runs per batch size (default 20; on the CPU 5)", "N")
      .option("warmup", "untimed runs first (default 3; on the CPU 1)", "N")
      .option("device",
              "cuda, cuda:N or cpu (default: cuda when a GPU is usable, else cpu, with a note); --end-to-end also a "
              "list: cuda:0,1 or cuda:all",
              "DEV")
      .option("batch-invariance", "on, off or on,off (both, side by side: the cost of batch invariance)", "LIST", "on")
      .option("threads", "CPU threads, comma separated to compare (--device cpu; default: every core)", "LIST")
      .option("seed", "seed of the random weights and inputs", "S", "0")
      .flag("accuracy", "also PSNR and max|diff| of each precision against sg2's own fp32")
      .flag("accuracy-only", "only the accuracy table")
      .option("profile", "per-step times of one eager run at this batch size (0 = off)", "N", "0")
      .flag("verbose", "print the convolution algorithms chosen")
      .flag("end-to-end",
            "seeds to files as sg2 generate writes them, timed per stage (--seeds, --format png|u8npy, "
            "--png-level, --jobs, --device cuda:0,1 / cuda:all, --outdir, --keep)")
      .option("seeds", "--end-to-end: the seeds (default 0-255)", "LIST")
      .option("format", "--end-to-end: png or u8npy (default png)", "F")
      .option("png-level", "--end-to-end: PNG level 0-9, fast, smallest or default", "L")
      .option("jobs", "--end-to-end: encoder threads (default: the cores available)", "N")
      .option("outdir", "--end-to-end: write here and keep the files (default: a temporary folder, removed)", "DIR")
      .flag("keep", "--end-to-end: keep the temporary folder")
      .flag("json", "print the results as JSON")
      .flag("q,quiet", "no progress on stderr");
  const cli::Args args = cli::parse(opts, argc, argv);
  if (cli::print_help_if_asked(opts, args)) return 0;
  if (args.has("config") && args.has("network"))
    fail(ErrorKind::invalid_argument, "give --config NAME or --network FILE, not both");
  const uint64_t seed = cli::parse_u64("seed", args.get("seed"));
  const bool quiet = args.has("quiet");
  // The device: --device, else a usable GPU, else the CPU (with a note).
  std::string device_text = args.get("device");
  if (!args.has("device")) {
    std::string why;
    device_text = cuda_available(&why) ? "cuda" : "cpu";
    if (device_text == "cpu" && !quiet)
      cli::say("bench", "note",
               "no usable GPU (" + (why.empty() ? std::string("none found") : why) +
                   "): timing the CPU backend; --device cuda insists on a GPU");
  }
  const std::string config_name = args.get("config");
  auto model_and_label = [&](uint64_t weights_seed) -> std::pair<Model, std::string> {
    if (!config_name.empty())
      return {make_random_model(named_config(config_name), weights_seed),
              printable(config_name, 80) + " (random weights, seed " + std::to_string(weights_seed) + ")"};
    const std::string path = cli::network_path(args);
    return {cli::load_network(args, "bench"),
            args.has("network") ? printable(path, 4096) : "the bundled digits32 model (" + printable(path, 4096) + ")"};
  };
  if (args.has("end-to-end")) {
    auto [model, label] = model_and_label(seed);
    return cli::run_end_to_end_bench(args, model, label, device_text);
  }
  for (const char* o : {"seeds", "format", "png-level", "jobs", "outdir", "keep"})
    if (args.has(o)) fail(ErrorKind::invalid_argument, "--", o, " is an option of --end-to-end");
  const std::vector<Device> devices = cli::parse_devices(device_text);
  if (devices.size() != 1)
    fail(ErrorKind::invalid_argument, "--device ", printable(device_text), ": one device (a list is for --end-to-end)");
  const Device device = devices[0];
  const bool on_cpu = device.kind == Device::Kind::cpu;
  std::string why;
  if (!on_cpu && !cuda_available(&why))
    throw Error(ErrorKind::device, "no usable GPU: " + why, "--device cpu times the CPU backend");
  const int iters = args.has("iters") ? int(cli::parse_int("iters", args.get("iters"), 1, 1 << 20)) : on_cpu ? 5 : 20;
  const int warmup = args.has("warmup") ? int(cli::parse_int("warmup", args.get("warmup"), 0, 1 << 20))
                     : on_cpu           ? 1
                                        : 3;
  const int profile_batch = int(cli::parse_int("profile", args.get("profile"), 0, 1 << 16));
  if (!on_cpu && args.has("threads")) fail(ErrorKind::invalid_argument, "--threads applies to --device cpu only");
  auto [model, label] = model_and_label(seed);
  const cli::BenchReference reference;
  if (on_cpu) return cli::run_cpu_bench(args, model, label, config_name, reference, iters, warmup);
  std::vector<Precision> precisions;
  for (const std::string& p : split(args.has("precision") ? args.get("precision") : "auto,fp16,tf32,fp32"))
    precisions.push_back(parse_precision(p));
  std::vector<bool> invariances;
  for (const std::string& v : split(args.get("batch-invariance"))) {
    if (v != "on" && v != "off")
      fail(ErrorKind::invalid_argument, "--batch-invariance: expected on, off or on,off, got '", printable(v), "'");
    invariances.push_back(v == "on");
  }
  const std::vector<int> batches =
      cli::parse_positive_list("batch", args.has("batch") ? args.get("batch") : "1,8,32,128");
  const bool as_json = args.has("json"), verbose = args.has("verbose");
  const bool accuracy_only = args.has("accuracy-only");
  const bool accuracy = accuracy_only || args.has("accuracy");

  cli::Json out;
  out.set("model", label).set("iters", iters).set("warmup", warmup);
  std::ostringstream table, notes;  // the table and what it says about single runs (stdout, at the end)
  char line[512];
  std::snprintf(line, sizeof line, "%-9s %-9s %5s %9s %17s %9s %8s %10s %10s %9s\n", "precision", "invariant", "batch",
                "median ms", "min-max ms", "img/s", "ms/img", "peak MiB", "vs official", "vs floor");
  table << line;
  std::string device_desc;
  cli::Progress progress("sg2 bench",
                         accuracy_only ? 0 : int64_t(precisions.size() * invariances.size() * batches.size()), quiet);
  int64_t runs_done = 0;
  cli::Json profiles;  // name -> steps
  for (Precision p : precisions)
    for (bool invariant : invariances) {
      if (accuracy_only) break;
      GeneratorOptions o;
      o.device = device;
      o.precision = p;
      o.batch_invariant = invariant;
      const char* inv = invariant ? "on" : "off";
      Generator gen = cli::open_generator(model, o);
      device_desc = device_description(gen);
      const std::string pn = to_string(p);
      for (int n : batches) {
        cli::Json row;
        row.set("precision", pn).set("batch_invariant", invariant).set("batch", n);
        BenchResult r;
        try {
          r = bench_generate(gen, n, warmup, iters, seed);
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::out_of_memory) throw;
          std::snprintf(line, sizeof line, "%-9s %-9s %5d  out of device memory\n", pn.c_str(), inv, n);
          table << line;
          row.set("error", e.message());
          out.append("runs", row);
          release_batches(gen);
          progress.set(++runs_done);
          continue;
        }
        progress.set(++runs_done);
        const double med = median(r.ms), mn = *std::min_element(r.ms.begin(), r.ms.end()),
                     mx = *std::max_element(r.ms.begin(), r.ms.end());
        const double img_s = 1000.0 * n / med, ms_img = med / n;
        const double peak_mib = double(r.peak_bytes) / 1048576.0;
        std::string vs_off = "-", vs_floor = "-";
        row.set("median_ms", med).set("min_ms", mn).set("max_ms", mx).set("img_per_s", img_s).set("ms_per_img", ms_img);
        row.set("peak_bytes", int64_t(r.peak_bytes))
            .set("model_bytes", int64_t(r.model_bytes))
            .set("batch_bytes", int64_t(r.batch_bytes))
            .set("workspace_bytes", int64_t(r.workspace_bytes))
            .set("meminfo_delta_bytes", int64_t(r.meminfo_delta))
            .set("output_finite", r.output_finite)
            .set("output_mean_abs", r.output_mean_abs);
        if (!config_name.empty()) {
          double off_n1_ms = 0, off_img_s = 0;
          if (reference.official(config_name, pn, &off_n1_ms, &off_img_s)) {
            // batch 1: latency ratio; larger batches: throughput ratio (official best batch)
            const double ratio = n == 1 ? off_n1_ms / med : img_s / off_img_s;
            vs_off = fmt("%.2fx", ratio);
            row.set("vs_official", ratio);
          }
          const double floor_us = reference.floor_us(config_name, pn, n);
          if (floor_us > 0) {
            vs_floor = fmt("%.1fx", ms_img * 1000.0 / floor_us);
            row.set("floor_us_per_img", floor_us).set("vs_floor", ms_img * 1000.0 / floor_us);
          }
        }
        if (verbose) row.set("conv_algorithms", r.conv_algorithms);
        row.set("cuda_graph", r.graph);
        if (!r.graph) row.set("cuda_graph_error", r.graph_error);
        out.append("runs", row);
        std::snprintf(line, sizeof line, "%-9s %-9s %5d %9.3f %8.3f-%-8.3f %9.1f %8.3f %10.0f %10s %9s%s\n", pn.c_str(),
                      inv, n, med, mn, mx, img_s, ms_img, peak_mib, vs_off.c_str(), vs_floor.c_str(),
                      r.output_finite && r.output_mean_abs > 0 ? (r.graph ? "" : "  (no CUDA graph)")
                                                               : "  (OUTPUT NOT FINITE OR ZERO)");
        table << line;
        if (verbose)
          for (const std::string& a : r.conv_algorithms) table << "    " << a << "\n";
        if (!r.graph) table << "    CUDA graph capture failed: " << r.graph_error << "\n";
      }
      if (profile_batch > 0) {
        release_batches(gen);
        const auto steps = profile_generate(gen, profile_batch, seed);
        double total = 0;
        for (const auto& s : steps) total += s.second;
        std::vector<std::pair<std::string, float>> sorted = steps;
        std::stable_sort(sorted.begin(), sorted.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        notes << "profile " << pn << " (batch invariance " << inv << ") batch " << profile_batch
              << " (eager, events around each step): total " << fmt("%.3f", total) << " ms\n";
        cli::Json pj;
        for (const auto& s : sorted) {
          notes << fmt("  %8.3f ms ", s.second) << fmt("%5.1f%%  ", 100.0 * s.second / total) << s.first << "\n";
          pj.push(cli::Json().set("step", s.first).set("ms", double(s.second)));
        }
        profiles.set(pn + (invariant ? "" : " (batch invariance off)"), pj);
      }
      release_batches(gen);
    }
  progress.finish();

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
      Generator g = cli::open_generator(model, o);
      ref = g.generate(z, c);
    }
    acc << "accuracy vs sg2 fp32 (" << count << " images, const noise, psi 1; PSNR over [-1, 1]):\n";
    for (Precision p : precisions) {
      if (p == Precision::fp32) continue;
      o.precision = p;
      Generator g = cli::open_generator(model, o);
      const Tensor x = g.generate(z, c);
      double mx = 0;
      const double db = cli::psnr_pm1(x, ref, &mx);
      char row[160];
      std::snprintf(row, sizeof row, "  %-5s PSNR %6.2f dB   max|diff| %.5f\n", to_string(p), db, mx);
      acc << row;
      out.append(
          "accuracy",
          cli::Json().set("precision", to_string(p)).set("psnr_db", db).set("max_abs_diff", mx).set("images", count));
    }
  }
  if (profile_batch > 0 && !accuracy_only) out.set("profiles", profiles);
  out.set("device", device_desc);
  out.set("reference_sources",
          cli::Json().set("official", reference.official_source).set("floors", reference.floors_source));
  if (as_json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "sg2 bench: " << label << "\n";
    if (!device_desc.empty()) std::cout << "device: " << device_desc << "\n";
    std::cout << "CUDA-graph replays of the whole generate (mapping + synthesis, const noise); " << warmup
              << " warm-up, " << iters << " timed; vs official: batch 1 latency ratio, else img/s ratio to the best"
              << " official throughput; vs floor: ms/img over the roofline floor\n";
    if (!config_name.empty())
      std::cout << "reference figures (" << reference.device << "): official: " << reference.official_source
                << "; floors: " << reference.floors_source << "\n";
    if (!accuracy_only) std::cout << table.str();
    std::cout << notes.str() << acc.str();
  }
  return 0;
}

}  // namespace

SG2_COMMAND(bench, 70, "throughput, latency, memory and accuracy (sg2 bench --config ffhq1024-f [--device cpu])",
            run_bench);
