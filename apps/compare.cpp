// sg2 compare: the golden-image regression check — two PNGs, two .npy files, or two folders.
//
// Exact equality unless thresholds are given; with thresholds every given one must hold. One line
// per file on stdout (PASS/FAIL, max |diff|, mean |diff|, PSNR, differing values); exit status 0
// only when every file passes, 1 when any fails, 2 on a usage error.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "cli_util.h"
#include "commands.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"

namespace sg2::cli {
namespace {

enum class Kind { png, npy, other };

Kind kind_of(const std::string& path) {
  auto ends = [&](const char* ext) {
    const std::string e = ext;
    if (path.size() < e.size()) return false;
    std::string tail = path.substr(path.size() - e.size());
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return tail == e;
  };
  if (ends(".png")) return Kind::png;
  if (ends(".npy")) return Kind::npy;
  return Kind::other;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct Thresholds {
  std::optional<double> max_abs, min_psnr;
};

struct Result {
  bool pass = false;
  std::string detail;  // the statistics, or why the pair could not be compared
};

std::string fmt_num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// Statistics of |a - b| over n values given by the accessor; peak is the signal range for PSNR
/// (255 for 8-bit images, 2 for [-1, 1] float images).
template <typename F>
Result judge(int64_t n, F diff_at, double peak, const std::string& unit, const Thresholds& th) {
  double max_abs = 0, sum = 0, sq = 0;
  int64_t differing = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = diff_at(i);
    if (std::isnan(d)) d = std::numeric_limits<double>::infinity();
    if (d != 0) ++differing;
    max_abs = std::max(max_abs, d);
    sum += d;
    sq += d * d;
  }
  const double mean = n > 0 ? sum / double(n) : 0.0;
  const double mse = n > 0 ? sq / double(n) : 0.0;
  const double psnr = mse > 0 ? 10.0 * std::log10(peak * peak / mse) : std::numeric_limits<double>::infinity();
  Result r;
  if (!th.max_abs && !th.min_psnr) {
    r.pass = differing == 0;
  } else {
    r.pass = true;
    if (th.max_abs && !(max_abs <= *th.max_abs)) r.pass = false;
    if (th.min_psnr && !(psnr >= *th.min_psnr)) r.pass = false;
  }
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.4g", n > 0 ? 100.0 * double(differing) / double(n) : 0.0);
  r.detail = "max|diff| " + fmt_num(max_abs) + unit + ", mean|diff| " + fmt_num(mean) + ", PSNR " + fmt_num(psnr) +
             " dB, " + std::to_string(differing) + " of " + std::to_string(n) + " values differ (" + pct + " %)";
  return r;
}

Result compare_files(const std::string& a, const std::string& b, const Thresholds& th) {
  const Kind ka = kind_of(a), kb = kind_of(b);
  if (ka != kb || ka == Kind::other)
    return {false, "cannot compare " + a + " with " + b + ": both must be .png or both .npy"};
  try {
    if (ka == Kind::png) {
      const Image8 x = read_png(a), y = read_png(b);
      if (x.width != y.width || x.height != y.height || x.channels != y.channels)
        return {false, "shape mismatch: " + std::to_string(x.width) + "x" + std::to_string(x.height) + "x" +
                           std::to_string(x.channels) + " vs " + std::to_string(y.width) + "x" +
                           std::to_string(y.height) + "x" + std::to_string(y.channels) + " (WxHxC)"};
      return judge(static_cast<int64_t>(x.pixels.size()),
                   [&](int64_t i) { return std::fabs(double(x.pixels[i]) - double(y.pixels[i])); }, 255.0, " levels", th);
    }
    const Tensor x = read_npy_tensor(a), y = read_npy_tensor(b);
    if (x.shape() != y.shape()) return {false, "shape mismatch: " + x.shape_str() + " vs " + y.shape_str()};
    return judge(x.numel(), [&](int64_t i) { return std::fabs(double(x[i]) - double(y[i])); }, 2.0, "", th);
  } catch (const Error& e) {
    return {false, e.what()};
  }
}

std::set<std::string> list_dir(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) fail(ErrorKind::io, "cannot read folder ", dir);
  while (dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (kind_of(name) != Kind::other && !is_dir(dir + "/" + name)) names.insert(name);
  }
  ::closedir(d);
  return names;
}

int run_compare(int argc, char** argv) {
  cxxopts::Options opts = make_options(
      "compare",
      "Compares two images (.png, uint8 levels), two .npy arrays (float), or two folders (files paired by name; "
      ".png and .npy files are compared, a file on one side only fails). Without thresholds the values must be "
      "identical; with thresholds every given one must hold. PSNR = 10 log10(peak^2 / MSE) with peak 255 for PNG "
      "and 2 for .npy (the [-1, 1] image range: 10 log10(4 / MSE)). Exit status: 0 when every file passes, 1 "
      "otherwise, 2 on a usage error.");
  opts.add_options()
      ("max-abs", "largest allowed |a - b| (PNG: levels, npy: values)", cxxopts::value<std::string>(), "X")
      ("min-psnr", "smallest allowed PSNR in dB", cxxopts::value<std::string>(), "Y")
      ("paths", "A B", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"paths"});
  opts.positional_help("A B");
  add_quiet_option(opts);
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;
  std::vector<std::string> paths;
  if (has(args, "paths")) paths = args["paths"].as<std::vector<std::string>>();
  if (paths.size() != 2)
    fail(ErrorKind::invalid_argument, "expected two paths A B, got ", paths.size(), " (see sg2 compare --help)");
  Thresholds th;
  if (has(args, "max-abs")) {
    th.max_abs = parse_float("max-abs", get(args, "max-abs"));
    if (*th.max_abs < 0) fail(ErrorKind::invalid_argument, "--max-abs must be >= 0");
  }
  if (has(args, "min-psnr")) th.min_psnr = parse_float("min-psnr", get(args, "min-psnr"));
  const bool quiet = has(args, "quiet");

