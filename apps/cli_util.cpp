// sg2 CLI: shared helpers (cli_util.h).
#include "cli_util.h"
#include "network_url.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <limits>
#include <sstream>
#include <system_error>

#include "commands.h"
#include "sg2/convert.h"
#include "sg2/default_model.h"
#include "sg2/download.h"
#include "sg2/error.h"
#include "sg2/interrupt.h"
#include "sg2/npy.h"
#include "sg2/text.h"

extern char** environ;

namespace sg2::cli {

// --- parsing -------------------------------------------------------------------------------

Options make_options(const std::string& command, const std::string& description) {
  return Options("sg2 " + command, description);
}

Args parse(Options& opts, int argc, char** argv) { return opts.parse(argc, argv); }

bool print_help_if_asked(const Options& opts, const Args& args) {
  if (!args.help()) return false;
  std::cout << opts.help();  // flushed and checked at the end (finish_stdout)
  return true;
}

bool has(const Args& args, const std::string& name) { return args.has(name); }

std::string get(const Args& args, const std::string& name) { return args.get(name); }

int64_t parse_int(const std::string& what, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
      std::isspace(static_cast<unsigned char>(text[0])))
    fail(ErrorKind::invalid_argument, "--", what, ": '", printable(text), "' is not an integer");
  if (v < lo || v > hi) fail(ErrorKind::invalid_argument, "--", what, ": ", v, " is out of range [", lo, ", ", hi, "]");
  return v;
}

uint64_t parse_u64(const std::string& what, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    fail(ErrorKind::invalid_argument, "--", what, ": '", printable(text), "' is not a non-negative integer");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE)
    fail(ErrorKind::invalid_argument, "--", what, ": ", printable(text), " is out of range [0, 2^64-1]");
  return v;
}

float parse_float(const std::string& what, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isspace(static_cast<unsigned char>(text[0])))
    fail(ErrorKind::invalid_argument, "--", what, ": '", printable(text), "' is not a number");
  if (!std::isfinite(v))
    fail(ErrorKind::invalid_argument, "--", what, ": ", printable(text), " is not a finite number");
  return v;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string shown(const std::string& text) { return printable(text, 4096); }

std::string trim_blanks(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<int> parse_index_list(const std::string& what, const std::string& text) {
  std::vector<int> out;
  if (text.empty()) fail(ErrorKind::invalid_argument, "--", what, ": empty list");
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string tok = trim_blanks(text.substr(pos, comma - pos));
    const size_t dash = tok.find('-', 1);
    if (dash != std::string::npos) {
      const int64_t a = parse_int(what, trim_blanks(tok.substr(0, dash)), 0, 1 << 20);
      const int64_t b = parse_int(what, trim_blanks(tok.substr(dash + 1)), 0, 1 << 20);
      if (b < a) fail(ErrorKind::invalid_argument, "--", what, ": range '", printable(tok), "' ends below its start");
      for (int64_t i = a; i <= b; ++i) out.push_back(static_cast<int>(i));
    } else {
      out.push_back(static_cast<int>(parse_int(what, tok, 0, 1 << 20)));
    }
    if (comma == text.size()) break;
    pos = comma + 1;
  }
  return out;
}

std::vector<int> parse_positive_list(const std::string& what, const std::string& text, int hi) {
  std::vector<int> out;
  if (text.empty()) fail(ErrorKind::invalid_argument, "--", what, ": empty list");
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(static_cast<int>(parse_int(what, trim_blanks(text.substr(pos, comma - pos)), 1, hi)));
    if (comma == text.size()) break;
    pos = comma + 1;
  }
  return out;
}

void check_grid_size(const GridShape& g) {
  if (int64_t(g.cols) * g.rows > 65536)
    fail(ErrorKind::invalid_argument, "--grid ", g.cols, "x", g.rows, " has ", int64_t(g.cols) * g.rows,
         " cells; a grid holds at most 65536 images");
}

