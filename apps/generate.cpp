// sg2 generate: images from seeds (or from W / W+ latents), as NVIDIA's generate.py does.
//
// Semantics (spec §8.2): per seed z = RandomState(seed).randn(1, z_dim) cast to float32; label
// c[0, class] = 1 for conditional models; img = G(z, c, truncation_psi=--trunc (default 1),
// truncation_cutoff, noise_mode=--noise-mode (default const)); uint8 by the official conversion
// (spec §2.8); files seed%04d.png. --seed-mode tf follows the TensorFlow run_generator.py instead:
// the const noise maps are redrawn from the seed's RandomState after z. --ws feeds [N, w_dim] or
// [N, num_ws, w_dim] latents straight into synthesis, like generate.py --projected-w (no
// truncation), naming the outputs ws0000.png, ... by row (ws_input.h: .npy or .npz, and the rule
// for [num_ws, w_dim] arrays). A seed listed twice is generated once (one file per seed). --edit
// moves every image's ws (after truncation, or the --ws rows) along directions (edit_cli.h).
//
// The pipeline (sg2/stream.h): the generators (one per --device entry) compute batch after batch;
// on a GPU the uint8 conversion runs there and only uint8 crosses to the host. Each finished image
// becomes a task of an encoder pool (--jobs threads, task_pool.h) that encodes and writes its files
// (atomically); the pool's queue is bounded and every task holds its batch's buffer, so host and
// device memory stay fixed however many seeds are asked for.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <unordered_set>

#include "cli_util.h"
#include "commands.h"
#include "edit_cli.h"
#include "image_writer.h"
#include "latent_archive.h"
#include "sg2/dataset_zip.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "sg2/shard.h"
#include "sg2/stream.h"
#include "task_pool.h"
#include "ws_input.h"

