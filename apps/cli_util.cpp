// sg2 CLI: shared helpers (cli_util.h).
#include "cli_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "sg2/default_model.h"
#include "sg2/error.h"
#include "sg2/npy.h"

extern char** environ;

namespace sg2::cli {

// --- parsing -------------------------------------------------------------------------------

cxxopts::Options make_options(const std::string& command, const std::string& description) {
  cxxopts::Options opts("sg2 " + command, description);
  opts.set_width(100);
  opts.add_options()("h,help", "show this help");
  return opts;
}

cxxopts::ParseResult parse(cxxopts::Options& opts, int argc, char** argv) {
  const std::string cmd = opts.program();
  try {
    cxxopts::ParseResult r = opts.parse(argc, argv);
    if (!r.unmatched().empty())
      fail(ErrorKind::invalid_argument, "unexpected argument '", r.unmatched().front(), "' (see ", cmd, " --help)");
    return r;
  } catch (const cxxopts::exceptions::exception& e) {
    fail(ErrorKind::invalid_argument, e.what(), " (see ", cmd, " --help)");
  }
}

bool print_help_if_asked(const cxxopts::Options& opts, const cxxopts::ParseResult& args) {
  if (args.count("help") == 0) return false;
  std::cout << opts.help() << std::flush;
  return true;
}

bool has(const cxxopts::ParseResult& args, const std::string& name) { return args.count(name) > 0; }

std::string get(const cxxopts::ParseResult& args, const std::string& name) {
  try {
    const cxxopts::OptionValue& v = args[name];
    if (v.count() == 0 && !v.has_default()) return {};
    return v.as<std::string>();
  } catch (const cxxopts::exceptions::exception& e) {
    fail(ErrorKind::invalid_argument, "--", name, ": ", e.what());
  }
}

int64_t parse_int(const std::string& what, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || std::isspace(static_cast<unsigned char>(text[0])))
    fail(ErrorKind::invalid_argument, "--", what, ": '", text, "' is not an integer");
  if (v < lo || v > hi) fail(ErrorKind::invalid_argument, "--", what, ": ", v, " is out of range [", lo, ", ", hi, "]");
  return v;
}

uint64_t parse_u64(const std::string& what, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    fail(ErrorKind::invalid_argument, "--", what, ": '", text, "' is not a non-negative integer");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) fail(ErrorKind::invalid_argument, "--", what, ": ", text, " is out of range [0, 2^64-1]");
  return v;
}

float parse_float(const std::string& what, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isspace(static_cast<unsigned char>(text[0])))
    fail(ErrorKind::invalid_argument, "--", what, ": '", text, "' is not a number");
  if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "--", what, ": ", text, " is not a finite number");
  return v;
}

std::vector<int> parse_index_list(const std::string& what, const std::string& text) {
  std::vector<int> out;
  if (text.empty()) fail(ErrorKind::invalid_argument, "--", what, ": empty list");
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string tok = text.substr(pos, comma - pos);
    const size_t dash = tok.find('-', 1);
    if (dash != std::string::npos) {
      const int64_t a = parse_int(what, tok.substr(0, dash), 0, 1 << 20);
      const int64_t b = parse_int(what, tok.substr(dash + 1), 0, 1 << 20);
      if (b < a) fail(ErrorKind::invalid_argument, "--", what, ": range '", tok, "' ends below its start");
      for (int64_t i = a; i <= b; ++i) out.push_back(static_cast<int>(i));
    } else {
      out.push_back(static_cast<int>(parse_int(what, tok, 0, 1 << 20)));
    }
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
  if (x == std::string::npos)
    fail(ErrorKind::invalid_argument, "--grid: '", text, "' is not COLSxROWS (for example 10x1)");
  GridShape g;
  g.cols = static_cast<int>(parse_int("grid", text.substr(0, x), 1, 1 << 16));
  g.rows = static_cast<int>(parse_int("grid", text.substr(x + 1), 1, 1 << 16));
  return g;
}

// --- model, device, batch ------------------------------------------------------------------

void add_model_options(cxxopts::Options& opts, bool with_batch) {
  opts.add_options("model")
      ("network", "model file (.safetensors from sg2 convert) or checkpoint (.pkl, .pt); default: the bundled "
                  "digits32 model (env SG2_MODEL overrides)", cxxopts::value<std::string>(), "FILE")
      ("device", "cpu, cuda or cuda:N (default: cuda when a GPU is usable, else cpu)", cxxopts::value<std::string>(), "DEV")
      ("precision", "auto (fp16 in the checkpoint's fp16 blocks on CUDA, fp32 on CPU), fp32, tf32 or fp16 "
                    "(tf32/fp16: CUDA only)", cxxopts::value<std::string>()->default_value("auto"), "P")
      ("batch-invariance", "on (default): an image's bits never depend on the batch it ran in; off (CUDA): "
                           "cuDNN for tf32/fp16 convolutions, faster, last bits may change with --batch",
       cxxopts::value<std::string>()->default_value("on"), "on|off");
  if (with_batch)
    opts.add_options("model")("batch", "images per generator call (default: the backend's choice)",
                              cxxopts::value<std::string>(), "N");
}

