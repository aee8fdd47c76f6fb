// sg2 generate: images from seeds (or from W / W+ latents), as NVIDIA's generate.py does.
//
// Semantics (spec §8.2): per seed z = RandomState(seed).randn(1, z_dim) cast to float32; label
// c[0, class] = 1 for conditional models; img = G(z, c, truncation_psi=--trunc (default 1),
// truncation_cutoff, noise_mode=--noise-mode (default const)); uint8 by the official conversion
// (spec §2.8); files seed%04d.png. --seed-mode tf follows the TensorFlow run_generator.py instead:
// the const noise maps are redrawn from the seed's RandomState after z. --ws feeds [N, w_dim] or
// [N, num_ws, w_dim] latents straight into synthesis, like generate.py --projected-w (no
// truncation), naming the outputs ws0000.png, ... by row.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli_util.h"
#include "commands.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"

namespace sg2::cli {
namespace {

/// Reads --ws and returns it as ws [N, num_ws, w_dim] for `cfg` (W rows are broadcast).
Tensor read_ws(const std::string& path, const ModelConfig& cfg) {
  Tensor t = read_npy_tensor(path);
  if (t.ndim() >= 1 && t.dim(0) == 0) fail(ErrorKind::bad_file, "--ws ", path, ": has no rows (shape ", t.shape_str(), ")");
  for (float v : t.vec())
    if (!std::isfinite(v)) fail(ErrorKind::bad_file, "--ws ", path, ": contains NaN or infinite values");
  if (t.ndim() == 2 && t.dim(1) == cfg.w_dim) {
    Tensor ws({t.dim(0), cfg.num_ws, cfg.w_dim});
    for (int64_t n = 0; n < t.dim(0); ++n)
      for (int l = 0; l < cfg.num_ws; ++l)
        std::copy(t.data() + n * cfg.w_dim, t.data() + (n + 1) * cfg.w_dim, ws.data() + (n * cfg.num_ws + l) * cfg.w_dim);
    return ws;
  }
  if (t.ndim() == 3 && t.dim(1) == cfg.num_ws && t.dim(2) == cfg.w_dim) return t;
  fail(ErrorKind::invalid_argument, "--ws ", path, ": shape ", t.shape_str(), " does not fit this model: expected [N, ",
       cfg.w_dim, "] (W) or [N, ", cfg.num_ws, ", ", cfg.w_dim, "] (W+)");
}

int run_generate(int argc, char** argv) {
  cxxopts::Options opts = make_options(
      "generate",
      "Generates images from seeds, as NVIDIA's generate.py: z = numpy RandomState(seed).randn(1, z_dim), "
      "img = G(z, c, truncation_psi, noise_mode), saved as seed%04d.png with the official uint8 conversion.");
  opts.add_options()
      ("seeds", "seeds: ranges and lists, e.g. 0-7,42; each in [0, 4294967295] (never wrapped)",
       cxxopts::value<std::string>(), "LIST")
      ("ws", "W [N, w_dim] or W+ [N, num_ws, w_dim] float .npy fed to synthesis (no truncation, as "
             "--projected-w); outputs ws0000.png, ... by row", cxxopts::value<std::string>(), "FILE.npy")
      ("trunc", "truncation psi toward w_avg (1 = none)", cxxopts::value<std::string>()->default_value("1"), "PSI")
      ("trunc-cutoff", "truncate only ws rows [0, N) (default: all rows)", cxxopts::value<std::string>(), "N")
      ("noise-mode", "const (the model's stored noise), random, or none",
       cxxopts::value<std::string>()->default_value("const"), "MODE")
      ("noise-seed", "seed of --noise-mode random (default 0); an image's noise depends only on this and its "
                     "own seed, not on the batch", cxxopts::value<std::string>(), "S")
      ("seed-mode", "pt: z from the seed (PyTorch generate.py); tf: z, then every const noise map redrawn "
                    "from the same RandomState (TensorFlow run_generator.py; pass its --trunc 0.5 yourself)",
       cxxopts::value<std::string>()->default_value("pt"), "pt|tf")
      ("save-ws", "also write seed%04d_ws.npy: float32 [1, num_ws, w_dim] after truncation")
      ("outdir", "output directory (created if missing)", cxxopts::value<std::string>()->default_value("out"), "DIR")
      ("format", "png (uint8, 1 channel gray, 3 RGB, 4 RGBA), npy (raw float32 [1, C, H, W]) or both",
       cxxopts::value<std::string>()->default_value("png"), "F")
      ("grid", "also write grid.png: the images in generation order, row by row", cxxopts::value<std::string>(),
       "COLSxROWS");
  add_class_option(opts);
  add_model_options(opts);
  add_quiet_option(opts);
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;

  // --- validate every option before the model is loaded -----------------------------------
  const bool from_ws = has(args, "ws");
  if (from_ws == has(args, "seeds"))
    fail(ErrorKind::invalid_argument, from_ws ? "give either --seeds or --ws, not both"
                                              : "--seeds LIST (e.g. --seeds 0-7) or --ws FILE.npy is required");
  std::vector<uint32_t> seeds;
  if (!from_ws) seeds = parse_seeds(get(args, "seeds"));
  Truncation trunc;
  trunc.psi = parse_float("trunc", get(args, "trunc"));
  if (has(args, "trunc-cutoff")) trunc.cutoff = static_cast<int>(parse_int("trunc-cutoff", get(args, "trunc-cutoff"), 0, 1 << 20));
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
    fail(ErrorKind::invalid_argument, "--seed-mode tf draws the const noise maps from the seed: use --noise-mode const");
  if (from_ws) {
    for (const char* o : {"trunc", "trunc-cutoff", "class"})
      if (has(args, o)) fail(ErrorKind::invalid_argument, "--", o, " does not apply to --ws input (ws go straight into synthesis)");
    if (seed_mode == "tf") fail(ErrorKind::invalid_argument, "--seed-mode tf needs --seeds, not --ws");
  }
  const OutputFormat fmt = parse_format(get(args, "format"));
  std::optional<GridShape> grid;
  if (has(args, "grid")) grid = parse_grid(get(args, "grid"));
  const bool save_ws = has(args, "save-ws");
  const bool quiet = has(args, "quiet");
  const GeneratorOptions gen_options = generator_options(args);
  Tensor ws_input;
  if (from_ws) {  // file errors before the model load
    try {
      ws_input = read_npy_tensor(get(args, "ws"));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::invalid_argument) throw;
      fail(ErrorKind::bad_file, "--ws ", get(args, "ws"), ": ", e.what());  // e.g. an absurd shape
    }
  }
  if (grid) check_grid_size(*grid);
  if (grid && !from_ws && static_cast<int64_t>(seeds.size()) > int64_t(grid->cols) * grid->rows)
    fail(ErrorKind::invalid_argument, "--grid ", grid->cols, "x", grid->rows, " has ", grid->cols * grid->rows,
         " cells for ", seeds.size(), " images");
  OutputDir out(get(args, "outdir"));

