// sg2 convert: a checkpoint (.pkl / .pt of any supported family) -> an sg2 model file.
//
// Reads the checkpoint natively and safely (sg2/convert.h: nothing in the file is ever
// executed), writes OUT atomically (a temporary file renamed into place, so a failed conversion
// never leaves a partial OUT), and reports on stderr anything the user should know (an estimated
// w_avg). Exit 0 on success, 2 for bad arguments, 1 for every other failure, with a one-line
// message naming the file.
#include <sys/stat.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli_options.h"
#include "cli_util.h"
#include "commands.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/model.h"
#include "sg2/npy.h"
#include "sg2/text.h"

namespace {

int parse_int_option(const std::string& name, const std::string& text, long lo, long hi) {
  size_t pos = 0;
  long v = 0;
  try {
    v = std::stol(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != text.size() || text.empty() || v < lo || v > hi)
    sg2::fail(sg2::ErrorKind::invalid_argument, "--", name, " must be an integer in [", lo, ", ", hi, "], got '",
              sg2::printable(text), "'");
  return static_cast<int>(v);
}

int run_convert(int argc, char** argv) {
  sg2::cli::Options opts(
      "sg2 convert",
      "Converts a StyleGAN2 checkpoint to an sg2 model file (.safetensors), without Python.\n"
      "Reads stylegan2-ada-pytorch and stylegan3-repo .pkl, NVIDIA TensorFlow StyleGAN2 / StyleGAN2-ADA .pkl,\n"
      "and rosinality .pt files; the family is detected from the file's structure. Nothing in the file is\n"
      "ever executed. OUT is written atomically.",
      76);
  opts.option("w-avg-samples",
              "when the checkpoint has no w_avg (rosinality training checkpoints): average the mapping output "
              "over this many z",
              "N", "10000")
      .option("w-avg-seed", "RandomState seed of those z (one stream: RandomState(S).randn(N, z_dim))", "S", "0")
      .option("w-avg",
              "store this mean latent as w_avg (float32 .npy, [w_dim] or [1, w_dim]) instead of the checkpoint's "
              "own or an estimate: the mean your own pipeline truncated toward",
              "FILE.npy")
      .flag("q,quiet", "print nothing on success")
      .positional("IN OUT.safetensors");
  const sg2::cli::Args args = opts.parse(argc, argv);
  if (args.help()) {
    std::cout << opts.help() << "\n";
    return 0;
  }
  const std::vector<std::string>& files = args.positional();
  if (files.size() < 2)
    sg2::fail(sg2::ErrorKind::invalid_argument, "usage: sg2 convert IN OUT.safetensors (see sg2 convert --help)");
  if (files.size() > 2)
    sg2::fail(sg2::ErrorKind::invalid_argument, "unexpected argument '", sg2::printable(files[2]),
              "' (see sg2 convert --help)");
  const std::string in = files[0];
  const std::string out = files[1];
  sg2::ConvertOptions options;
  options.w_avg_samples = parse_int_option("w-avg-samples", args.get("w-avg-samples"), 1, 10000000);
  {
    const std::string s = args.get("w-avg-seed");
    size_t pos = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != s.size() || s.empty() || s[0] == '-' || v > 4294967295ull)
      sg2::fail(sg2::ErrorKind::invalid_argument, "--w-avg-seed must be an integer in [0, 4294967295], got '",
                sg2::printable(s), "'");
    options.w_avg_seed = static_cast<uint32_t>(v);
  }
  if (args.has("w-avg")) {
    if (args.has("w-avg-samples") || args.has("w-avg-seed"))
      sg2::fail(sg2::ErrorKind::invalid_argument,
                "--w-avg supplies w_avg; --w-avg-samples and --w-avg-seed shape an estimate: give one or the other");
    const std::string f = args.get("w-avg");
    try {
      options.w_avg = sg2::read_npy_tensor(f);
    } catch (const sg2::Error& e) {
      if (e.kind() != sg2::ErrorKind::invalid_argument) throw;
      throw sg2::Error(sg2::ErrorKind::bad_file, sg2::cli::shown(f) + ": " + e.message(), e.hint());
    }
  }
  // The output is a safetensors model file: a checkpoint's extension would mislead every later
  // reader (and sg2 itself would still read it by content).
  for (const char* ext : {".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".npy", ".npz"}) {
    const std::string e = ext;
    if (out.size() > e.size() && out.compare(out.size() - e.size(), e.size(), e) == 0)
      sg2::fail(sg2::ErrorKind::invalid_argument, "OUT ", sg2::cli::shown(out),
                " has a checkpoint's extension, but sg2 convert writes a "
                "safetensors model file: name it ",
                sg2::cli::shown(out.substr(0, out.size() - e.size())), ".safetensors");
  }
  if (sg2::cli::same_file(in, out))
    sg2::fail(sg2::ErrorKind::invalid_argument, "OUT ", sg2::cli::shown(out),
              " is the input file; choose another name");
  sg2::ConvertResult res;
  try {
    res = sg2::convert_checkpoint_report(in, options);
  } catch (const sg2::Error& e) {  // a supplied w_avg that does not fit: name the file
    if (e.kind() != sg2::ErrorKind::invalid_argument || !args.has("w-avg")) throw;
    throw e.with_message("--w-avg " + sg2::cli::shown(args.get("w-avg")) + ": " + e.message());
  }
  for (const auto* list : {&res.report.warnings, &res.report.config_warnings})
    for (const std::string& w : *list) sg2::cli::say("convert", "warning", w);
  if (!res.report.w_avg_missing && (args.has("w-avg-samples") || args.has("w-avg-seed")))
    sg2::cli::say("convert", "note",
                  "--w-avg-samples and --w-avg-seed were not used: the checkpoint stores its own w_avg, which is kept");
  sg2::save_model_file(out, res.model);
  if (!args.has("quiet")) {
    const sg2::ModelConfig& c = res.model.config;
    using sg2::cli::shown;
    std::cout << "converted " << shown(in) << " (" << shown(res.report.family) << ", " << shown(res.report.generator)
              << ", " << c.width() << "x" << c.height() << "x" << c.img_channels << ", "
              << sg2::parameter_count(res.model) << " parameters) -> " << shown(out)
              << (res.report.w_avg_supplied ? ", w_avg from " + shown(args.get("w-avg")) : std::string()) << "\n";
  }
  return 0;
}

}  // namespace

SG2_COMMAND(convert, 40, "convert a checkpoint (.pkl / .pt) to an sg2 model file", run_convert);
