// sg2_png_bench: measures sg2's PNG encoder at each compression level against a folder of reference
// PNGs (e.g. the official gen_images.py output for the same seeds, written by PIL at zlib level 6),
// to choose --png-level's default and fast levels on the machine that will run them.
//
//   build/sg2_png_bench REF_DIR [--levels 0-9,fast,smallest] [--threads 16] [--limit 64] [--time-images 8] [--reps 3]
//
// Per level, on the first --limit PNGs of REF_DIR (sorted by name), each decoded to pixels and
// encoded again by sg2: the total size against the reference files' (%), the worst single file, how
// many files are no larger than their reference, the CPU time of one encode on one thread (median
// of --reps on each of the first --time-images images, then their mean), and img/s with --threads
// threads each encoding with its own PngEncoder (wall clock over every image --reps times). Markdown
// on stdout.
// Only the public API (sg2/image.h) is used.
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <cxxopts.hpp>

#include "sg2/error.h"
#include "sg2/image.h"

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct Reference {
  std::string name;
  uint64_t bytes = 0;
  sg2::Image8 image;
};

std::vector<Reference> load_references(const std::string& dir, size_t limit) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) sg2::fail(sg2::ErrorKind::io, dir, ": cannot open the folder");
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".png") == 0) names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  if (names.size() > limit) names.resize(limit);
  if (names.empty()) sg2::fail(sg2::ErrorKind::invalid_argument, dir, ": no .png files");
  std::vector<Reference> refs;
  for (const std::string& n : names) {
    Reference r;
    r.name = n;
    struct stat st {};
    if (::stat((dir + "/" + n).c_str(), &st) != 0) sg2::fail(sg2::ErrorKind::io, dir, "/", n, ": cannot stat");
    r.bytes = static_cast<uint64_t>(st.st_size);
    r.image = sg2::read_png(dir + "/" + n);
    refs.push_back(std::move(r));
  }
  return refs;
}

std::vector<int> parse_levels(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string tok = text.substr(pos, comma - pos);
    const size_t dash = tok.find('-');
    if (dash == std::string::npos) {
      out.push_back(sg2::parse_png_level(tok));
    } else {
      const int a = sg2::parse_png_level(tok.substr(0, dash)), b = sg2::parse_png_level(tok.substr(dash + 1));
      for (int l = a; l <= b; ++l) out.push_back(l);
    }
    pos = comma + 1;
  }
  return out;
}

int run(int argc, char** argv) {
  cxxopts::Options opts("sg2_png_bench", "sg2's PNG encoder at each level against a folder of reference PNGs");
  opts.add_options()("h,help", "show this help")("dir", "folder of reference PNGs", cxxopts::value<std::string>())(
      "levels", "levels to measure: list and ranges of 0-9, fast, smallest",
      cxxopts::value<std::string>()->default_value("0-9,fast,smallest"))(
      "threads", "encoder threads for img/s (default: the cores)", cxxopts::value<int>())(
      "limit", "at most this many reference files", cxxopts::value<int>()->default_value("64"))(
      "time-images", "images timed on one thread", cxxopts::value<int>()->default_value("8"))(
      "reps", "timed encodes per image on one thread (median)", cxxopts::value<int>()->default_value("3"));
  opts.parse_positional({"dir"});
  opts.positional_help("REF_DIR");
  auto args = opts.parse(argc, argv);
  if (args.count("help") || !args.count("dir")) {
    std::cout << opts.help();
    return args.count("help") ? 0 : 2;
  }
  const int threads = args.count("threads") ? std::max(1, args["threads"].as<int>())
                                            : std::max(1u, std::thread::hardware_concurrency());
  const std::vector<int> levels = parse_levels(args["levels"].as<std::string>());
  const std::vector<Reference> refs =
      load_references(args["dir"].as<std::string>(), static_cast<size_t>(std::max(1, args["limit"].as<int>())));
  const size_t timed = std::min(refs.size(), static_cast<size_t>(std::max(1, args["time-images"].as<int>())));
  const int reps = std::max(1, args["reps"].as<int>());
  uint64_t ref_total = 0;
  for (const Reference& r : refs) ref_total += r.bytes;
  const sg2::Image8& f = refs.front().image;
  std::printf("reference: %zu PNGs in %s (first %dx%dx%d), %.1f MB; %d threads, %zu timed images x %d reps\n\n",
              refs.size(), args["dir"].as<std::string>().c_str(), f.width, f.height, f.channels, ref_total / 1e6,
              threads, timed, reps);
  std::printf(
      "| level | bytes vs reference | worst file | files <= reference | ms/img (1 thread, CPU) | img/s (%d threads) "
      "|\n",
      threads);
  std::printf("|---|---|---|---|---|---|\n");
  for (int level : levels) {
    // One thread: CPU time per encode.
    sg2::PngEncoder one(level);
    double ms_sum = 0;
    for (size_t i = 0; i < timed; ++i) {
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        const double t0 = thread_cpu_ms();
        const std::vector<uint8_t> png = one.encode(refs[i].image);
        t.push_back(thread_cpu_ms() - t0);
      }
      std::sort(t.begin(), t.end());
      ms_sum += t[t.size() / 2];
    }
    // All threads (encoders allocated before the clock starts): every image --reps times; the sizes.
    std::vector<uint64_t> sizes(refs.size(), 0);
    std::vector<sg2::PngEncoder> encoders;
    for (int t = 0; t < threads; ++t) encoders.emplace_back(level);
    const size_t jobs = refs.size() * static_cast<size_t>(reps);
    std::atomic<size_t> next{0};
    const auto w0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (size_t j; (j = next.fetch_add(1)) < jobs;) {
          const size_t i = j % refs.size();
          const uint64_t n = encoders[static_cast<size_t>(t)].encode(refs[i].image).size();
          if (j < refs.size()) sizes[i] = n;
        }
      });
    for (std::thread& t : pool) t.join();
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    uint64_t total = 0;
    size_t not_larger = 0;
    double worst = -1e9;
    std::string worst_name;
    for (size_t i = 0; i < refs.size(); ++i) {
      total += sizes[i];
      if (sizes[i] <= refs[i].bytes) ++not_larger;
      const double rel = 100.0 * (double(sizes[i]) / double(refs[i].bytes) - 1.0);
      if (rel > worst) {
        worst = rel;
        worst_name = refs[i].name;
      }
    }
    std::printf("| %s | %+.2f %% | %+.2f %% (%s) | %zu/%zu | %.1f | %.1f |\n", sg2::png_level_name(level).c_str(),
                100.0 * (double(total) / double(ref_total) - 1.0), worst, worst_name.c_str(), not_larger, refs.size(),
                ms_sum / double(timed), double(jobs) / wall_s);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const sg2::Error& e) {
    std::cerr << "sg2_png_bench: error: " << e.what() << "\n";
    return e.kind() == sg2::ErrorKind::invalid_argument ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "sg2_png_bench: error: " << e.what() << "\n";
    return 2;
  }
}
