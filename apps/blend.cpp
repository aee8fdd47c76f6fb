// sg2 blend: network blending by layer swapping, as Justin Pinkney's stylegan2 blend_models.py
// (sg2/blend.h has the rule): synthesis blocks below --at from --low, from --at up from --high,
// mapping and w_avg from --low; --blend-width N mixes the layers around --at with blend_models.py's
// logistic. Writes a model file (atomically) that loads wherever a model file does.
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <utility>

#include "cli_util.h"
#include "commands.h"
#include "sg2/blend.h"
#include "sg2/error.h"
#include "sg2/model.h"

namespace sg2::cli {
namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int run_blend(int argc, char** argv) {
  Options opts = make_options(
      "blend",
      "Blends two networks by layer swapping (Justin Pinkney's blend_models.py): synthesis blocks below --at from "
      "--low, from --at up from --high, the mapping network and w_avg from --low. Writes a model file.");
  opts.option("low", "the network of the low-resolution blocks, the mapping and w_avg (model file or checkpoint)",
              "FILE")
      .option("high", "the network of the blocks from --at up (model file or checkpoint)", "FILE")
      .option("at", "the first block resolution taken from --high: a power of two from 4 to twice the top", "RES")
      .option("blend-width",
              "a smooth switch: layer p gets 1 / (1 + exp(-(p - p_at) / N)) of --high (blend_models.py's "
              "blend_width; layers counted two per block)",
              "N")
      .option("out", "the blended model file (.safetensors), written whole or not at all", "FILE");
  add_quiet_option(opts);
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;

  for (const char* o : {"low", "high", "at", "out"})
    if (!has(args, o))
      fail(ErrorKind::invalid_argument, "--", o,
           " is required (sg2 blend --low A.pkl --high B.pkl --at 32 --out blended.safetensors)");
  const std::string low = get(args, "low"), high = get(args, "high"), out = get(args, "out");
  BlendOptions bo;
  bo.at = static_cast<int>(parse_int("at", get(args, "at"), 1, 1 << 20));
  if (bo.at < 4 || (bo.at & (bo.at - 1)) != 0)
    fail(ErrorKind::invalid_argument, "--at ", bo.at, ": the switch resolution must be a power of two (4, 8, 16, ...)");
  if (has(args, "blend-width")) {
    const float w = parse_float("blend-width", get(args, "blend-width"));
    if (!(w > 0)) fail(ErrorKind::invalid_argument, "--blend-width ", get(args, "blend-width"), ": must be positive");
    bo.width = w;
  }
  if (out.empty() || out.back() == '/' || is_dir(out))
    fail(ErrorKind::invalid_argument, "--out ", shown(out), ": give a file name (e.g. blended.safetensors)");
  // The output is a safetensors model file: a checkpoint's extension would mislead (as sg2 convert).
  for (const char* ext : {".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".npy", ".npz"}) {
    const std::string e = ext;
    if (out.size() > e.size() && out.compare(out.size() - e.size(), e.size(), e) == 0)
      fail(ErrorKind::invalid_argument, "--out ", shown(out),
           " has a checkpoint's extension, but sg2 blend writes a safetensors model file: name it ",
           shown(out.substr(0, out.size() - e.size())), ".safetensors");
  }
  for (const auto& [option, path] : {std::pair<const char*, std::string>{"--low", low}, {"--high", high}})
    if (same_file(out, path))
      fail(ErrorKind::invalid_argument, "--out ", shown(out), " is the ", option,
           " network's file: choose another name (the blend is read from it while it is written)");
  const size_t slash = out.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash);
  if (!is_dir(folder))
    fail(ErrorKind::invalid_argument, "--out ", shown(out), ": the folder ", shown(folder), " does not exist");
  const bool quiet = has(args, "quiet");
  bo.low_what = shown(low);
  bo.high_what = shown(high);

  const Model a = load_model(low);
  const Model b = load_model(high);
  const Model c = blend_models(a, b, bo);
  save_model_file(out, c);
  if (!quiet) {
    std::string from_low, from_high, mixed;
    for (const BlendLayer& l : blend_layers(c.config, bo)) {
      const std::string name = std::to_string(l.resolution) + (l.level == 0 ? "a" : "b");
      if (l.high_share == 0)
        from_low += (from_low.empty() ? "" : " ") + name;
      else if (l.high_share == 1)
        from_high += (from_high.empty() ? "" : " ") + name;
      else {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%s %.3f", name.c_str(), l.high_share);
        mixed += (mixed.empty() ? "" : ", ") + std::string(buf);
      }
    }
    std::cout << "sg2 blend: " << shown(out) << " (" << c.config.width() << "x" << c.config.height()
              << "): layers from " << shown(low) << ": " << (from_low.empty() ? "none" : from_low) << "; from "
              << shown(high) << ": " << (from_high.empty() ? "none" : from_high)
              << (mixed.empty() ? "" : "; mixed (share of --high): " + mixed)
              << " (RESa = conv0/const, RESb = conv1 + torgb); mapping and w_avg from " << shown(low) << "\n";
  }
  return 0;
}

}  // namespace

SG2_COMMAND(blend, 45, "blend two networks by layer swapping (blend_models.py)", run_blend);

}  // namespace sg2::cli