GridShape parse_grid(const std::string& text) {
  const size_t x = text.find_first_of("xX");
  if (x == std::string::npos || text.find_first_of("xX", x + 1) != std::string::npos)
    fail(ErrorKind::invalid_argument, "--grid: '", printable(text), "' is not COLSxROWS (for example 10x1)");
  GridShape g;
  g.cols = static_cast<int>(parse_int("grid", text.substr(0, x), 1, 1 << 16));
  g.rows = static_cast<int>(parse_int("grid", text.substr(x + 1), 1, 1 << 16));
  return g;
}

// --- model, device, batch ------------------------------------------------------------------

void add_model_options(Options& opts, bool with_batch, bool device_lists) {
  const std::string device_help =
      device_lists ? "cpu, cuda, cuda:N, or a list sharing the batches: cuda:0,1 or cuda:all (default: cuda when a "
                     "GPU is usable, else cpu)"
                   : "cpu, cuda or cuda:N (default: cuda when a GPU is usable, else cpu)";
  opts.group("model")
      .option("network",
              "model file (.safetensors from sg2 convert) or checkpoint (.pkl, .pt); default: the bundled "
              "digits32 model (env SG2_MODEL overrides)",
              "FILE")
      .option("device", device_help, "DEV")
      .option("precision",
              "auto (fp16 in the checkpoint's fp16 blocks on CUDA, fp32 on CPU), fp32, tf32 or fp16 "
              "(tf32/fp16: CUDA only)",
              "P", "auto")
      .option("batch-invariance",
              "on (default): an image's bits never depend on the batch it ran in; off (CUDA): "
              "cuDNN for tf32/fp16 convolutions, faster, last bits may change with --batch",
              "on|off", "on")
      .option("threads",
              "threads computing on --device cpu (default: every core, or env SG2_CPU_THREADS); the images "
              "are the same bit for bit with any number",
              "N");
  if (with_batch) opts.option("batch", "images per generator call (default: the backend's choice)", "N");
  opts.group("");
}

GeneratorOptions generator_options(const Args& args, bool device_lists) {
  GeneratorOptions o;
  if (has(args, "device") && !device_lists) o.device = Device::parse(get(args, "device"));
  o.precision = parse_precision(get(args, "precision"));
  const std::string inv = get(args, "batch-invariance");
  if (inv != "on" && inv != "off")
    fail(ErrorKind::invalid_argument, "--batch-invariance: expected on or off, got '", printable(inv), "'");
  o.batch_invariant = inv == "on";
  if (has(args, "batch")) o.max_batch = static_cast<int>(parse_int("batch", get(args, "batch"), 1, 1 << 20));
  if (has(args, "threads")) o.threads = static_cast<int>(parse_int("threads", get(args, "threads"), 1, 1024));
  return o;
}

std::string network_path(const Args& args) {
  if (has(args, "network")) return get(args, "network");
  try {
    return default_model_path();
  } catch (const Error& e) {  // the library's hint in the CLI's terms
    std::string hint = e.hint();
    const std::string api = "pass a model path";
    if (const size_t at = hint.find(api); at != std::string::npos) hint.replace(at, api.size(), "pass --network FILE");
    throw e.with_hint(hint);
  }
}

void say(const std::string& command, const char* level, const std::string& text) {
  std::cerr << "sg2 " << command << ": " << level << ": " << terminal_safe(text) << "\n";
}

namespace {
// The CUDA driver and the GPUs' contexts start on a thread while the checkpoint is read (0.2 s to
// a few seconds, by machine): the GPUs --device names, or every GPU for the default device (what
// choosing it counts). Nothing is reported here: the generators report a bad --device.
std::future<void> start_gpus(const Args& args) {
  const std::string text = has(args, "device") ? get(args, "device") : std::string();
  if (text == "cpu") return {};
  try {
    return std::async(std::launch::async, [text] {
      try {
        if (text.empty()) {
          (void)usable_gpu_count();
          return;
        }
        for (const Device& d : Device::parse_list(text)) warm_up(d);
      } catch (...) {  // a bad --device: the generator says so
      }
    });
  } catch (const std::system_error&) {  // no thread to be had: the GPUs start when the generators open
    return {};
  }
}
}  // namespace