namespace sg2::cli {
namespace {

int run_generate(int argc, char** argv) {
  Options opts = make_options(
      "generate",
      "Generates images from seeds, as NVIDIA's generate.py: z = numpy RandomState(seed).randn(1, z_dim), "
      "img = G(z, c, truncation_psi, noise_mode), saved as seed%04d.png with the official uint8 conversion.");
  opts.option("seeds", "seeds: ranges and lists, e.g. 0-7,42; each in [0, 4294967295] (never wrapped)", "LIST")
      .option("ws",
              "W [N, w_dim] or W+ [N, num_ws, w_dim] float .npy, or an .npz (its array 'w', as NVIDIA's "
              "projected_w.npz), fed to synthesis (no truncation, as --projected-w); outputs ws0000.png, ... by row",
              "FILE")
      .option("ws-as",
              "how to read a 2-D --ws array [num_ws, w_dim], which is ambiguous: w+ (one W+ latent without its "
              "batch axis) or w (num_ws W latents)",
              "w|w+")
      .option("trunc", "truncation psi toward w_avg (1 = none)", "PSI", "1")
      .option("trunc-cutoff", "truncate only ws rows [0, N) (default: all rows)", "N")
      .option("noise-mode", "const (the model's stored noise), random, or none", "MODE", "const")
      .option("noise-seed",
              "seed of --noise-mode random (default 0); an image's noise depends only on this and its "
              "own seed, not on the batch",
              "S")
      .option("seed-mode",
              "pt: z from the seed (PyTorch generate.py); tf: z, then every const noise map redrawn "
              "from the same RandomState (TensorFlow run_generator.py; pass its --trunc 0.5 yourself)",
              "pt|tf", "pt")
      .flag("save-ws", "also write seed%04d_ws.npy: float32 [1, num_ws, w_dim] after truncation (and --edit)")
      .option("save-latents",
              "also write one numpy .npz archive of the run's latents, streamed: seeds, z, c (conditional), w "
              "[N, num_ws, w_dim] after truncation and --edit (docs/bulk.md); one per shard, named as the dataset zips",
              "FILE.npz")
      .flag("save-styles", "with --save-latents: also every layer's styles s [N, style_dims], s_offsets, s_layers")
      .option("size",
              "write the images downscaled to N x N (a divisor of the resolution; non-square networks: N the larger "
              "side, or WxH) by a box filter, on the GPU for a CUDA device; png and u8npy formats",
              "N|WxH")
      .option("outdir",
              "output directory (created if missing), or NAME.zip: a dataset archive in dataset_tool.py's layout "
              "(PNG entries and dataset.json with the labels), streamed; one per shard",
              "DIR", "out")
      .option("format",
              "png (uint8, 1 channel gray, 2 gray + alpha, 3 RGB, 4 RGBA), npy (raw float32 [1, C, H, W]), both (png "
              "and npy), "
              "or u8npy (the PNG's uint8 pixels as .npy [1, H, W, C], no compression: the fastest)",
              "F", "png")
      .option("jobs", "threads encoding and writing files (default: the cores available)", "N")
      .option("grid", "also write grid.png: the images in generation order, row by row", "COLSxROWS");
  add_class_option(opts);
  add_edit_options(opts);
  add_shard_option(opts);
  add_png_level_option(opts);
  add_model_options(opts, /*with_batch=*/true, /*device_lists=*/true);
  add_quiet_option(opts);
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;

  // --- validate every option before the model is loaded -----------------------------------
  const bool from_ws = has(args, "ws");
  if (from_ws == has(args, "seeds"))
    fail(ErrorKind::invalid_argument, from_ws ? "give either --seeds or --ws, not both"
                                              : "--seeds LIST (e.g. --seeds 0-7) or --ws FILE.npy is required");
  std::vector<uint32_t> seeds;
  int64_t duplicates = 0;
  if (!from_ws) {  // a seed listed twice would write the same file twice: generate it once
    std::vector<uint32_t> listed = parse_seeds(get(args, "seeds"));
    std::vector<uint32_t> sorted = listed;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) {
      seeds = std::move(listed);
    } else {
      std::unordered_set<uint32_t> seen;
      for (uint32_t s : listed)
        if (seen.insert(s).second) seeds.push_back(s);
      duplicates = static_cast<int64_t>(listed.size() - seeds.size());
    }
  }
  Truncation trunc;
  trunc.psi = parse_float("trunc", get(args, "trunc"));
  if (has(args, "trunc-cutoff"))
    trunc.cutoff = static_cast<int>(parse_int("trunc-cutoff", get(args, "trunc-cutoff"), 0, 1 << 20));
  const NoiseMode noise_mode = parse_noise_mode(get(args, "noise-mode"));
  const std::string seed_mode = get(args, "seed-mode");
  if (seed_mode != "pt" && seed_mode != "tf")
    fail(ErrorKind::invalid_argument, "--seed-mode: unknown mode '", seed_mode, "' (expected pt or tf)");
  uint64_t noise_seed = 0;
  if (has(args, "noise-seed")) {
    if (noise_mode != NoiseMode::random)
      fail(ErrorKind::invalid_argument, "--noise-seed is only used with --noise-mode random");
    noise_seed = parse_u64("noise-seed", get(args, "noise-seed"));
  }
  if (seed_mode == "tf" && noise_mode != NoiseMode::const_)
    fail(ErrorKind::invalid_argument,
         "--seed-mode tf draws the const noise maps from the seed: use --noise-mode const");
  if (from_ws) {
    for (const char* o : {"trunc", "trunc-cutoff", "class"})
      if (has(args, o))
        fail(ErrorKind::invalid_argument, "--", o, " does not apply to --ws input (ws go straight into synthesis)");
    if (seed_mode == "tf") fail(ErrorKind::invalid_argument, "--seed-mode tf needs --seeds, not --ws");
  }
  WsLayout ws_layout = WsLayout::unspecified;
  if (has(args, "ws-as")) {
    if (!from_ws) fail(ErrorKind::invalid_argument, "--ws-as is only used with --ws");
    ws_layout = parse_ws_layout(get(args, "ws-as"));
  }
  const OutputFormat fmt = parse_format(get(args, "format"));
  const PngOptions png = png_options(args);
  std::optional<GridShape> grid;
  if (has(args, "grid")) grid = parse_grid(get(args, "grid"));
  const bool save_ws = has(args, "save-ws");
  const bool quiet = has(args, "quiet");
  // --save-latents / --save-styles / --size (latent_archive.h): checked here, the size against the
  // resolution once the model is known
  std::string latents_path = has(args, "save-latents") ? get(args, "save-latents") : std::string();
  const bool save_styles = has(args, "save-styles");
  if (save_styles && latents_path.empty())
    fail(ErrorKind::invalid_argument,
         "--save-styles adds the styles to the archive of --save-latents FILE.npz: "
         "give --save-latents too");
  if (has(args, "save-latents") &&
      (latents_path.size() < 5 || latents_path.compare(latents_path.size() - 4, 4, ".npz") != 0))
    fail(ErrorKind::invalid_argument, "--save-latents ", shown(latents_path),
         ": the archive's name must end in .npz (numpy.load reads it by its content, numpy.savez names it so)");
  if (!latents_path.empty())
    for (const char* in : {"ws", "network"})
      if (has(args, in) && same_file(latents_path, get(args, in)))
        fail(ErrorKind::invalid_argument, "--save-latents ", shown(latents_path), " is the --", in,
             " input: choose another name (the archive replaces the file it would be read from)");
  if (has(args, "size")) {
    size_factor(get(args, "size"), 0, 0);  // the syntax now, the divisor once the model is loaded
    if (fmt == OutputFormat::npy || fmt == OutputFormat::both)
      fail(ErrorKind::invalid_argument, "--size downscales the uint8 images: use --format png or u8npy, not ",
           get(args, "format"));
  }
  GeneratorOptions gen_options = generator_options(args, /*device_lists=*/true);
  WsArray ws_file;
  if (from_ws) ws_file = read_ws_array(get(args, "ws"));  // file errors before the model load
  EditArgs edits = read_edit_args(args);                  // (the direction files too)
  // --- sharding: this process's block of the list (--shard, or Slurm / MPI launchers' variables)
  // and, for a launcher's local rank, its GPU. Images keep their names (seeds; ws rows by their
  // row in the file) and noise, so the shards' files together are the one-process run's.
  ShardPlan shard = plan_shard(args);
  if (grid && shard.shard.sharded())
    fail(ErrorKind::invalid_argument, "--grid needs the whole list in one process, but this is shard ",
         shard.shard.str(), " (", shard.shard.source,
         "): make the grid in a run of its own (--shard 0/1 turns sharding off)");
  if (!latents_path.empty() && shard.shard.sharded()) latents_path = shard_zip_path(latents_path, shard.shard);
  if (!from_ws) {
    shard.set_total(static_cast<int64_t>(seeds.size()));
    seeds = std::vector<uint32_t>(seeds.begin() + shard.range.begin, seeds.begin() + shard.range.end);
  }
  if (grid) check_grid_size(*grid);
  if (grid && !from_ws && static_cast<int64_t>(seeds.size()) > int64_t(grid->cols) * grid->rows)
    fail(ErrorKind::invalid_argument, "--grid ", grid->cols, "x", grid->rows, " has ", grid->cols * grid->rows,
         " cells for ", seeds.size(), " images");
  int jobs = available_cores();
  if (has(args, "jobs")) jobs = static_cast<int>(parse_int("jobs", get(args, "jobs"), 1, 1024));
  // The default device is resolved after the checkpoint's read, beside which load_network starts
  // the CUDA driver and the GPUs' contexts (resolving it starts the driver).
  std::vector<Device> devices;
  if (has(args, "device")) devices = parse_devices(get(args, "device"));
  if (shard.gpu) devices = {*shard.gpu};  // the launcher's local rank picks the GPU
  // --outdir NAME.zip: a dataset archive in dataset_tool.py's layout (PNG entries and dataset.json),
  // one per shard (NAME-shardIofN.zip); its folder is the output directory.
  const std::string outdir = get(args, "outdir");
  const bool to_zip = outdir.size() > 4 && outdir.compare(outdir.size() - 4, 4, ".zip") == 0;
  std::string zip_path;
  if (to_zip) {
    if (fmt != OutputFormat::png)
      fail(ErrorKind::invalid_argument, "--outdir ", shown(outdir),
           ": a dataset archive holds PNG images (dataset_tool.py's layout); leave --format at png");
    if (save_ws)
      fail(ErrorKind::invalid_argument,
           "--save-ws writes .npy files beside the images: not into a dataset archive (--outdir ", shown(outdir),
           "); --save-latents FILE.npz writes the run's ws in one archive beside it");
    if (grid)
      fail(ErrorKind::invalid_argument, "--grid with a dataset archive (--outdir ", shown(outdir),
           "): make the grid in a run of its own");
    zip_path = shard.shard.sharded() ? shard_zip_path(outdir, shard.shard) : outdir;
  }
  const size_t slash = zip_path.rfind('/');
  // (the archive's folder: "/x.zip" is in "/", "x.zip" in ".")
  OutputDir out(!to_zip                      ? outdir
                : slash == std::string::npos ? std::string(".")
                : slash == 0                 ? std::string("/")
                                             : zip_path.substr(0, slash));

