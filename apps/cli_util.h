// sg2 CLI: helpers shared by the subcommands — option parsing with usage errors, the common
// model/device options, value parsers, output directories and files, and the progress bar.
//
// Reusable by every subcommand (generate, mix, interpolate, convert, inspect, bench):
//   cli::Options opts = cli::make_options("generate", "images from seeds");   // cli_options.h
//   cli::add_model_options(opts);                      // --network --device --precision --batch
//   cli::Args args = cli::parse(opts, argc, argv);     // usage errors -> Error(invalid_argument)
//   if (cli::print_help_if_asked(opts, args)) return 0;
//   sg2::Generator gen = cli::open_generator(cli::load_network(args, "generate"), cli::generator_options(args));
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "cli_options.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/model.h"
#include "sg2/shard.h"
#include "sg2/tensor.h"

namespace sg2::cli {

// --- parsing -------------------------------------------------------------------------------

/// Options for `sg2 <command>` with -h/--help already added.
Options make_options(const std::string& command, const std::string& description);

/// Parses argv (argv[0] is the command name). Unknown options, missing or malformed values and
/// stray positional arguments become Error(invalid_argument) (exit 2) naming the option and
/// pointing at `sg2 <command> --help`.
Args parse(Options& opts, int argc, char** argv);

/// Prints opts.help() to stdout and returns true when -h/--help was given.
bool print_help_if_asked(const Options& opts, const Args& args);

/// The value of option `name` as a string ("" when absent and without default).
std::string get(const Args& args, const std::string& name);
bool has(const Args& args, const std::string& name);

/// Strict number parsers: the whole text must be a number in [lo, hi]; otherwise
/// Error(invalid_argument) "--<what> ...".
int64_t parse_int(const std::string& what, const std::string& text, int64_t lo, int64_t hi);
uint64_t parse_u64(const std::string& what, const std::string& text);
float parse_float(const std::string& what, const std::string& text);

/// A file or folder name, an option's value or other text from the user as printed: escaped
/// (sg2::printable: a control byte, a backslash or a non-ASCII byte as \xNN), never cut short.
std::string shown(const std::string& text);

/// True when both paths name one existing file (the same device and inode: links and ./ included),
/// so that an output never replaces the command's own input.
bool same_file(const std::string& a, const std::string& b);

/// `s` without leading and trailing blanks (spaces, tabs).
std::string trim_blanks(const std::string& s);

/// "0-6", "0,1,2", "0-3,7", "0, 1": non-negative integers (ranges inclusive), in order, duplicates
/// kept; blanks around numbers are ignored.
std::vector<int> parse_index_list(const std::string& what, const std::string& text);

/// "1,8,32": positive integers in [1, hi], comma separated, in order (sg2 bench's lists).
std::vector<int> parse_positive_list(const std::string& what, const std::string& text, int hi = 1 << 20);

/// "10x1" -> {cols 10, rows 1}; both >= 1.
struct GridShape {
  int cols = 0, rows = 0;
};
GridShape parse_grid(const std::string& text);
/// Refuses a grid whose cell count is absurd (more than 65536 cells) before any work is done.
void check_grid_size(const GridShape& g);

// --- model, device, batch ------------------------------------------------------------------

/// Adds --network (model file or checkpoint; default: the bundled digits32 model), --device
/// (cpu|cuda|cuda:N; default: CUDA when available), --precision (auto|fp32|tf32|fp16), --threads N
/// (CPU threads) and, when with_batch, --batch N.
/// `device_lists`: the command shares its work over several devices (--device cuda:0,1 / cuda:all).
void add_model_options(Options& opts, bool with_batch = true, bool device_lists = false);

/// The GeneratorOptions those options ask for (device, precision, max_batch, threads). With
/// `device_lists` the device is left unset: the caller reads --device with parse_devices.
GeneratorOptions generator_options(const Args& args, bool device_lists = false);

/// The path --network names, or the bundled model's path (default_model_path(): throws with
/// every place looked at when it is missing, and the hint --network FILE).
std::string network_path(const Args& args);

/// "sg2 <command>: <level>: <text>" on stderr (level "note" or "warning"); bytes of `text` that
/// are not printable ASCII are escaped (terminal_safe, commands.h).
void say(const std::string& command, const char* level, const std::string& text);

/// The model network_path(args) names: a model file, or a checkpoint converted in memory, whose
/// conversion warnings (ignored variables, ...) go to stderr as sg2 convert prints them; those
/// about what the config records (estimated w_avg, no stored noise) are model_notices' part. The
/// CUDA driver and the contexts of the GPUs --device names (every GPU without it; none for cpu)
/// start on a thread meanwhile (sg2::warm_up): a command resolves its default device after this.
Model load_network(const Args& args, const std::string& command);

/// Generator(model, options), with the CLI's hints: --precision tf32/fp16 on the CPU is refused
/// in terms of the options, and device errors end with "use --device cpu".
Generator open_generator(Model model, const GeneratorOptions& options);

/// `e` (a device error) with "use --device cpu" as its hint, or added to the hint it has.
Error with_device_hint(const Error& e);

/// Device::parse_list(text) (cpu, cuda, cuda:N, cuda:0,1, cuda:all) with the same CLI hint on
/// device errors ("use --device cpu"); invalid text stays an invalid_argument error.
std::vector<Device> parse_devices(const std::string& text);

/// What a user must know before a run, on stderr: truncation toward an estimated w_avg (trunc
/// given and psi != 1), --trunc 0 making every seed the same image, and const noise on a model
/// that stores no noise maps (noise_mode given). Warnings are printed even when quiet, notes not.
void model_notices(const std::string& command, const ModelConfig& cfg, const Truncation* trunc,
                   std::optional<NoiseMode> noise_mode, bool quiet);

/// A float as the shortest text ostream gives ("0.7", "1e-05").
std::string short_number(double v);

/// Images per call to the generator: Generator::plan_batch(images, --batch, workers) — --batch
/// when given, else the backend's default cut to what fits, at most the `images` the run makes
/// (`workers`: the generators of the run that share the memory). A --batch that does not fit is
/// Error(invalid_argument) saying how large a batch fits; when not even one image fits,
/// Error(out_of_memory) (from plan_batch).
int chunk_size(Generator& gen, const Args& args, int64_t images, int workers = 1);

/// The --class option as a one-hot label for n samples: [n, c_dim]; empty when the model is
/// unconditional and no class was given. Errors (exit 2): a conditional model without --class
/// (the message lists the valid range), a class out of range, a class for an unconditional model.
Tensor class_labels(const Args& args, const ModelConfig& cfg, int64_t n);

/// Adds --class K.
void add_class_option(Options& opts);

// --- sharding (sg2/shard.h) ----------------------------------------------------------------

/// Adds --shard I/N.
void add_shard_option(Options& opts);

/// --png-level L (0-9, fast, smallest, default; generate).
void add_png_level_option(Options& opts);
/// The PngOptions --png-level asks for (default: kPngLevelDefault). Error(invalid_argument)
/// "--png-level: 'x' is not a PNG level (...)" (exit 2).
PngOptions png_options(const Args& args);

/// This process's part of a run (sg2/shard.h): its shard, and once the list's length is known, its
/// block of the list.
struct ShardPlan {
  Shard shard;                ///< count 1 when the run is not sharded
  IndexRange range;           ///< the positions [begin, end) of the list this process makes
  int64_t total = 0;          ///< the whole list's length
  std::optional<Device> gpu;  ///< the GPU of the launcher's local rank, when it picks one
  /// Sets total and range (shard_range) for a list of `n` items.
  void set_total(int64_t n) {
    total = n;
    range = shard_range(n, shard);
  }
};

/// The shard of this run: --shard when given, else the launchers' environment (Slurm job arrays,
/// srun, mpirun; resolve_shard). gpu: when --device is absent or plain "cuda", the launcher gave a
/// local rank and CUDA is usable, that rank's GPU (shard_cuda_ordinal over the CUDA_VISIBLE_DEVICES
/// entries). Call set_total() with the list's length. Prints nothing. Errors:
/// Error(invalid_argument) (exit 2): "--shard ..." for a bad --shard, the environment's message
/// plus "; pass --shard I/N to choose this process's part" for bad launcher variables.
ShardPlan plan_shard(const Args& args);

/// What a sharded run says (a note, after its options are validated, unless -q): "shard 1/4
/// (OMPI_COMM_WORLD_RANK): positions 25-49 of the list's 100 (25 images) on cuda:1 (local rank 1)";
/// "" when the run is not sharded.
std::string shard_note(const ShardPlan& plan);

// --- outputs -------------------------------------------------------------------------------

/// "seed0042" (official `seed{seed:04d}`; wider seeds print all their digits).
std::string seed_stem(uint64_t seed);
/// "frame00012", "ws0003": prefix + zero-padded index.
std::string indexed_stem(const std::string& prefix, int64_t index, int width);

/// An output directory, created (with parents) and checked writable before any work starts.
/// When the command fails, the directories this object created (the folder and any parents it
/// made, deepest first) are removed again if they are still empty. Files already written stay:
/// each is whole (written to a temporary file and renamed), and failure() says how many. When the
/// run is interrupted (SIGINT, SIGTERM, SIGHUP) while the object lives, the same happens inside the
/// signal handler (install_cli_interrupt_report) and one line says what was kept.
class OutputDir {
 public:
  /// Throws Error(invalid_argument) for an empty path, Error(io) "cannot write to output directory
  /// DIR: reason" when it cannot be created or a file cannot be created in it.
  explicit OutputDir(const std::string& dir);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& path() const { return dir_; }
  /// dir + "/" + name
  std::string file(const std::string& name) const;
  /// Counts a file written whole into the directory (write_image calls it). Thread-safe.
  void wrote(int64_t files = 1) { written_.fetch_add(files); }
  /// The live count of whole files (for pipelines that count on other threads).
  std::atomic<int64_t>& files() { return written_; }
  /// A clause the interrupt line adds ("the unfinished archive out.zip was removed"); escaped by
  /// the caller.
  void set_interrupt_note(const std::string& note);
  /// `e` with, when files were written before it, "; N files written before this error are kept
  /// in DIR" appended (same kind, still one line).
  Error failure(const Error& e) const;
  /// Marks the run successful: the directory is kept.
  void commit() { committed_ = true; }

