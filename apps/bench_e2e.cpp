// sg2 bench --end-to-end (bench_e2e.h).
#include "bench_e2e.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "bench_json.h"
#include "cli_util.h"
#include "image_writer.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/stream.h"
#include "sg2/text.h"
#include "task_pool.h"

namespace sg2::cli {

namespace {
// Removes the regular files in the run's own temporary folder, then the folder (never following a
// link: nothing but the bench's files can be in a folder mkdtemp made for it).
void remove_written(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st {};
      const std::string path = dir + "/" + name;
      if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}
}  // namespace

int run_end_to_end_bench(const Args& args, const Model& model, const std::string& label,
                         const std::string& device_text) {
  const std::string seeds_text = has(args, "seeds") ? get(args, "seeds") : "0-255";
  ImageJob job;
  job.seeds = parse_seeds(seeds_text);
  if (model.config.c_dim > 0) job.class_idx = 0;
  const std::string fmt_text = has(args, "format") ? get(args, "format") : "png";
  const OutputFormat fmt = parse_format(fmt_text);
  if (fmt != OutputFormat::png && fmt != OutputFormat::u8npy)
    fail(ErrorKind::invalid_argument, "--end-to-end --format: png or u8npy, not '", printable(fmt_text), "'");
  ImageOutputs io;
  io.format = fmt;
  io.png.level = has(args, "png-level") ? parse_png_level(get(args, "png-level")) : kPngLevelDefault;
  io.jobs = has(args, "jobs") ? static_cast<int>(parse_int("jobs", get(args, "jobs"), 1, 1024)) : available_cores();
  io.stem = [](const StreamImage& im) { return seed_stem(im.key); };
  const std::vector<Device> devices = parse_devices(device_text);
  GeneratorOptions go;
  go.precision = parse_precision(has(args, "precision") ? get(args, "precision") : "auto");
  const std::string inv = get(args, "batch-invariance");
  if (inv != "on" && inv != "off")
    fail(ErrorKind::invalid_argument, "--end-to-end --batch-invariance: on or off, got '", inv, "'");
  go.batch_invariant = inv == "on";
  StreamOptions so;
  if (has(args, "batch")) so.batch = static_cast<int>(parse_int("batch", get(args, "batch"), 1, 1 << 16));
  so.uint8 = true;
  // the folder: --outdir, or a temporary one removed afterwards (--keep keeps it)
  std::string dir;
  if (has(args, "outdir")) {
    dir = get(args, "outdir");
  } else {
    // created new and private (mkdtemp: a random name, mode 0700), never a folder or link that was
    // there before; only the files written into it are removed afterwards
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/sg2-bench-e2e-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr)
      fail(ErrorKind::io, "cannot create a temporary folder in ", printable(base && *base ? base : "/tmp"), ": ",
           std::strerror(errno), " (set TMPDIR, or give --outdir)");
    dir = templ;
  }
  const bool keep = has(args, "keep") || has(args, "outdir");
  OutputDir out(dir);
  io.dir = &out;
  std::vector<Generator> gens;
  for (const Device& d : devices) {
    GeneratorOptions o = go;
    o.device = d;
    gens.push_back(open_generator(model, o));
  }
  std::vector<Generator*> ptrs;
  for (Generator& g : gens) ptrs.push_back(&g);
  std::atomic<int64_t> files{0};
  WriteStats st;
  try {
    st = write_images(ptrs, job, so, io, {}, files);
  } catch (...) {
    if (!keep) remove_written(dir);
    throw;
  }
  out.commit();
  if (!keep) remove_written(dir);

  const double img_s = double(st.images) / st.wall_s, mb = double(st.bytes) / 1e6;
  const int G = static_cast<int>(gens.size());
  // Each stage's time per worker: the generators' threads (one per --device entry) drive the GPUs
  // and wait for copies; the encoder pool's threads encode and write. The busiest names the limit.
  const double gen_busy = (st.stream.prepare_s + st.stream.submit_s + st.stream.wait_s) / G;
  const double pool_busy = (st.encode_s + st.write_s) / io.jobs;
  const char* limit = pool_busy > gen_busy
                          ? (st.encode_s > st.write_s ? "encoding (the encoder pool)" : "writing (the disk)")
                          : "the generators (compute and copies)";
  std::string where;
  for (size_t i = 0; i < gens.size(); ++i) where += (i ? "," : "") + gens[i].device().str();
  if (has(args, "json")) {
    Json j;
    j.set("model", label)
        .set("devices", where)
        .set("precision", to_string(go.precision))
        .set("batch_invariance", inv)
        .set("format", fmt_text)
        .set("png_level", png_level_name(io.png.level))
        .set("jobs", io.jobs)
        .set("images", st.images)
        .set("wall_s", st.wall_s)
        .set("img_per_s", img_s)
        .set("bytes", st.bytes)
        .set("prepare_s", st.stream.prepare_s)
        .set("submit_s", st.stream.submit_s)
        .set("wait_s", st.stream.wait_s)
        .set("sink_s", st.stream.sink_s)
        .set("encode_s", st.encode_s)
        .set("write_s", st.write_s)
        .set("limit", limit);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  char line[512];
  std::printf("sg2 bench --end-to-end: %s\n", label.c_str());
  std::printf("  %lld images (seeds %s) on %s, %s, batch invariance %s, --format %s%s, %d encoder threads\n",
              static_cast<long long>(st.images), printable(seeds_text).c_str(), where.c_str(), to_string(go.precision),
              inv.c_str(), fmt_text.c_str(),
              fmt == OutputFormat::png ? (" --png-level " + png_level_name(io.png.level)).c_str() : "", io.jobs);
  std::snprintf(line, sizeof line, "  %.2f s, %.1f img/s, %.1f MB written (%.1f MB/s)\n", st.wall_s, img_s, mb,
                mb / st.wall_s);
  std::cout << line;
  std::snprintf(
      line, sizeof line,
      "  stages (seconds, summed over threads): generators %.2f (z and mapping %.2f, queueing synthesis %.2f, "
      "waiting for copies %.2f) over %d thread%s; encode %.2f, write %.2f over %d threads; handing on %.2f\n",
      st.stream.prepare_s + st.stream.submit_s + st.stream.wait_s, st.stream.prepare_s, st.stream.submit_s,
      st.stream.wait_s, G, G == 1 ? "" : "s", st.encode_s, st.write_s, io.jobs, st.stream.sink_s);
  std::cout << line;
  std::snprintf(line, sizeof line, "  busiest per worker: generators %.2f s, encoder pool %.2f s: the limit is %s\n",
                gen_busy, pool_busy, limit);
  std::cout << line;
  return 0;
}

}  // namespace sg2::cli