GeneratorOptions generator_options(const cxxopts::ParseResult& args) {
  GeneratorOptions o;
  if (has(args, "device")) o.device = Device::parse(get(args, "device"));
  o.precision = parse_precision(get(args, "precision"));
  const std::string inv = get(args, "batch-invariance");
  if (inv != "on" && inv != "off")
    fail(ErrorKind::invalid_argument, "--batch-invariance: expected on or off, got '", inv, "'");
  o.batch_invariant = inv == "on";
  if (has(args, "batch")) o.max_batch = static_cast<int>(parse_int("batch", get(args, "batch"), 1, 1 << 20));
  return o;
}

std::string network_path(const cxxopts::ParseResult& args) {
  if (has(args, "network")) return get(args, "network");
  return default_model_path();
}

Model load_network(const cxxopts::ParseResult& args) { return load_model(network_path(args)); }

Generator make_generator(const cxxopts::ParseResult& args) {
  GeneratorOptions o = generator_options(args);  // option errors before the (slow) model load
  return Generator(load_network(args), o);
}

int chunk_size(Generator& gen, const cxxopts::ParseResult& args) {
  const GeneratorOptions o = generator_options(args);
  if (o.max_batch > 0) return o.max_batch;
  return std::max(1, gen.max_batch());
}

void add_class_option(cxxopts::Options& opts) {
  opts.add_options()("class", "class label K for conditional models (required there): c[0, K] = 1",
                     cxxopts::value<std::string>(), "K");
}

Tensor class_labels(const cxxopts::ParseResult& args, const ModelConfig& cfg, int64_t n) {
  if (!has(args, "class")) {
    if (cfg.c_dim > 0)
      fail(ErrorKind::invalid_argument, "this model is conditional (", cfg.c_dim,
           " classes): --class K is required, with K in [0, ", cfg.c_dim - 1, "]");
    return Tensor();
  }
  const int64_t k = parse_int("class", get(args, "class"), 0, 1 << 30);
  if (cfg.c_dim == 0)
    fail(ErrorKind::invalid_argument, "--class: this model is unconditional (c_dim 0); leave --class out");
  if (k >= cfg.c_dim)
    fail(ErrorKind::invalid_argument, "--class ", k, " is out of range: this model has classes 0..", cfg.c_dim - 1);
  return one_hot(std::vector<int>(static_cast<size_t>(n), static_cast<int>(k)), cfg.c_dim);
}

// --- outputs -------------------------------------------------------------------------------

std::string seed_stem(uint64_t seed) { return indexed_stem("seed", static_cast<int64_t>(seed), 4); }

std::string indexed_stem(const std::string& prefix, int64_t index, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(index));
  return prefix + buf;
}

OutputDir::OutputDir(const std::string& dir) : dir_(dir.empty() ? "." : dir) {
  struct stat st {};
  if (::stat(dir_.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      fail(ErrorKind::io, "cannot write to output directory ", dir_, ": it exists and is not a directory");
  } else {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) fail(ErrorKind::io, "cannot write to output directory ", dir_, ": ", ec.message());
    created_ = true;
  }
  // Probe: create and remove a file (access(W_OK) is not enough: root, read-only mounts).
  const std::string probe = dir_ + "/.sg2-write-test-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    const int err = errno;
    if (created_) ::rmdir(dir_.c_str());
    fail(ErrorKind::io, "cannot write to output directory ", dir_, ": ", std::strerror(err));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

OutputDir::~OutputDir() {
  if (!committed_ && created_) ::rmdir(dir_.c_str());  // only succeeds when still empty
}

std::string OutputDir::file(const std::string& name) const { return dir_ + "/" + name; }

OutputFormat parse_format(const std::string& text) {
  if (text == "png") return OutputFormat::png;
  if (text == "npy") return OutputFormat::npy;
  if (text == "both") return OutputFormat::both;
  if (text == "u8npy") return OutputFormat::u8npy;
  fail(ErrorKind::invalid_argument, "--format: unknown format '", text, "' (expected png, npy, both or u8npy)");
}

Image8 write_image(const OutputDir& out, const std::string& stem, const Tensor& img, int64_t n, OutputFormat fmt) {
  Image8 im = to_image8(img, n);
  if (fmt == OutputFormat::png || fmt == OutputFormat::both) write_png(out.file(stem + ".png"), im);
  if (fmt == OutputFormat::npy || fmt == OutputFormat::both) write_npy(out.file(stem + ".npy"), img.slice0(n, n + 1));
  if (fmt == OutputFormat::u8npy)
    write_npy_u8(out.file(stem + ".npy"), im.pixels.data(), {1, im.height, im.width, im.channels});
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
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0 && output) output->append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// --- progress ------------------------------------------------------------------------------

void add_quiet_option(cxxopts::Options& opts) {
  opts.add_options()("q,quiet", "no progress bar and no summary line");
}

Progress::Progress(std::string label, int64_t total, bool quiet)
    : label_(std::move(label)), total_(total), quiet_(quiet), tty_(::isatty(2) == 1) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { finish(); }

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::set(int64_t done) { advance(done - done_); }

void Progress::advance(int64_t n) {
  done_ += n;
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
  const double frac = total_ > 0 ? double(done_) / double(total_) : 1.0;
  const double rate = t > 0 ? double(done_) / t : 0.0;
  char tail[128];
  if (done_ > 0 && done_ < total_) {
    std::snprintf(tail, sizeof tail, " %lld/%lld  %.1f/s  %.0fs left", static_cast<long long>(done_),
                  static_cast<long long>(total_), rate, double(total_ - done_) / std::max(rate, 1e-9));
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
  if (finished_) return;
  finished_ = true;
  if (quiet_ || !drawn_) return;
  draw(true);
}

}  // namespace sg2::cli
