// sg2 mix: style mixing as NVIDIA's style_mixing.py (stylegan2-ada-pytorch; spec §8.2).
//
//   all_seeds = rows ∪ cols; z = RandomState(seed).randn(z_dim); all_w = G.mapping(z, c) (psi 1);
//   all_w = w_avg + (all_w - w_avg) * psi      (the plain formula, always, not lerp)
//   {s}-{s}.png: G.synthesis(all_w) for every seed
//   {row}-{col}.png: w = w_row with rows k in --styles replaced by w_col[k]
//   grid.png: (cols+1) x (rows+1) cells on black, top-left empty, first row the column seeds'
//   images, first column the row seeds' images.
// Conditional models take --class (one label for every seed); the official script has none. --edit
// moves every seed's all_w after truncation, before the mixing (edit_cli.h).
#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "cli_util.h"
#include "commands.h"
#include "edit_cli.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "style_mix.h"

namespace sg2::cli {
namespace {

int run_mix(int argc, char** argv) {
  Options opts = make_options(
      "mix",
      "Style mixing as NVIDIA's style_mixing.py: each row seed's ws with the --styles rows taken from each column "
      "seed. Writes ROW-COL.png, SEED-SEED.png for every seed, and grid.png.");
  opts.option("rows", "row seeds: ranges and lists, e.g. 85,100,75", "LIST")
      .option("cols", "column seeds: ranges and lists", "LIST")
      .option("styles",
              "ws rows taken from the column seed: ranges and lists (0-6, 0,1,2); the default 0-6 is cut to the "
              "model's rows",
              "LIST", "0-6")
      .option("trunc", "truncation psi: w_avg + (w - w_avg) * psi", "PSI", "1")
      .option("noise-mode", "const, random or none", "MODE", "const")
      .option("noise-seed", "seed of --noise-mode random (default 0); a mixed image uses its row seed's noise", "S")
      .option("outdir", "output directory (created if missing)", "DIR", "out")
      .option("format",
              "png, npy (raw float32 [1, C, H, W] as ROW-COL.npy), both, or u8npy (the PNG's uint8 pixels as .npy "
              "[1, H, W, C]); grid.png too, unless the images have more than 4 channels (then npy only)",
              "F", "png");
  add_class_option(opts);
  add_edit_options(opts);
  add_model_options(opts);
  add_quiet_option(opts);
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;

  if (!has(args, "rows") || !has(args, "cols"))
    fail(ErrorKind::invalid_argument, "--rows LIST and --cols LIST are required (e.g. --rows 85,100 --cols 55,821)");
  const std::vector<uint32_t> rows = parse_seeds(get(args, "rows"));
  const std::vector<uint32_t> cols = parse_seeds(get(args, "cols"));
  std::vector<int> styles = parse_index_list("styles", get(args, "styles"));
  const float psi = parse_float("trunc", get(args, "trunc"));
  const NoiseMode noise_mode = parse_noise_mode(get(args, "noise-mode"));
  uint64_t noise_seed = 0;
  if (has(args, "noise-seed")) {
    if (noise_mode != NoiseMode::random)
      fail(ErrorKind::invalid_argument, "--noise-seed is only used with --noise-mode random");
    noise_seed = parse_u64("noise-seed", get(args, "noise-seed"));
  }
  if (rows.size() * cols.size() > 100000)
    fail(ErrorKind::invalid_argument, "--rows x --cols is too many images (", rows.size() * cols.size(),
         "; at most 100,000)");
  const OutputFormat fmt = parse_format(get(args, "format"));
  const bool quiet = has(args, "quiet");
  const GeneratorOptions gen_options = generator_options(args);
  EditArgs edits = read_edit_args(args);  // the direction files, before the model loads
  OutputDir out(get(args, "outdir"));

  Generator gen = open_generator(load_network(args, "mix"), gen_options);
  const ModelConfig& cfg = gen.config();
  if (!has(args, "styles"))  // the official default 0-6, limited to the rows a small model has
    styles.erase(std::remove_if(styles.begin(), styles.end(), [&](int k) { return k >= cfg.num_ws; }), styles.end());
  for (int k : styles)
    if (k >= cfg.num_ws)
      fail(ErrorKind::invalid_argument, "--styles: ws row ", k, " does not exist: this model has rows 0..",
           cfg.num_ws - 1);
  class_labels(args, cfg, 1);  // validates --class before any work
  check_8bit_channels(cfg, fmt, /*grid=*/false);
  fit_edits(edits, cfg);
  edit_notes("mix", edits, quiet);
  // grid.png needs 8-bit pixels: a model of more than 4 channels (--format npy) gets none.
  const bool with_grid = cfg.img_channels <= 4;
  if (with_grid)
    check_png_size(int64_t(cols.size() + 1) * cfg.width(), int64_t(rows.size() + 1) * cfg.height(), cfg.img_channels,
                   PngWrite::whole,
                   detail::concat("the grid of ", cols.size() + 1, "x", rows.size() + 1, " images of ", cfg.width(),
                                  "x", cfg.height()));
  // Checks --batch against the memory it needs; the run makes at most rows x cols + rows + cols images.
  const int chunk = chunk_size(gen, args, int64_t(rows.size() * cols.size()) + int64_t(rows.size() + cols.size()));
  Truncation trunc;
  trunc.psi = psi;
  model_notices("mix", cfg, &trunc, noise_mode, quiet);

  // all_w for every distinct seed, with the official plain truncation formula.
  std::vector<uint32_t> all_seeds;
  for (const auto* list : {&rows, &cols})
    for (uint32_t s : *list)
      if (std::find(all_seeds.begin(), all_seeds.end(), s) == all_seeds.end()) all_seeds.push_back(s);
  const int64_t S = static_cast<int64_t>(all_seeds.size());
  Tensor all_w = gen.map(z_from_seeds(all_seeds, cfg.z_dim), class_labels(args, cfg, S), Truncation{});
  require_finite_w_avg(gen.model(), psi);
  if (w_avg_finite(gen.model()))  // else psi is 1: w as mapped (the formula would give NaN)
    truncate_plain(all_w, gen.model().at("mapping.w_avg"), psi);
  apply_edits(all_w, edits.edits);  // every seed's w moved after truncation, before the mixing
  const int64_t row_len = int64_t(cfg.num_ws) * cfg.w_dim;
  std::map<uint32_t, int64_t> index;
  for (int64_t n = 0; n < S; ++n) index[all_seeds[n]] = n;

  const int64_t total = S + int64_t(rows.size() * cols.size());
  Progress progress("sg2 mix", total, quiet);
  std::map<std::pair<uint32_t, uint32_t>, Image8> images;
  auto run = [&](const std::vector<std::pair<uint32_t, uint32_t>>& keys, const Tensor& ws) {
    NoiseSpec noise;
    noise.mode = noise_mode;
    noise.seed = noise_seed;
    if (noise_mode == NoiseMode::random)
      for (const auto& k : keys) noise.keys.push_back(k.first);
    for (int64_t b = 0; b < ws.dim(0); b += chunk) {
      const int64_t e = std::min<int64_t>(ws.dim(0), b + chunk);
      NoiseSpec part = noise;
      if (noise_mode == NoiseMode::random) part.keys.assign(noise.keys.begin() + b, noise.keys.begin() + e);
      Tensor img = synthesize_edited(gen, ws.slice0(b, e), part, edits);
      for (int64_t n = b; n < e; ++n) {
        const auto& key = keys[static_cast<size_t>(n)];
        Image8 im = write_image(out, std::to_string(key.first) + "-" + std::to_string(key.second), img, n - b, fmt);
        images[key] = std::move(im);
      }
      progress.advance(e - b);
    }
  };

  run_writing(out, [&] {
    // The unmixed images, as the official batched G.synthesis(all_w).
    std::vector<std::pair<uint32_t, uint32_t>> diag;
    for (uint32_t s : all_seeds) diag.push_back({s, s});
    run(diag, all_w);
    // The mixed images.
    std::vector<std::pair<uint32_t, uint32_t>> mixed;
    Tensor mixed_ws({int64_t(rows.size() * cols.size()), cfg.num_ws, cfg.w_dim});
    int64_t m = 0;
    for (uint32_t r : rows)
      for (uint32_t c : cols) {
        mix_styles(all_w.data() + index[r] * row_len, all_w.data() + index[c] * row_len, styles, cfg.num_ws, cfg.w_dim,
                   mixed_ws.data() + m * row_len);
        mixed.push_back({r, c});
        ++m;
      }
    run(mixed, mixed_ws);

    if (!with_grid) return;
    // grid.png
    const Image8& any = images.begin()->second;
    Image8 blank;
    blank.width = any.width;
    blank.height = any.height;
    blank.channels = any.channels;
    blank.pixels.assign(any.pixels.size(), 0);
    std::vector<Image8> cells;
    cells.push_back(blank);
    for (uint32_t c : cols) cells.push_back(images.at({c, c}));
    for (uint32_t r : rows) {
      cells.push_back(images.at({r, r}));
      for (uint32_t c : cols) cells.push_back(images.at({r, c}));
    }
    write_png(out.file("grid.png"), make_grid(cells, int(cols.size()) + 1, int(rows.size()) + 1));
    out.wrote();
  });
  progress.finish();
  out.commit();
  if (!quiet)
    std::cout << "sg2 mix: " << rows.size() << " x " << cols.size() << " mixed images + " << S << " unmixed in "
              << shown(out.path()) << (with_grid ? " + grid.png, " : " (no grid.png: a PNG holds at most 4 channels), ")
              << duration_text(progress.elapsed_s()) << "\n";
  return 0;
}

}  // namespace

SG2_COMMAND(mix, 20, "style mixing as NVIDIA's style_mixing.py", run_mix);

}  // namespace sg2::cli