  const std::string& a = paths[0];
  const std::string& b = paths[1];
  for (const std::string& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) fail(ErrorKind::io, p, ": no such file or folder");
  }
  // name -> result
  std::vector<std::pair<std::string, Result>> results;
  if (is_dir(a) != is_dir(b)) fail(ErrorKind::invalid_argument, "cannot compare a folder with a file: ", a, " vs ", b);
  if (is_dir(a)) {
    const std::set<std::string> na = list_dir(a), nb = list_dir(b);
    std::set<std::string> all = na;
    all.insert(nb.begin(), nb.end());
    if (all.empty()) fail(ErrorKind::invalid_argument, "no .png or .npy files in ", a, " or ", b);
    for (const std::string& name : all) {
      if (!na.count(name)) results.push_back({name, {false, "missing in " + a}});
      else if (!nb.count(name)) results.push_back({name, {false, "missing in " + b}});
      else results.push_back({name, compare_files(a + "/" + name, b + "/" + name, th)});
    }
  } else {
    results.push_back({a + " vs " + b, compare_files(a, b, th)});
  }
  int64_t failed = 0;
  for (const auto& [name, r] : results) {
    if (!r.pass) ++failed;
    if (!quiet || !r.pass) std::cout << (r.pass ? "PASS " : "FAIL ") << name << ": " << r.detail << "\n";
  }
  if (!quiet) {
    std::string rule = "identical values";
    if (th.max_abs || th.min_psnr) {
      rule.clear();
      if (th.max_abs) rule += "max|diff| <= " + fmt_num(*th.max_abs);
      if (th.min_psnr) rule += std::string(rule.empty() ? "" : " and ") + "PSNR >= " + fmt_num(*th.min_psnr) + " dB";
    }
    std::cout << "sg2 compare: " << (results.size() - failed) << " of " << results.size() << " files match (" << rule
              << ")" << (failed ? ", " + std::to_string(failed) + " do not" : std::string()) << "\n";
  }
  std::cout.flush();
  return failed == 0 ? 0 : 1;
}

}  // namespace

SG2_COMMAND(compare, 60, "golden-image check: two images, .npy files or folders", run_compare);

}  // namespace sg2::cli
