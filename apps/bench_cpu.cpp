// sg2 bench --device cpu (bench_cpu.h).
//
//   sg2 bench --device cpu --config paper256 --batch 1,4 --threads 2
//   sg2 bench --device cpu --network models/digits32/digits32.pkl --batch 1,64
//
// Each timed run is one Generator::generate (mapping with psi 1, synthesis with const noise) of a
// batch of seeded random z; wall clock (steady_clock) and the process's CPU seconds around it.
// On a machine shared with other work the wall clock is noisy: repeat, and compare with the CPU
// seconds, which count only the time the process ran.
#include "bench_cpu.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli_util.h"
#include "sg2/error.h"
#include "sg2/generator.h"

namespace sg2::cli {
namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

int cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? std::max(1, CPU_COUNT(&set)) : 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

double psnr_pm1(const Tensor& a, const Tensor& b, double* max_abs) {
  double mse = 0, mx = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    mse += d * d;
    mx = std::max(mx, std::fabs(d));
  }
  mse /= double(std::max<int64_t>(a.numel(), 1));
  *max_abs = mx;
  return mse == 0 ? INFINITY : 10.0 * std::log10(4.0 / mse);
}

int run_cpu_bench(const Args& args, const Model& model, const std::string& label, const std::string& config_name,
                  const BenchReference& reference, int iters, int warmup) {
  const ModelConfig& cfg = model.config;
  const std::vector<int> batches = parse_positive_list("batch", args.has("batch") ? args.get("batch") : "1,8");
  const std::vector<int> jobs =
      parse_positive_list("threads", args.has("threads") ? args.get("threads") : std::to_string(cores()), 1024);
  const bool as_json = args.has("json"), quiet = args.has("quiet");
  const uint64_t seed = parse_u64("seed", args.get("seed"));
  Precision precision = Precision::fp32;
  if (args.has("precision")) {
    precision = parse_precision(args.get("precision"));
    if (precision == Precision::automatic) precision = Precision::fp32;
  }
  Json out;
  out.set("model", label).set("device", "cpu").set("iters", iters).set("warmup", warmup);
  std::ostringstream table;
  char line[512];
  std::snprintf(line, sizeof line, "%7s %5s %10s %19s %9s %9s %11s %13s\n", "threads", "batch", "median ms",
                "min-max ms", "img/s", "ms/img", "cpu s/img", "vs official");
  table << line;
  const bool timed = !args.has("accuracy-only");
  Progress progress("sg2 bench", timed ? int64_t(jobs.size() * batches.size()) : 0, quiet);
  int64_t runs_done = 0;
  for (int j : timed ? jobs : std::vector<int>{}) {
    GeneratorOptions o;
    o.device = Device{};
    o.precision = precision;
    o.threads = j;
    for (int n : batches) {
      o.max_batch = n;
      Generator gen = open_generator(model, o);
      std::vector<uint32_t> seeds;
      std::vector<int> classes;
      for (int i = 0; i < n; ++i) {
        seeds.push_back(uint32_t(seed + uint64_t(i)));
        classes.push_back(cfg.c_dim > 0 ? i % cfg.c_dim : 0);
      }
      const Tensor z = z_from_seeds(seeds, cfg.z_dim);
      const Tensor c = cfg.c_dim > 0 ? one_hot(classes, cfg.c_dim) : Tensor();
      std::vector<double> ms, cpu;
      bool finite = true;
      for (int it = 0; it < warmup + iters; ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds();
        const Tensor img = gen.generate(z, c);
        const double c1 = cpu_seconds();
        const auto t1 = std::chrono::steady_clock::now();
        for (float v : img.vec()) finite = finite && std::isfinite(v);
        if (it < warmup) continue;
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        cpu.push_back(c1 - c0);
      }
      const double med = median(ms), img_s = 1000.0 * n / med, cpu_img = median(cpu) / n;
      std::string vs = "-";
      Json row;
      row.set("threads", j)
          .set("batch", n)
          .set("median_ms", med)
          .set("min_ms", *std::min_element(ms.begin(), ms.end()))
          .set("max_ms", *std::max_element(ms.begin(), ms.end()))
          .set("img_per_s", img_s)
          .set("ms_per_img", med / n)
          .set("cpu_s_per_img", cpu_img)
          .set("output_finite", finite);
      const double of = config_name.empty() ? -1 : reference.cpu_official(config_name, j, n);
      if (of > 0) {
        const double ratio = of * 1000.0 / (med / n);
        vs = fmt("%.1fx", ratio);
        row.set("official_s_per_img", of).set("vs_official", ratio);
      }
      out.append("runs", row);
      std::snprintf(line, sizeof line, "%7d %5d %10.1f %9.1f-%-9.1f %9.2f %9.1f %11.3f %13s%s\n", j, n, med,
                    *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()), img_s, med / n,
                    cpu_img, vs.c_str(), finite ? "" : "  (OUTPUT NOT FINITE)");
      table << line;
      progress.set(++runs_done);
    }
  }
  progress.finish();
  std::ostringstream acc;
  if (args.has("accuracy") || args.has("accuracy-only")) {
    // the oneDNN path against the reference ops (kernels/ref, the tests' oracle): 2 images
    const Tensor z = z_from_seeds({uint32_t(seed), uint32_t(seed + 1)}, cfg.z_dim);
    const Tensor c = cfg.c_dim > 0 ? one_hot({0, 1 % cfg.c_dim}, cfg.c_dim) : Tensor();
    GeneratorOptions o;
    o.device = Device{};
    o.precision = Precision::fp32;
    const Tensor a = Generator(model, o).generate(z, c);
    o.reference_cpu = true;
    const Tensor b = Generator(model, o).generate(z, c);
    double mx = 0;
    const double psnr = psnr_pm1(a, b, &mx);
    acc << "accuracy vs the reference ops (2 images, const noise, psi 1): max|diff| " << fmt("%.2e", mx) << ", PSNR "
        << fmt("%.1f", psnr) << " dB\n";
    out.set("accuracy", Json().set("max_abs_diff", mx).set("psnr_db", psnr).set("images", 2));
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "sg2 bench: " << label << "\n"
              << "device: cpu, " << cores()
              << " cores available (oneDNN backend); whole generate (mapping + synthesis, const noise), " << warmup
              << " warm-up, " << iters
              << " timed; wall clock; cpu s/img = process CPU seconds per image; vs official: its s/img at the same "
                 "thread count over ours\n";
    if (timed) std::cout << table.str();
    std::cout << acc.str();
    if (timed && !config_name.empty() && reference.has_cpu(config_name))
      std::cout << "official CPU figures: " << reference.cpu_source << "\n";
  }
  return 0;
}

}  // namespace sg2::cli
