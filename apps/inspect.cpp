// sg2 inspect: what a checkpoint or model file holds — family, resolution, num_ws, mapping depth,
// c_dim, image channels, channels per resolution, fp16 blocks, conv_clamp, noise buffers, w_avg,
// parameter count. Checkpoints are read natively and safely (sg2/convert.h) and are
// converted in memory only; nothing is written. --json prints one JSON object for machines.
#include <cxxopts.hpp>
#include <iostream>
#include <string>

#include "commands.h"
#include "sg2/convert.h"
#include "sg2/error.h"

namespace {

int run_inspect(int argc, char** argv) {
  cxxopts::Options opts(
      "sg2 inspect",
      "Describes a StyleGAN2 checkpoint (.pkl / .pt) or an sg2 model file: family, resolution, num_ws,\n"
      "mapping depth, c_dim, image channels, channels per resolution, fp16 blocks, conv_clamp, noise\n"
      "buffers, w_avg and parameter count. Nothing in the file is ever executed.");
  opts.positional_help("FILE");
  opts.add_options()("h,help", "show this help")("json", "print one JSON object instead of text")(
      "file", "checkpoint or model file", cxxopts::value<std::string>());
  opts.parse_positional({"file"});
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    sg2::fail(sg2::ErrorKind::invalid_argument, e.what(), " (see sg2 inspect --help)");
  }
  if (args.count("help")) {
    std::cout << opts.help() << "\n";
    return 0;
  }
  if (!args.count("file"))
    sg2::fail(sg2::ErrorKind::invalid_argument, "usage: sg2 inspect FILE [--json] (see sg2 inspect --help)");
  if (!args.unmatched().empty())
    sg2::fail(sg2::ErrorKind::invalid_argument, "unexpected argument '", args.unmatched().front(), "'");
  sg2::InspectReport r = sg2::inspect_file(args["file"].as<std::string>());
  std::cout << (args.count("json") ? sg2::inspect_to_json(r, 2) + "\n" : sg2::inspect_to_text(r));
  return 0;
}

}  // namespace

SG2_COMMAND(inspect, 50, "describe a checkpoint or model file (--json for machines)", run_inspect);