 private:
  std::string dir_;
  std::vector<std::string> created_;  // directories this object made, parents first
  std::atomic<int64_t> written_{0};
  bool committed_ = false;
};

/// Makes an interrupt of the CLI (sg2/interrupt.h: the temporary files are removed first) also
/// remove the empty folders the live OutputDir created and print one line on stderr, "sg2
/// <command>: interrupted by SIGINT: ...", saying what was kept. main() calls it once, and
/// run_guarded names the command.
void install_cli_interrupt_report();
void set_interrupt_command(const char* command);

/// A duration for a summary line: "350 ms" below one second, "2.4 s" above (never "0 s").
std::string duration_text(double seconds);

/// Runs `work`; an sg2::Error (or an allocation failure) that escapes it is rethrown as
/// out.failure(error), so the message says which outputs were kept.
template <typename F>
void run_writing(const OutputDir& out, F&& work) {
  try {
    work();
  } catch (const Error& e) {
    throw out.failure(e);
  } catch (const std::bad_alloc&) {
    throw out.failure(Error(ErrorKind::out_of_memory, "out of host memory"));
  }
}

/// --format png|npy|both|u8npy.
enum class OutputFormat { png, npy, both, u8npy };
OutputFormat parse_format(const std::string& text);

/// True when `fmt` writes 8-bit pixels (png, both, u8npy).
bool writes_8bit(OutputFormat fmt);

/// Refuses, before any image is made, 8-bit output (`fmt` png, both or u8npy, or a grid PNG when
/// `grid`) of a model whose images a PNG cannot hold: more than 4 channels. Error(invalid_argument)
/// "this model's images have 5 channels; a PNG holds 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA):
/// use --format npy ...".
void check_8bit_channels(const ModelConfig& cfg, OutputFormat fmt, bool grid);

/// Writes image n of img [N, C, H, W] as `<stem>.png` (official uint8 conversion: 1 channel gray,
/// 2 gray + alpha, 3 RGB, 4 RGBA) and/or `<stem>.npy` (float32 [1, C, H, W]; any C). Every file
/// is written atomically and counted (OutputDir::wrote). Returns the 8-bit image (for grids) when
/// C <= 4, else an empty one (width 0).
Image8 write_image(OutputDir& out, const std::string& stem, const Tensor& img, int64_t n, OutputFormat fmt);

/// True when an executable called `name` is on PATH; its full path goes to *found.
bool find_on_path(const std::string& name, std::string* found = nullptr);

/// Runs argv[0] (searched on PATH) with the arguments, stdin from /dev/null, stdout+stderr
/// captured into *output. Returns the exit status (-1 when it could not be started).
int run_process(const std::vector<std::string>& argv, std::string* output);

// --- progress ------------------------------------------------------------------------------

/// A progress bar on stderr (never stdout). On a terminal it appears once the run has taken
/// ~0.5 s and redraws at most 10 times a second; when stderr is not a terminal, a plain line is
/// printed at most every 10 s, and only for runs longer than that. Silent when quiet.
class Progress {
 public:
  Progress(std::string label, int64_t total, bool quiet);
  ~Progress();
  void advance(int64_t n = 1);
  /// Sets the number done (for work finished on other threads; call from one thread).
  void set(int64_t done);
  /// Work done inside the batches running now, in images (fractions allowed), by generator
  /// `slot`, so that the bar moves while one long batch runs (Generator::set_progress reports per
  /// layer, from the generator's thread). Thread-safe, like every other method.
  void partial(int slot, double images);
  /// Clears the bar (terminal) so that later messages start on a clean line.
  void finish();
  double elapsed_s() const;

 private:
  void draw(bool final_draw);  // with mu_ held
  void tick();                 // with mu_ held
  std::mutex mu_;
  std::string label_;
  int64_t total_, done_ = 0;
  std::vector<double> partials_;  // per generator: images of its running batch done
  bool quiet_, tty_, drawn_ = false, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

/// Adds -q/--quiet (no progress bar, no summary line).
void add_quiet_option(Options& opts);

}  // namespace sg2::cli