  // --- model, generators and the job -----------------------------------------------------------
  Model model = load_network(args, "generate");
  if (devices.empty()) devices = {Device::best_available()};
  std::vector<Generator> gens;
  for (const Device& d : devices) {
    GeneratorOptions o = gen_options;
    o.device = d;
    // the last generator takes the model itself (a copy of 127 MiB for ffhq1024 otherwise)
    gens.push_back(open_generator(gens.size() + 1 == devices.size() ? std::move(model) : model, o));
  }
  std::vector<Generator*> gen_ptrs;
  for (Generator& g : gens) gen_ptrs.push_back(&g);
  const ModelConfig& cfg = gens[0].config();
  check_8bit_channels(cfg, fmt, grid.has_value());  // PNGs hold 1 to 4 channels
  fit_edits(edits, cfg);
  edit_notes("generate", edits, quiet);
  ImageJob job;
  job.edits = edits.edits;
  if (from_ws) {
    if (!ws_file.note.empty() && !quiet)
      say("generate", "note",
          "--ws " + shown(get(args, "ws")) + ": " + ws_file.note + ", " + ws_file.values.shape_str());
    job.ws = fit_ws(ws_file.values, get(args, "ws"), cfg, ws_layout);
    ws_file.values = Tensor();
    shard.set_total(job.ws.dim(0));  // rows are known once the model says how to read the array
    job.ws = job.ws.slice0(shard.range.begin, shard.range.end);
    job.ws_first_row = shard.range.begin;
    if (grid && job.ws.dim(0) > int64_t(grid->cols) * grid->rows)
      fail(ErrorKind::invalid_argument, "--grid ", grid->cols, "x", grid->rows, " has ", grid->cols * grid->rows,
           " cells for ", job.ws.dim(0), " images");
  } else {
    job.seeds = seeds;
    class_labels(args, cfg, 1);  // validates --class before any work
    if (cfg.c_dim > 0) job.class_idx = static_cast<int>(parse_int("class", get(args, "class"), 0, cfg.c_dim - 1));
    job.truncation = trunc;
    job.tf_seed_mode = seed_mode == "tf";
  }
  job.noise_mode = noise_mode;
  job.noise_seed = noise_seed;
  const int64_t total = from_ws ? job.ws.dim(0) : static_cast<int64_t>(seeds.size());
  StreamOptions so;
  so.batch = gen_options.max_batch;
  // On the CPU a batch lives in host memory: checked (and a default cut) before any work.
  int cpu_gens = 0;
  for (const Generator& g : gens) cpu_gens += g.device().kind == Device::Kind::cpu;
  for (Generator& g : gens)
    if (g.device().kind == Device::Kind::cpu) {
      so.batch = chunk_size(g, args, total, cpu_gens);
      break;
    }
  model_notices("generate", cfg, from_ws ? nullptr : &trunc, noise_mode, quiet);
  if (!quiet && shard.shard.sharded()) say("generate", "note", shard_note(shard));
  if (!quiet && shard.shard.lone_array_task >= 0) {
    const std::string id = std::to_string(shard.shard.lone_array_task);
    say("generate", "note",
        "this Slurm job array has one task (SLURM_ARRAY_TASK_ID=" + id +
            "), so it makes the whole list; to re-run one part of the original array, pass --shard I/N (part I of its "
            "N tasks, e.g. --shard " +
            id + "/8)");
  }
  if (duplicates > 0 && !quiet)
    say("generate", "note",
        "--seeds lists " + std::to_string(duplicates) + (duplicates == 1 ? " seed" : " seeds") +
            " more than once; each seed is generated once (" + std::to_string(seeds.size()) + " images)");
  so.uint8 = fmt != OutputFormat::npy || grid.has_value();
  so.float32 = fmt == OutputFormat::npy || fmt == OutputFormat::both;
  so.ws = save_ws;
  if (has(args, "size")) so.downscale = size_factor(get(args, "size"), cfg.width(), cfg.height());
  const int out_w = cfg.width() / so.downscale, out_h = cfg.height() / so.downscale;  // the images as written
  std::optional<LatentArchive> latents;  // NAME.npz.tmp.PID until finished; removed on any failure
  if (!latents_path.empty()) {
    latents.emplace(latents_path, cfg, total, !from_ws, job.class_idx, save_styles);
    latents->request(so);
  }