Model load_network(const Args& args, const std::string& command) {
  const std::future<void> gpus = start_gpus(args);  // waited for on return
  std::string path = network_path(args);
  if (is_url(path)) path = network_url_path(path, command, has(args, "quiet"));  // sg2/download.h: the cache
  if (is_model_file(path)) return load_model_file(path);
  // What sg2 convert would say, said here too; what the config records (an estimated w_avg, no
  // stored noise) model_notices says for this run's options instead.
  ConvertResult c = convert_checkpoint_report(path);
  for (const std::string& w : c.report.warnings) say(command, "warning", w);
  return std::move(c.model);
}

Generator open_generator(Model model, const GeneratorOptions& options) {
  const Precision p = options.precision;
  if (p == Precision::tf32 || p == Precision::fp16) {
    std::string why;
    const bool on_cpu = options.device ? options.device->kind == Device::Kind::cpu : !cuda_available(&why);
    if (on_cpu)
      fail(ErrorKind::invalid_argument, "--precision ", to_string(p),
           " needs the CUDA backend, and this run is on the CPU", why.empty() ? std::string() : " (" + why + ")",
           ", which computes in float32 only: use --precision fp32 or auto");
  }
  try {
    return Generator(std::move(model), options);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::device) throw;
    throw with_device_hint(e);
  }
}

Error with_device_hint(const Error& e) {
  const std::string hint = e.hint();
  return e.with_hint(hint.empty() ? "use --device cpu" : hint + ", or use --device cpu");
}

std::vector<Device> parse_devices(const std::string& text) {
  try {
    return Device::parse_list(text);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::device) throw;
    throw with_device_hint(e);
  }
}

void model_notices(const std::string& command, const ModelConfig& cfg, const Truncation* trunc,
                   std::optional<NoiseMode> noise_mode, bool quiet) {
  if (trunc != nullptr && trunc->psi != 1.0f) {
    if (cfg.w_avg_estimated)
      say(command, "warning",
          "--trunc " + short_number(trunc->psi) +
              " truncates toward an estimated w_avg: the checkpoint stores none, so "
              "sg2 used the mean mapping output of random z (sg2 inspect); sg2 convert --w-avg FILE.npy sets your own");
    const bool all_rows = !trunc->cutoff || *trunc->cutoff >= cfg.num_ws;
    if (trunc->psi == 0.0f && all_rows && !quiet)
      say(command, "note", "--trunc 0 replaces every w by w_avg: every seed gives the same image");
  }
  if (noise_mode && *noise_mode == NoiseMode::const_ && cfg.synthesis.use_noise && cfg.noise_const_missing)
    say(command, "warning",
        "this model stores no noise maps (its checkpoint had none), so --noise-mode const adds no noise, the same as "
        "--noise-mode none; --noise-mode random draws noise as rosinality's generate.py does");
}

std::string short_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

int chunk_size(Generator& gen, const Args& args, int64_t images, int workers) {
  // How big a batch fits is the engine's decision (Generator::plan_batch); the CLI words it.
  const GeneratorOptions o = generator_options(args);
  const BatchPlan p = gen.plan_batch(images, o.max_batch, workers);
  if (p.fits) return p.batch;
  const ModelConfig& cfg = gen.config();
  const std::string size = std::to_string(cfg.width()) + "x" + std::to_string(cfg.height());
  const int64_t per = p.bytes_per_image * std::max(1, workers);
  // Quote the value the user gave; when it exceeds the run, say that the run's images are the batch.
  const std::string held =
      o.max_batch > p.batch ? " (here all " + std::to_string(p.batch) + " images of the run at once)" : std::string();
  fail(ErrorKind::invalid_argument, "--batch ", o.max_batch, held, " needs about ", byte_size(per * p.batch),
       " of memory for this ", size, " model on the CPU (about ", byte_size(per), " per image), but ",
       byte_size(p.bytes_available), " are available: use --batch ", p.largest_fitting, " or less");
}

void add_class_option(Options& opts) {
  opts.option("class", "class label K for conditional models (required there): c[0, K] = 1", "K");
}