  // --- model and inputs ---------------------------------------------------------------------
  Generator gen(load_network(args), gen_options);
  const ModelConfig& cfg = gen.config();
  if (from_ws) {
    ws_input = read_ws(get(args, "ws"), cfg);
    if (grid && ws_input.dim(0) > int64_t(grid->cols) * grid->rows)
      fail(ErrorKind::invalid_argument, "--grid ", grid->cols, "x", grid->rows, " has ", grid->cols * grid->rows,
           " cells for ", ws_input.dim(0), " images");
  }
  const int64_t total = from_ws ? ws_input.dim(0) : static_cast<int64_t>(seeds.size());
  if (!from_ws) class_labels(args, cfg, 1);  // validates --class before any work
  const int chunk = chunk_size(gen, args);

  Progress progress("sg2 generate", total, quiet);
  std::vector<Image8> grid_images;
  for (int64_t b = 0; b < total; b += chunk) {
    const int64_t e = std::min<int64_t>(total, b + chunk);
    std::vector<std::string> stems;
    std::vector<uint64_t> keys;
    NoiseSpec noise;
    noise.mode = noise_mode;
    noise.seed = noise_seed;
    Tensor ws;
    if (from_ws) {
      ws = ws_input.slice0(b, e);
      for (int64_t n = b; n < e; ++n) {
        stems.push_back(indexed_stem("ws", n, 4));
        keys.push_back(static_cast<uint64_t>(n));
      }
    } else {
      std::vector<uint32_t> part(seeds.begin() + b, seeds.begin() + e);
      Tensor z;
      if (seed_mode == "tf") {
        std::vector<Tensor> zs;
        for (uint32_t s : part) {
          TfSeedInputs in = tf_seed_inputs(s, cfg);
          zs.push_back(std::move(in.z));
          noise.maps.push_back(std::move(in.noise_maps));
        }
        z = concat0(zs);
      } else {
        z = z_from_seeds(part, cfg.z_dim);
      }
      for (uint32_t s : part) {
        stems.push_back(seed_stem(s));
        keys.push_back(s);
      }
      ws = gen.map(z, class_labels(args, cfg, e - b), trunc);
    }
    if (noise_mode == NoiseMode::random) noise.keys = keys;
    Tensor img = gen.synthesize(ws, noise);
    for (int64_t n = 0; n < e - b; ++n) {
      Image8 im = write_image(out, stems[n], img, n, fmt);
      if (save_ws) write_npy(out.file(stems[n] + "_ws.npy"), ws.slice0(n, n + 1));
      if (grid) grid_images.push_back(std::move(im));
    }
    progress.advance(e - b);
  }
  if (grid) write_png(out.file("grid.png"), make_grid(grid_images, grid->cols, grid->rows));
  progress.finish();
  out.commit();
  if (!quiet) {
    std::cout << "sg2 generate: " << total << (total == 1 ? " image" : " images") << " (" << cfg.img_resolution << "x"
              << cfg.img_resolution << ", " << cfg.img_channels << (cfg.img_channels == 1 ? " channel" : " channels")
              << ", " << gen.device().str() << ") in " << out.path() << (grid ? " + grid.png" : "") << ", "
              << static_cast<int>(progress.elapsed_s() * 10 + 0.5) / 10.0 << " s\n";
  }
  return 0;
}

}  // namespace

SG2_COMMAND(generate, 10, "images from seeds (or W/W+ latents), as NVIDIA's generate.py", run_generate);

}  // namespace sg2::cli