  // The grid PNG is streamed cell row by cell row as the sink receives the images in order
  // (memory: one row of cells); its size is checked in 64 bits against the writer's limits
  // before any image is made.
  std::optional<GridPngWriter> grid_png;
  if (grid) {
    check_png_size(int64_t(grid->cols) * out_w, int64_t(grid->rows) * out_h, cfg.img_channels, PngWrite::streamed,
                   detail::concat("--grid ", grid->cols, "x", grid->rows, " of ", out_w, "x", out_h, " images"));
    grid_png.emplace(out.file("grid.png"), grid->cols, grid->rows, out_w, out_h, cfg.img_channels);
  }

  // --- the pipeline: generators -> sink (this thread) -> encoder pool (image_writer.h) -------
  std::optional<DatasetZip> zip;
  if (to_zip) zip.emplace(zip_path);  // NAME.zip.tmp.PID until finished; removed on any failure
  if (to_zip || latents) {            // the interrupt line names every unfinished archive it removed
    const std::string names = to_zip && latents ? shown(zip_path) + " and " + shown(latents_path)
                              : to_zip          ? shown(zip_path)
                                                : shown(latents_path);
    out.set_interrupt_note((to_zip && latents ? "the unfinished archives " : "the unfinished archive ") + names +
                           (to_zip && latents ? " were removed" : " was removed"));
  }
  Progress progress("sg2 generate", total, quiet);
  // per-layer progress inside the batches running now (the CPU backend reports it, from the
  // generator's thread): a batch holds at most max_batch() images
  for (size_t i = 0; i < gens.size(); ++i) {
    const double batch = double(std::min<int64_t>(gens[i].max_batch(), total));
    gens[i].set_progress([&progress, i, batch](double f) { progress.partial(static_cast<int>(i), f * batch); });
  }
  ImageOutputs io;
  io.format = fmt;
  io.png = png;
  io.save_ws = save_ws;
  io.jobs = jobs;
  io.dir = &out;
  io.zip = zip ? &*zip : nullptr;
  io.zip_first = shard.range.begin;
  io.grid = grid_png ? &*grid_png : nullptr;
  io.stem = [from_ws](const StreamImage& im) {
    return from_ws ? indexed_stem("ws", static_cast<int64_t>(im.key), 4) : seed_stem(im.key);
  };
  if (latents) io.on_image = [&latents](const StreamImage& im) { latents->add(im); };
  std::atomic<int64_t>& files = out.files();  // live: an interrupt says how many are kept
  int64_t written = 0;
  try {
    // (a shard of a list shorter than the shard count may have nothing to make)
    if (total > 0)
      written = write_images(
                    gen_ptrs, job, so, io, [&](int64_t n) { progress.set(n); }, files)
                    .images;
    if (grid_png) {
      grid_png->finish();
      files.fetch_add(1);
    }
    if (latents) {  // before the dataset zip: a zip that fails to finish takes the archive with it
      latents->finish();
      files.fetch_add(1);
    }
    if (zip) {
      std::optional<int64_t> label;
      if (cfg.c_dim > 0 && !from_ws) label = job.class_idx;
      try {
        zip->finish(dataset_json(uint64_t(shard.range.begin), uint64_t(total), label));
      } catch (...) {
        if (latents) std::remove(latents->path().c_str());
        throw;
      }
      files.fetch_add(1);
    }
  } catch (const Error& e) {
    // The encoders under way finished their file and the queued ones were dropped with the buffers
    // they held, so the count of whole files is final; an unfinished archive is removed.
    if (latents) latents->abandon();
    if (zip) zip->abandon();
    throw out.failure(e);
  }
  for (Generator& g : gens) g.set_progress({});
  progress.set(written);
  progress.finish();
  out.commit();
  if (!quiet) {
    std::string where;
    for (size_t i = 0; i < gens.size(); ++i) where += (i ? "," : "") + gens[i].device().str();
    std::cout << "sg2 generate: " << total << (total == 1 ? " image" : " images") << " (" << out_w << "x" << out_h
              << ", " << cfg.img_channels << (cfg.img_channels == 1 ? " channel" : " channels") << ", " << where
              << ") in " << shown(zip ? zip->path() : out.path()) << (grid ? " + grid.png" : "")
              << (latents ? " + latents " + shown(latents->path()) : "") << ", " << duration_text(progress.elapsed_s());
    if (progress.elapsed_s() > 0)
      std::cout << " (" << static_cast<int64_t>(total / progress.elapsed_s() + 0.5) << " img/s)";
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

SG2_COMMAND(generate, 10, "images from seeds (or W/W+ latents), as NVIDIA's generate.py", run_generate);

}  // namespace sg2::cli