Tensor class_labels(const Args& args, const ModelConfig& cfg, int64_t n) {
  if (!has(args, "class")) {
    if (cfg.c_dim > 0)
      fail(ErrorKind::invalid_argument, "this model is conditional (", cfg.c_dim,
           " classes): --class K is required, with K in [0, ", cfg.c_dim - 1, "]");
    return Tensor();
  }
  // Any integer first; the range is the model's, so that the message names it (--class -1).
  const int64_t k =
      parse_int("class", get(args, "class"), std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (cfg.c_dim == 0)
    fail(ErrorKind::invalid_argument, "--class: this model is unconditional (c_dim 0); leave --class out");
  if (k < 0 || k >= cfg.c_dim)
    fail(ErrorKind::invalid_argument, "--class ", k, " is out of range: this model has classes 0..", cfg.c_dim - 1);
  return one_hot(std::vector<int>(static_cast<size_t>(n), static_cast<int>(k)), cfg.c_dim);
}

// --- sharding ------------------------------------------------------------------------------

void add_shard_option(Options& opts) {
  opts.option("shard",
              "make only part I of N of the list (0 <= I < N; contiguous blocks in list order); "
              "default: from Slurm job arrays, srun or mpirun (docs/bulk.md); 0/1 = all",
              "I/N");
}

void add_png_level_option(Options& opts) {
  opts.option("png-level",
              "PNG compression: 0-9 as PIL's compress_level (default 6: the official PNGs' size), "
              "fast (~8x faster; ~5 % larger at 1024x1024, sizes vary with the image size: docs/bulk.md) or "
              "smallest; the pixels are the same at every level",
              "L", "default");
}

PngOptions png_options(const Args& args) {
  PngOptions o;
  try {
    o.level = parse_png_level(get(args, "png-level"));
  } catch (const Error& e) {
    throw e.with_message("--png-level: " + e.message());
  }
  return o;
}

ShardPlan plan_shard(const Args& args) {
  const EnvLookup env = process_environment();
  const std::optional<std::string> option =
      has(args, "shard") ? std::optional<std::string>(get(args, "shard")) : std::nullopt;
  ShardPlan p;
  try {
    p.shard = resolve_shard(option, env);
  } catch (const Error& e) {
    if (option) throw e.with_message("--" + e.message());  // "--shard 4/4: I must be below N ..."
    throw e.with_hint("pass --shard I/N to choose this process's part");
  }
  if (option) p.shard.source = "--shard";
  const bool device_open = !has(args, "device") || get(args, "device") == "cuda";
  // (the GPUs are counted only for a launcher's local rank: counting starts the CUDA driver)
  if (device_open && p.shard.local_rank >= 0) {
    const std::optional<int> ordinal = shard_cuda_ordinal(p.shard, usable_gpu_count());
    if (ordinal && cuda_available()) p.gpu = Device::parse("cuda:" + std::to_string(*ordinal));
  }
  return p;
}

std::string shard_note(const ShardPlan& p) {
  if (!p.shard.sharded()) return {};
  std::ostringstream os;
  os << "shard " << p.shard.str() << " (" << p.shard.source << "): ";
  if (p.range.size() == 0)
    os << "nothing to make (" << p.total << " items for " << p.shard.count << " shards)";
  else
    os << "positions " << p.range.begin << "-" << p.range.end - 1 << " of the list's " << p.total << " ("
       << p.range.size() << (p.range.size() == 1 ? " image)" : " images)");
  if (p.gpu) os << " on " << p.gpu->str() << " (local rank " << p.shard.local_rank << ")";
  return os.str();
}

// --- outputs -------------------------------------------------------------------------------

std::string seed_stem(uint64_t seed) { return indexed_stem("seed", static_cast<int64_t>(seed), 4); }

std::string indexed_stem(const std::string& prefix, int64_t index, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(index));
  return prefix + buf;
}

// --- interrupts ----------------------------------------------------------------------------
//
// What the signal handler needs, in fixed storage (it may not allocate): the command's name, the
// live output folder as printed, the folders it created (raw paths, parents first), its live
// count of whole files, and a note. Written before the work starts, read by on_interrupt.

