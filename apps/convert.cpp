// sg2 convert: a checkpoint (.pkl / .pt of any supported family) -> an sg2 model file.
//
// Reads the checkpoint natively and safely (sg2/convert.h: nothing in the file is ever
// executed), writes OUT atomically (a temporary file renamed into place, so a failed conversion
// never leaves a partial OUT), and reports on stderr anything the user should know (an estimated
// w_avg). Exit 0 on success, 2 for bad arguments, 1 for every other failure, with a one-line
// message naming the file.
#include <sys/stat.h>

#include <cxxopts.hpp>
#include <iostream>
#include <string>

#include "commands.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/model.h"
#include "sg2/npy.h"

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
    sg2::fail(sg2::ErrorKind::invalid_argument, "--", name, " must be an integer in [", lo, ", ", hi, "], got '", text,
              "'");
  return static_cast<int>(v);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int run_convert(int argc, char** argv) {
  cxxopts::Options opts(
      "sg2 convert",
      "Converts a StyleGAN2 checkpoint to an sg2 model file (.safetensors), without Python.\n"
      "Reads stylegan2-ada-pytorch and stylegan3-repo .pkl, NVIDIA TensorFlow StyleGAN2 / StyleGAN2-ADA .pkl,\n"
      "and rosinality .pt files; the family is detected from the file's structure. Nothing in the file is\n"
      "ever executed. OUT is written atomically.");
  opts.positional_help("IN OUT.safetensors");
  opts.add_options()("h,help", "show this help")(
      "w-avg-samples",
      "when the checkpoint has no w_avg (rosinality training checkpoints): average the mapping output "
      "over this many z",
      cxxopts::value<std::string>()->default_value("10000"),
      "N")("w-avg-seed", "RandomState seed of those z (one stream: RandomState(S).randn(N, z_dim))",
           cxxopts::value<std::string>()->default_value("0"),
           "S")("w-avg",
                "store this mean latent as w_avg (float32 .npy, [w_dim] or [1, w_dim]) instead of the checkpoint's "
                "own or an estimate: the mean your own pipeline truncated toward",
                cxxopts::value<std::string>(), "FILE.npy")("q,quiet", "print nothing on success")(
      "input", "checkpoint", cxxopts::value<std::string>())("output", "model file to write",
                                                            cxxopts::value<std::string>());
  opts.parse_positional({"input", "output"});
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    sg2::fail(sg2::ErrorKind::invalid_argument, e.what(), " (see sg2 convert --help)");
  }
  if (args.count("help")) {
    std::cout << opts.help() << "\n";
    return 0;
  }
  if (!args.count("input") || !args.count("output"))
    sg2::fail(sg2::ErrorKind::invalid_argument, "usage: sg2 convert IN OUT.safetensors (see sg2 convert --help)");
  if (!args.unmatched().empty())
    sg2::fail(sg2::ErrorKind::invalid_argument, "unexpected argument '", args.unmatched().front(), "'");
  const std::string in = args["input"].as<std::string>();
  const std::string out = args["output"].as<std::string>();
  sg2::ConvertOptions options;
  options.w_avg_samples = parse_int_option("w-avg-samples", args["w-avg-samples"].as<std::string>(), 1, 10000000);
  {
    const std::string& s = args["w-avg-seed"].as<std::string>();
    size_t pos = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != s.size() || s.empty() || s[0] == '-' || v > 4294967295ull)
      sg2::fail(sg2::ErrorKind::invalid_argument, "--w-avg-seed must be an integer in [0, 4294967295], got '", s, "'");
    options.w_avg_seed = static_cast<uint32_t>(v);
  }
  if (args.count("w-avg")) {
    if (args.count("w-avg-samples") || args.count("w-avg-seed"))
      sg2::fail(sg2::ErrorKind::invalid_argument,
                "--w-avg supplies w_avg; --w-avg-samples and --w-avg-seed shape an estimate: give one or the other");
    const std::string f = args["w-avg"].as<std::string>();
    try {
      options.w_avg = sg2::read_npy_tensor(f);
    } catch (const sg2::Error& e) {
      if (e.kind() != sg2::ErrorKind::invalid_argument) throw;
      sg2::fail(sg2::ErrorKind::bad_file, f, ": ", e.what());
    }
  }
  // The output is a safetensors model file: a checkpoint's extension would mislead every later
  // reader (and sg2 itself would still read it by content).
  for (const char* ext : {".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".npy", ".npz"}) {
    const std::string e = ext;
    if (out.size() > e.size() && out.compare(out.size() - e.size(), e.size(), e) == 0)
      sg2::fail(sg2::ErrorKind::invalid_argument, "OUT ", out,
                " has a checkpoint's extension, but sg2 convert writes a "
                "safetensors model file: name it ",
                out.substr(0, out.size() - e.size()), ".safetensors");
  }
  if (same_file(in, out))
    sg2::fail(sg2::ErrorKind::invalid_argument, "OUT ", out, " is the input file; choose another name");
  sg2::ConvertResult res;
  try {
    res = sg2::convert_checkpoint_report(in, options);
  } catch (const sg2::Error& e) {  // a supplied w_avg that does not fit: name the file
    if (e.kind() != sg2::ErrorKind::invalid_argument || !args.count("w-avg")) throw;
    sg2::fail(sg2::ErrorKind::invalid_argument, "--w-avg ", args["w-avg"].as<std::string>(), ": ", e.what());
  }
  for (const auto* list : {&res.report.warnings, &res.report.config_warnings})
    for (const std::string& w : *list) std::cerr << "sg2 convert: warning: " << w << "\n";
  if (!res.report.w_avg_missing && (args.count("w-avg-samples") || args.count("w-avg-seed")))
    std::cerr << "sg2 convert: note: --w-avg-samples and --w-avg-seed were not used: the checkpoint stores its own "
                 "w_avg, which is kept\n";
  sg2::save_model_file(out, res.model);
  if (!args.count("quiet")) {
    const sg2::ModelConfig& c = res.model.config;
    std::cout << "converted " << in << " (" << res.report.family << ", " << res.report.generator << ", "
              << c.img_resolution << "x" << c.img_resolution << "x" << c.img_channels << ", "
              << sg2::parameter_count(res.model) << " parameters) -> " << out
              << (res.report.w_avg_supplied ? ", w_avg from " + args["w-avg"].as<std::string>() : std::string())
              << "\n";
  }
  return 0;
}

}  // namespace

SG2_COMMAND(convert, 40, "convert a checkpoint (.pkl / .pt) to an sg2 model file", run_convert);
