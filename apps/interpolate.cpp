// sg2 interpolate: frames between consecutive seeds, and an mp4 when ffmpeg is on PATH.
//
// Segment i goes from seed i to seed i+1 in --frames steps t = f / frames, f = 0 .. frames-1;
// the last frame is the last seed itself (with --loop a final segment returns to the first seed
// instead). --space w (default) lerps the mapped ws (truncation applied first), a + t (b - a) as
// torch.lerp; --space z slerps the latents z and maps each frame. The noise is the same for every
// frame (const by default; random uses one fixed map set from --noise-seed), so only the latent
// moves. Frames are frame00000.png, ...; the video is interpolation.mp4. --edit moves every frame's
// ws along directions (edit_cli.h) after truncation and interpolation. An edit sweep (--edit FILE
// --strengths A:B, one seed) renders --frames N frames of that seed's ws moved by strengths
// numpy.linspace(A, B, N) (float64, the last exactly B; each cast to float32): w + s_f * d.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli_util.h"
#include "commands.h"
#include "edit_cli.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/interrupt.h"
#include "sg2/text.h"
#include "ws_input.h"

namespace sg2::cli {
namespace {

/// A path as ffmpeg must be given it to read it literally: absolute, with the "file:" protocol;
/// for the input frames (an image2 pattern) every '%' is doubled and the placeholder %%%FRAME%%%
/// becomes the frame%05d.png pattern.
std::string ffmpeg_path(const std::string& path, bool frames = true) {
  std::string abs = std::filesystem::absolute(path).string(), out = "file:";
  for (char ch : abs) out += ch == '%' && frames ? std::string("%%") : std::string(1, ch);
  if (frames) {
    const std::string mark = "%%%%%%FRAME%%%%%%";
    const size_t p = out.find(mark);
    if (p != std::string::npos) out.replace(p, mark.size(), "frame%05d.png");
  }
  return out;
}

/// Spherical interpolation of two vectors (falls back to lerp when they are nearly parallel).
void slerp(const float* a, const float* b, float* out, int n, double t) {
  double na = 0, nb = 0, dot = 0;
  for (int i = 0; i < n; ++i) {
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
    dot += double(a[i]) * b[i];
  }
  const double cosv = std::clamp(dot / std::max(std::sqrt(na * nb), 1e-30), -1.0, 1.0);
  const double omega = std::acos(cosv);
  const double so = std::sin(omega);
  double wa = 1 - t, wb = t;
  if (so > 1e-6) {
    wa = std::sin((1 - t) * omega) / so;
    wb = std::sin(t * omega) / so;
  }
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(wa * a[i] + wb * b[i]);
}

int run_interpolate(int argc, char** argv) {
  Options opts = make_options(
      "interpolate",
      "Renders frames between consecutive seeds (lerp in W or slerp in Z) as frame00000.png, ... (or "
      ".npy), or an edit sweep of one seed (--edit FILE --strengths A:B), and interpolation.mp4 from the PNG "
      "frames when ffmpeg is on PATH.");
  opts.option("seeds", "two or more seeds visited in order, e.g. 0,5,9 or 0-3 (one seed with --strengths)", "LIST")
      .option("frames", "frames per segment (between two consecutive seeds); with --strengths: all frames", "N", "30")
      .option("strengths",
              "an edit sweep: one seed's w moved by the one --edit direction with strengths from A to B "
              "(numpy.linspace(A, B, --frames), both ends included)",
              "A:B")
      .option("ws",
              "with --strengths: sweep this W [1, w_dim] or W+ [1, num_ws, w_dim] latent (a file as generate --ws "
              "reads) instead of a seed's",
              "FILE")
      .flag("loop", "add a segment from the last seed back to the first (a seamless loop)")
      .option("space", "w: lerp the ws (default); z: slerp the latents z", "w|z", "w")
      .option("trunc", "truncation psi toward w_avg (1 = none)", "PSI", "1")
      .option("trunc-cutoff", "truncate only ws rows [0, N)", "N")
      .option("noise-mode", "const, random (one fixed draw for all frames) or none", "MODE", "const")
      .option("noise-seed", "seed of --noise-mode random (default 0)", "S")
      .option("fps", "frames per second of the video", "N", "30")
      .flag("no-video", "do not run ffmpeg, only write the frames")
      .option("format",
              "frames as png (uint8: 1 channel gray, 2 gray + alpha, 3 RGB, 4 RGBA), npy (raw float32 "
              "[1, C, H, W], any channel count; no video) or both",
              "F", "png")
      .option("outdir", "output directory (created if missing)", "DIR", "out");
  add_class_option(opts);
  add_edit_options(opts);
  add_model_options(opts);
  add_quiet_option(opts);
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;

  const bool sweep = has(args, "strengths");
  const bool from_ws = has(args, "ws");
  if (from_ws && !sweep) fail(ErrorKind::invalid_argument, "--ws is only used with --strengths (an edit sweep)");
  if (from_ws && has(args, "seeds")) fail(ErrorKind::invalid_argument, "give either --seeds or --ws, not both");
  if (from_ws)
    for (const char* o : {"trunc", "trunc-cutoff", "class"})
      if (has(args, o))
        fail(ErrorKind::invalid_argument, "--", o, " does not apply to --ws input (ws go straight into synthesis)");
  if (!has(args, "seeds") && !from_ws)
    fail(ErrorKind::invalid_argument, sweep ? "--seeds SEED is required (the one seed the edit sweep moves)"
                                            : "--seeds LIST is required (at least two seeds, e.g. 0,5)");
  const std::vector<uint32_t> seeds = from_ws ? std::vector<uint32_t>{0} : parse_seeds(get(args, "seeds"));
  if (!sweep && seeds.size() < 2)
    fail(ErrorKind::invalid_argument,
         "--seeds: give at least two seeds to interpolate between (or one seed with --edit FILE --strengths A:B: an "
         "edit sweep)");
  const int frames = static_cast<int>(parse_int("frames", get(args, "frames"), 1, 100000));
  const bool loop = has(args, "loop");
  const std::string space = get(args, "space");
  if (space != "w" && space != "z")
    fail(ErrorKind::invalid_argument, "--space: unknown space '", space, "' (expected w or z)");
  double sweep_a = 0, sweep_b = 0;
  if (sweep) {
    const std::string t = get(args, "strengths");
    const size_t colon = t.find(':');
    if (colon == std::string::npos)
      fail(ErrorKind::invalid_argument, "--strengths ", shown(t), ": expected A:B (e.g. -3:3)");
    for (int k = 0; k < 2; ++k) {  // float64, as numpy.linspace takes Python floats
      const std::string part = k == 0 ? t.substr(0, colon) : t.substr(colon + 1);
      char* end = nullptr;
      const double v = std::strtod(part.c_str(), &end);
      if (part.empty() || end != part.c_str() + part.size() || part.find_first_of(" \t") != std::string::npos ||
          !std::isfinite(v) || !std::isfinite(static_cast<float>(v)))
        fail(ErrorKind::invalid_argument, "--strengths ", shown(t), ": '", shown(part),
             "' is not a finite number (A:B, e.g. -3:3)");
      (k == 0 ? sweep_a : sweep_b) = v;
    }
    if (seeds.size() != 1)
      fail(ErrorKind::invalid_argument, "--strengths sweeps one seed: give --seeds with one seed (got ", seeds.size(),
           ")");
    if (args.get_all("edit").size() != 1)
      fail(ErrorKind::invalid_argument, "--strengths sweeps one direction: give exactly one --edit FILE (got ",
           args.get_all("edit").size(), ")");
    if (loop || has(args, "space"))
      fail(ErrorKind::invalid_argument, "--strengths moves one seed's w: --", loop ? "loop" : "space",
           " does not apply");
  }
  Truncation trunc;
  trunc.psi = parse_float("trunc", get(args, "trunc"));
  if (has(args, "trunc-cutoff"))
    trunc.cutoff = static_cast<int>(parse_int("trunc-cutoff", get(args, "trunc-cutoff"), 0, 1 << 20));
  const NoiseMode noise_mode = parse_noise_mode(get(args, "noise-mode"));
  uint64_t noise_seed = 0;
  if (has(args, "noise-seed")) {
    if (noise_mode != NoiseMode::random)
      fail(ErrorKind::invalid_argument, "--noise-seed is only used with --noise-mode random");
    noise_seed = parse_u64("noise-seed", get(args, "noise-seed"));
  }
  const int fps = static_cast<int>(parse_int("fps", get(args, "fps"), 1, 1000));
  const OutputFormat fmt = parse_format(get(args, "format"));
  if (fmt == OutputFormat::u8npy)
    fail(ErrorKind::invalid_argument, "--format: interpolate writes png, npy or both, not u8npy");
  const bool quiet = has(args, "quiet");
  const int64_t S = static_cast<int64_t>(seeds.size());
  const int64_t segments = sweep ? 0 : loop ? S : S - 1;
  const int64_t total = sweep ? frames : segments * frames + (loop ? 0 : 1);
  if (total > 1000000) fail(ErrorKind::invalid_argument, "too many frames (", total, ")");
  const GeneratorOptions gen_options = generator_options(args);
  EditArgs edits = read_edit_args(args);  // the direction files, before the model loads
  WsArray ws_file;
  if (from_ws) ws_file = read_ws_array(get(args, "ws"));
  if (sweep && edits.strength_given[0])
    fail(ErrorKind::invalid_argument,
         "--strengths sets the strength of every frame: give --edit FILE without :STRENGTH");
  OutputDir out(get(args, "outdir"));

  Generator gen = open_generator(load_network(args, "interpolate"), gen_options);
  const ModelConfig& cfg = gen.config();
  if (!from_ws) class_labels(args, cfg, 1);  // validates --class before any work
  check_8bit_channels(cfg, fmt, /*grid=*/false);
  fit_edits(edits, cfg);
  edit_notes("interpolate", edits, quiet);
  // the sweep's strengths: numpy.linspace(A, B, N) in float64 (start + f * step, the last exactly B)
  std::vector<float> sweep_s;
  for (int f = 0; sweep && f < frames; ++f) {
    const double step = frames > 1 ? (sweep_b - sweep_a) / (frames - 1) : 0.0;
    sweep_s.push_back(static_cast<float>(f + 1 == frames && frames > 1 ? sweep_b : sweep_a + f * step));
  }
  const int chunk = chunk_size(gen, args, total);  // checks --batch against the memory it needs
  model_notices("interpolate", cfg, from_ws ? nullptr : &trunc, noise_mode, quiet);
  const Tensor z = z_from_seeds(seeds, cfg.z_dim);
  Tensor key_ws;
  if (from_ws) {  // one latent: a 2-D [num_ws, w_dim] array can only be one W+ latent here
    const Tensor& v = ws_file.values;
    const bool one_wplus = v.ndim() == 2 && v.dim(0) == cfg.num_ws;
    key_ws = fit_ws(v, get(args, "ws"), cfg, one_wplus ? WsLayout::wplus : WsLayout::unspecified);
    if (key_ws.dim(0) != 1)
      fail(ErrorKind::invalid_argument, "--ws ", shown(get(args, "ws")), " holds ", key_ws.dim(0),
           " latents: an edit sweep moves one (save that one alone)");
  } else if (space == "w" || sweep) {
    key_ws = gen.map(z, class_labels(args, cfg, S), trunc);
  }
  const int64_t row_len = int64_t(cfg.num_ws) * cfg.w_dim;

  Progress progress("sg2 interpolate", total, quiet);
  run_writing(out, [&] {
    for (int64_t b = 0; b < total; b += chunk) {
      const int64_t e = std::min<int64_t>(total, b + chunk);
      const int64_t n = e - b;
      Tensor ws({n, cfg.num_ws, cfg.w_dim});
      Tensor zf({n, cfg.z_dim});
      for (int64_t f = b; f < e && sweep; ++f)  // every frame the one seed's ws, moved below
        std::copy(key_ws.data(), key_ws.data() + row_len, ws.data() + (f - b) * row_len);
      for (int64_t f = b; f < e && !sweep; ++f) {
        const int64_t seg = std::min<int64_t>(f / frames, S - 1);
        const double t = f / frames >= segments ? 0.0 : double(f % frames) / frames;
        const int64_t ia = seg, ib = (seg + 1) % S;
        if (space == "w") {
          const float* a = key_ws.data() + ia * row_len;
          const float* c = key_ws.data() + ib * row_len;
          float* dst = ws.data() + (f - b) * row_len;
          const float tf = static_cast<float>(t);
          for (int64_t i = 0; i < row_len; ++i) dst[i] = a[i] + tf * (c[i] - a[i]);
        } else {
          slerp(z.data() + ia * cfg.z_dim, z.data() + ib * cfg.z_dim, zf.data() + (f - b) * cfg.z_dim, cfg.z_dim, t);
        }
      }
      if (space == "z" && !sweep) ws = gen.map(zf, class_labels(args, cfg, n), trunc);
      if (sweep) {
        for (int64_t f = b; f < e; ++f) {
          std::vector<WsEdit> one = edits.edits;
          one[0].strength = sweep_s[size_t(f)];
          Tensor row = ws.slice0(f - b, f - b + 1);
          apply_edits(row, one);
          std::copy(row.data(), row.data() + row_len, ws.data() + (f - b) * row_len);
        }
      } else {
        apply_edits(ws, edits.edits);
      }
      NoiseSpec noise;
      noise.mode = noise_mode;
      noise.seed = noise_seed;
      if (noise_mode == NoiseMode::random) noise.keys.assign(static_cast<size_t>(n), 0);
      Tensor img = synthesize_edited(gen, ws, noise, edits);
      for (int64_t i = 0; i < n; ++i) write_image(out, indexed_stem("frame", b + i, 5), img, i, fmt);
      progress.advance(n);
    }
  });
  progress.finish();
  out.commit();

  std::string video;
  if (!has(args, "no-video") && !writes_8bit(fmt)) {
    if (!quiet)
      say("interpolate", "note",
          "--format npy writes no PNG frames, so no video was made (--format both writes both; --no-video skips this "
          "note)");
  } else if (!has(args, "no-video")) {
    std::string ffmpeg;
    if (!find_on_path("ffmpeg", &ffmpeg)) {
      if (!quiet)
        say("interpolate", "note",
            "ffmpeg is not on PATH, so no video was made (the frames are in " + shown(out.path()) +
                "; --no-video skips this note)");
    } else {
      const std::string tmp = out.file(".interpolation.tmp.mp4");
      const int tmp_handle = register_temporary_file(tmp);  // an interrupt removes ffmpeg's half video
      std::string log;
      // Scale up small images (nearest neighbour) so players show them; even sizes for yuv420p.
      // (Non-square: both sides by the same factor, from the larger side; each stays even.)
      const int scale = cfg.img_resolution < 256 ? 256 / cfg.img_resolution : 1;
      // ffmpeg reads paths as URLs and patterns: absolute, with the file: protocol, '%' escaped,
      // so folder names like "-y", "pipe:1" or "100%d" stay plain paths. -frames:v: exactly this
      // run's frames, also when older frame files with higher numbers are in the folder.
      const int rc = run_process({ffmpeg, "-y", "-loglevel", "error", "-framerate", std::to_string(fps), "-i",
                                  ffmpeg_path(out.file("%%%FRAME%%%")), "-frames:v", std::to_string(total), "-vf",
                                  "scale=" + std::to_string(scale * cfg.width()) + ":" +
                                      std::to_string(scale * cfg.height()) + ":flags=neighbor",
                                  "-c:v", "libx264", "-pix_fmt", "yuv420p", "-f", "mp4", ffmpeg_path(tmp, false)},
                                 &log);
      if (rc != 0 || std::rename(tmp.c_str(), out.file("interpolation.mp4").c_str()) != 0) {
        std::remove(tmp.c_str());
        unregister_temporary_file(tmp_handle);
        while (!log.empty() && (log.back() == '\n' || log.back() == '\r')) log.pop_back();
        fail_hint(ErrorKind::io, "--no-video skips the video", "ffmpeg failed (exit ", rc, "): ", printable(log, 300),
                  " (the frames are in ", shown(out.path()), ")");
      }
      unregister_temporary_file(tmp_handle);
      video = "interpolation.mp4";
    }
  }
  if (!quiet)
    std::cout << "sg2 interpolate: " << total << (total == 1 ? " frame in " : " frames in ") << shown(out.path())
              << (video.empty() ? "" : " + " + video) << ", " << duration_text(progress.elapsed_s()) << "\n";
  return 0;
}

}  // namespace

SG2_COMMAND(interpolate, 30, "frames (and an mp4) between consecutive seeds, or along an edit direction",
            run_interpolate);

}  // namespace sg2::cli