namespace {

constexpr int kMaxCreatedDirs = 32;
constexpr size_t kTextMax = 4096;

struct InterruptReport {
  char command[64] = "";
  char dir[kTextMax] = "";
  char note[kTextMax] = "";
  char created[kMaxCreatedDirs][kTextMax] = {};
  int n_created = 0;
  bool tty = false;
  std::atomic<const OutputDir*> owner{nullptr};
  std::atomic<const std::atomic<int64_t>*> files{nullptr};
};
InterruptReport g_report;

void copy_text(char* dst, const std::string& src) {
  const size_t n = std::min(src.size(), kTextMax - 1);
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

/// Appends to a fixed buffer (async-signal-safe).
struct Line {
  char buf[3 * kTextMax + 512];
  size_t n = 0;
  Line& operator<<(const char* s) {
    while (*s && n + 1 < sizeof buf) buf[n++] = *s++;
    return *this;
  }
  Line& operator<<(int64_t v) {
    char digits[24];
    int k = 0;
    uint64_t u = v < 0 ? uint64_t(-(v + 1)) + 1 : uint64_t(v);
    do {
      digits[k++] = char('0' + u % 10);
      u /= 10;
    } while (u > 0);
    if (v < 0) *this << "-";
    while (k > 0 && n + 1 < sizeof buf) buf[n++] = digits[--k];
    return *this;
  }
};

void on_interrupt(int sig) {
  Line line;
  if (g_report.tty) line << "\r\x1b[K";  // past a progress bar (and the terminal's ^C)
  if (sig == SIGPIPE) return;            // stderr is the closed pipe
  line << "sg2 " << (g_report.command[0] ? g_report.command : "?") << ": interrupted by " << interrupt_signal_name(sig);
  if (g_report.owner.load() != nullptr) {
    const std::atomic<int64_t>* files = g_report.files.load();
    const int64_t n = files ? files->load() : 0;
    int removed = 0;
    for (int i = g_report.n_created - 1; i >= 0; --i)
      if (::rmdir(g_report.created[i]) == 0) ++removed;  // only empty folders go
    if (n > 0)
      line << ": " << n << (n == 1 ? " whole file is" : " whole files are") << " kept in " << g_report.dir
           << " (no partial file is left)";
    else if (removed > 0)
      line << ": nothing was written; the " << (removed == 1 ? "folder " : "folders ") << g_report.dir
           << (removed == 1 ? " it created was removed" : " and the parents it created were removed");
    else
      line << ": nothing was written in " << g_report.dir;
    if (g_report.note[0]) line << "; " << g_report.note;
  } else {
    line << " (no partial file is left)";
  }
  line << "\n";
  (void)!::write(2, line.buf, line.n);
}

void register_output_dir(const OutputDir* dir, const std::string& shown_dir, const std::vector<std::string>& created,
                         const std::atomic<int64_t>& files) {
  g_report.owner.store(nullptr);  // not read while it changes
  copy_text(g_report.dir, shown_dir);
  g_report.note[0] = '\0';
  g_report.n_created = 0;
  for (const std::string& c : created)
    if (g_report.n_created < kMaxCreatedDirs && c.size() < kTextMax)
      copy_text(g_report.created[g_report.n_created++], c);
  g_report.files.store(&files);
  g_report.owner.store(dir);
}

void unregister_output_dir(const OutputDir* dir) {
  const OutputDir* expected = dir;
  g_report.owner.compare_exchange_strong(expected, nullptr);
}

}  // namespace

void install_cli_interrupt_report() {
  g_report.tty = ::isatty(2) == 1;
  set_interrupt_callback(&on_interrupt);
}

void set_interrupt_command(const char* command) { copy_text(g_report.command, command); }

void OutputDir::set_interrupt_note(const std::string& note) {
  if (g_report.owner.load() != this) return;
  g_report.owner.store(nullptr);
  copy_text(g_report.note, note);
  g_report.owner.store(this);
}

std::string duration_text(double seconds) {
  char buf[32];
  if (seconds < 1.0)
    std::snprintf(buf, sizeof buf, "%.0f ms", std::max(1.0, seconds * 1000.0));
  else
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  return buf;
}

OutputDir::OutputDir(const std::string& dir) : dir_(dir) {
  // An empty --outdir is almost always an unset shell variable ($OUT): refuse it rather than
  // scatter files into the current folder.
  if (dir_.empty())
    fail(ErrorKind::invalid_argument, "--outdir is empty; name a folder (--outdir . for the current one)");
  struct stat st {};
  if (::stat(dir_.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      fail(ErrorKind::io, "cannot write to output directory ", shown(dir_), ": it exists and is not a directory");
  } else {
    // The components that do not exist yet, parents first: they are this run's to remove.
    std::vector<std::string> missing;
    for (std::filesystem::path p = std::filesystem::path(dir_).lexically_normal(); !p.empty() && p != p.root_path();
         p = p.parent_path()) {
      if (p.filename().empty() || p.filename() == "." || p.filename() == "..") continue;
      struct stat pst {};
      if (::stat(p.c_str(), &pst) == 0) break;
      missing.insert(missing.begin(), p.string());
    }
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
      for (auto it = missing.rbegin(); it != missing.rend(); ++it) ::rmdir(it->c_str());
      fail(ErrorKind::io, "cannot write to output directory ", shown(dir_), ": ", ec.message());
    }
    created_ = std::move(missing);
  }
  // Probe: create and remove a file (access(W_OK) is not enough: root, read-only mounts).
  const std::string probe = dir_ + "/.sg2-write-test-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    const int err = errno;
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());
    created_.clear();
    fail(ErrorKind::io, "cannot write to output directory ", shown(dir_), ": ", std::strerror(err));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  register_output_dir(this, shown(dir_), created_, written_);
}

