// sg2 inspect: what a checkpoint or model file holds — family, resolution, num_ws, mapping depth,
// c_dim, image channels, channels per resolution, fp16 blocks, conv_clamp, noise buffers, w_avg,
// parameter count. Checkpoints are read natively and safely (sg2/convert.h) and are
// converted in memory only; nothing is written. --json prints one JSON object for machines.
#include <iostream>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/text.h"

namespace {

int run_inspect(int argc, char** argv) {
  sg2::cli::Options opts(
      "sg2 inspect",
      "Describes a StyleGAN2 checkpoint (.pkl / .pt) or an sg2 model file: family, resolution, num_ws,\n"
      "mapping depth, c_dim, image channels, channels per resolution, fp16 blocks, conv_clamp, noise\n"
      "buffers, w_avg and parameter count. Nothing in the file is ever executed.",
      76);
  opts.flag("json", "print one JSON object instead of text").positional("FILE");
  const sg2::cli::Args args = opts.parse(argc, argv);
  if (args.help()) {
    std::cout << opts.help() << "\n";
    return 0;
  }
  const std::vector<std::string>& files = args.positional();
  if (files.empty())
    sg2::fail(sg2::ErrorKind::invalid_argument, "usage: sg2 inspect FILE [--json] (see sg2 inspect --help)");
  if (files.size() > 1)
    sg2::fail(sg2::ErrorKind::invalid_argument, "unexpected argument '", sg2::printable(files[1]),
              "' (see sg2 inspect --help)");
  sg2::InspectReport r = sg2::inspect_file(files[0]);
  std::cout << (args.has("json") ? sg2::inspect_to_json(r, 2) + "\n" : sg2::inspect_to_text(r));
  return 0;
}

}  // namespace

SG2_COMMAND(inspect, 50, "describe a checkpoint or model file (--json for machines)", run_inspect);