OutputDir::~OutputDir() {
  unregister_output_dir(this);
  if (committed_) return;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());  // only empty ones go
}

Error OutputDir::failure(const Error& e) const {
  const int64_t n = written_.load();
  if (n == 0) return e;
  return e.with_message(detail::concat(e.message(), "; ", n, n == 1 ? " file" : " files", " written before this error ",
                                       n == 1 ? "is" : "are", " kept in ", shown(dir_)));
}

std::string OutputDir::file(const std::string& name) const { return dir_ + "/" + name; }

OutputFormat parse_format(const std::string& text) {
  if (text == "png") return OutputFormat::png;
  if (text == "npy") return OutputFormat::npy;
  if (text == "both") return OutputFormat::both;
  if (text == "u8npy") return OutputFormat::u8npy;
  fail(ErrorKind::invalid_argument, "--format: unknown format '", printable(text),
       "' (expected png, npy, both or u8npy)");
}

bool writes_8bit(OutputFormat fmt) { return fmt != OutputFormat::npy; }

void check_8bit_channels(const ModelConfig& cfg, OutputFormat fmt, bool grid) {
  if (cfg.img_channels <= 4 || (!writes_8bit(fmt) && !grid)) return;
  const std::string what = writes_8bit(fmt)
                               ? std::string(fmt == OutputFormat::u8npy ? "--format u8npy (8-bit pixels)" : "a PNG")
                               : std::string("--grid (a PNG)");
  fail(ErrorKind::invalid_argument, "this model's images have ", cfg.img_channels, " channels, which ", what,
       " cannot hold: a PNG has 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA); use --format npy",
       grid ? " without --grid" : "", " (float32 [1, C, H, W], every channel)");
}

Image8 write_image(OutputDir& out, const std::string& stem, const Tensor& img, int64_t n, OutputFormat fmt) {
  Image8 im;
  if (img.dim(1) <= 4 || writes_8bit(fmt)) im = to_image8(img, n);  // (to_image8 refuses C > 4)
  if (fmt == OutputFormat::png || fmt == OutputFormat::both) {
    write_png(out.file(stem + ".png"), im);
    out.wrote();
  }
  if (fmt == OutputFormat::npy || fmt == OutputFormat::both) {
    write_npy(out.file(stem + ".npy"), img.slice0(n, n + 1));
    out.wrote();
  }
  if (fmt == OutputFormat::u8npy) {
    write_npy_u8(out.file(stem + ".npy"), im.pixels.data(), {1, im.height, im.width, im.channels});
    out.wrote();
  }
  return im;
}

bool find_on_path(const std::string& name, std::string* found) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string p = path;
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t colon = p.find(':', pos);
    if (colon == std::string::npos) colon = p.size();
    std::string dir = p.substr(pos, colon - pos);
    if (dir.empty()) dir = ".";
    const std::string cand = dir + "/" + name;
    struct stat st {};
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0) {
      if (found) *found = cand;
      return true;
    }
    pos = colon + 1;
  }
  return false;
}

int run_process(const std::vector<std::string>& argv, std::string* output) {
  if (argv.empty()) return -1;
  int pipefd[2];
  if (::pipe(pipefd) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  posix_spawn_file_actions_addclose(&fa, pipefd[1]);
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return -1;
  }
  sg2::set_child_process(pid);  // an interrupt ends the child too, and leaves no orphan
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0 && output) output->append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sg2::set_child_process(0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// --- progress ------------------------------------------------------------------------------

void add_quiet_option(Options& opts) { opts.flag("q,quiet", "no progress bar and no summary line"); }

Progress::Progress(std::string label, int64_t total, bool quiet)
    : label_(std::move(label)), total_(total), quiet_(quiet), tty_(::isatty(2) == 1) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { finish(); }

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::set(int64_t done) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = done;
  std::fill(partials_.begin(), partials_.end(), 0.0);
  tick();
}

void Progress::advance(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ += n;
  std::fill(partials_.begin(), partials_.end(), 0.0);
  tick();
}

void Progress::partial(int slot, double images) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot < 0) return;
  if (partials_.size() <= size_t(slot)) partials_.resize(size_t(slot) + 1, 0.0);
  partials_[size_t(slot)] = std::max(0.0, images);
  tick();
}

void Progress::tick() {
  if (quiet_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since_start = std::chrono::duration<double>(now - start_).count();
  const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  if (tty_) {
    if (since_start >= 0.5 && done_ < total_ && (since_draw >= 0.1 || !drawn_)) draw(false);
  } else if (since_draw >= 10.0 && done_ < total_) {
    draw(false);
  }
}

void Progress::draw(bool final_draw) {
  last_draw_ = std::chrono::steady_clock::now();
  const double t = elapsed_s();
  double partial = 0;
  for (double p : partials_) partial += p;
  const double work = std::min(double(done_) + partial, double(total_));  // images, with the running batches' part
  const double frac = total_ > 0 ? work / double(total_) : 1.0;
  const double rate = t > 0 ? work / t : 0.0;
  char tail[128];
  if (done_ == 0 && !final_draw) {
    // Before the first image is done a rate or an ETA would be a guess: the time so far only.
    char pct[16] = "";
    if (partial > 0) std::snprintf(pct, sizeof pct, " (%.0f%%)", 100.0 * frac);
    std::snprintf(tail, sizeof tail, " %lld/%lld%s  %.1fs", 0LL, static_cast<long long>(total_), pct, t);
  } else if (work > 0 && done_ < total_) {
    char pct[16] = "";
    if (partial > 0) std::snprintf(pct, sizeof pct, " (%.0f%%)", 100.0 * frac);
    std::snprintf(tail, sizeof tail,
                  rate < 10 ? " %lld/%lld%s  %.2f/s  %.0fs left" : " %lld/%lld%s  %.1f/s  %.0fs left",
                  static_cast<long long>(done_), static_cast<long long>(total_), pct, rate,
                  (double(total_) - work) / std::max(rate, 1e-9));
  } else {
    std::snprintf(tail, sizeof tail, " %lld/%lld  %.1f/s  %.1fs", static_cast<long long>(done_),
                  static_cast<long long>(total_), rate, t);
  }
  if (tty_) {
    const int width = 30;
    const int filled = static_cast<int>(frac * width);
    std::string bar = "\r" + label_ + " [" + std::string(static_cast<size_t>(filled), '#') +
                      std::string(static_cast<size_t>(width - filled), ' ') + "]" + tail + "\x1b[K";
    std::fputs(bar.c_str(), stderr);
    if (final_draw) std::fputc('\n', stderr);
  } else {
    std::fprintf(stderr, "%s:%s\n", label_.c_str(), tail);
  }
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (quiet_ || !drawn_) return;
  draw(true);
}

}  // namespace sg2::cli
