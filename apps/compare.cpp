// sg2 compare: the golden-image regression check — two PNGs, two .npy files, or two folders
// (walked with their subfolders).
//
// Exact equality unless thresholds are given; with thresholds every given one must hold. PNGs are
// decoded by libpng (sg2::PngReader: CRCs, palette indices, no extra image data) at their own bit
// depth, row by row, and refused above --max-pixels before any image data is decompressed. .npy
// float arrays (float16/32/64) are compared in double, uint8 arrays in levels as 8-bit PNGs. Equal
// values, equal infinities and NaN against NaN count as equal. One line per file on stdout
// (PASS/FAIL, max |diff|, mean |diff|, PSNR, differing values) and a summary that says what a
// folder walk included and ignored; every file name and path printed is escaped (sg2::printable).
// Exit status 0 only when every file passes, 1 when any fails, 2 on a usage error.
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
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
#include "sg2/text.h"

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

/// A file or folder name as printed: escaped (a name may hold terminal escapes or newlines), never
/// cut short.
std::string shown(const std::string& path) { return printable(path, 4096); }

/// An error's message with every raw occurrence of `paths` (the library names files as given)
/// replaced by its escaped form.
std::string with_paths_shown(std::string message, std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end(), [](const std::string& x, const std::string& y) { return x.size() > y.size(); });
  for (const std::string& p : paths) {
    if (p.empty()) continue;
    const std::string esc = shown(p);
    for (size_t at = message.find(p); at != std::string::npos; at = message.find(p, at + esc.size())) {
      message.replace(at, p.size(), esc);
    }
  }
  return message;
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

/// Statistics of |a - b|, accumulated value by value (PNGs arrive row by row). Equal values, equal
/// infinities and two NaNs (whatever their payloads) count as equal (|diff| 0); any other pair with
/// a NaN or an infinity differs by infinity.
struct DiffStats {
  double max_abs = 0, sum = 0, sq = 0;
  int64_t differing = 0, n = 0;
  void add(double x, double y) {
    double d = 0;
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) {
      d = std::fabs(x - y);
      if (std::isnan(d)) d = std::numeric_limits<double>::infinity();
    }
    if (d != 0) ++differing;
    max_abs = std::max(max_abs, d);
    sum += d;
    sq += d * d;
    ++n;
  }
};

/// The verdict and its line; peak is the signal range for PSNR (255 or 65535 for PNG levels and
/// 255 for uint8 arrays, 2 for [-1, 1] float images).
Result judge(const DiffStats& s, double peak, const std::string& unit, const Thresholds& th) {
  const double mean = s.n > 0 ? s.sum / double(s.n) : 0.0;
  const double mse = s.n > 0 ? s.sq / double(s.n) : 0.0;
  const double psnr = mse > 0 ? 10.0 * std::log10(peak * peak / mse) : std::numeric_limits<double>::infinity();
  Result r;
  if (!th.max_abs && !th.min_psnr) {
    r.pass = s.differing == 0;
  } else {
    r.pass = true;
    if (th.max_abs && !(s.max_abs <= *th.max_abs)) r.pass = false;
    if (th.min_psnr && !(psnr >= *th.min_psnr)) r.pass = false;
  }
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.4g", s.n > 0 ? 100.0 * double(s.differing) / double(s.n) : 0.0);
  r.detail = "max|diff| " + fmt_num(s.max_abs) + unit + ", mean|diff| " + fmt_num(mean) + ", PSNR " + fmt_num(psnr) +
             " dB, " + std::to_string(s.differing) + " of " + std::to_string(s.n) + " values differ (" + pct + " %)";
  return r;
}

/// Two PNGs, decoded by libpng (CRCs and palette indices checked) row by row at their own
/// precision: 16-bit files are compared at 16 bits. Memory: a row of each.
Result compare_pngs(const std::string& a, const std::string& b, const Thresholds& th, int64_t max_pixels) {
  PngReader x(a, std::numeric_limits<int64_t>::max()), y(b, std::numeric_limits<int64_t>::max());  // headers only
  for (const PngReader* r : {&x, &y}) {
    const int64_t pixels = int64_t(r->width()) * r->height();
    if (pixels > max_pixels)
      return {false, shown(r == &x ? a : b) + ": " + std::to_string(r->width()) + "x" + std::to_string(r->height()) +
                         " (" + std::to_string(pixels) + " pixels) is more than --max-pixels " +
                         std::to_string(max_pixels) + "; raise --max-pixels to compare it"};
  }
  if (x.width() != y.width() || x.height() != y.height() || x.channels() != y.channels())
    return {false, "shape mismatch: " + std::to_string(x.width()) + "x" + std::to_string(x.height()) + "x" +
                       std::to_string(x.channels()) + " vs " + std::to_string(y.width()) + "x" +
                       std::to_string(y.height()) + "x" + std::to_string(y.channels()) + " (WxHxC)"};
  if (x.bits() != y.bits())
    return {false,
            "bit depth mismatch: " + std::to_string(x.bits()) + " vs " + std::to_string(y.bits()) + " bits per sample"};
  DiffStats s;
  for (int row = 0; row < x.height(); ++row) {
    const std::vector<uint16_t>& rx = x.next_row();
    const std::vector<uint16_t>& ry = y.next_row();
    for (size_t i = 0; i < rx.size(); ++i) s.add(double(rx[i]), double(ry[i]));
  }
  x.finish();  // the chunks after the image data are checked too: a verdict needs whole files
  y.finish();
  const bool wide = x.bits() == 16;
  return judge(s, wide ? 65535.0 : 255.0, wide ? " levels (16-bit)" : " levels", th);
}

bool is_uint8(const NpyArray& x) { return x.dtype.size() == 3 && x.dtype[1] == 'u' && x.dtype[2] == '1'; }

/// Two .npy arrays: float16/32/64 in double (a float32 against a float64 is widened, never the
/// float64 narrowed), uint8 exactly in levels (as 8-bit PNGs: PSNR peak 255). A uint8 array
/// against a float one is refused: levels 0-255 and [-1, 1] values are not one scale.
Result compare_npys(const std::string& a, const std::string& b, const Thresholds& th) {
  const NpyArray x = read_npy(a), y = read_npy(b);
  // Every dtype is checked before the shapes (two empty arrays of an unsupported dtype fail too).
  npy_values_f64(x, 0, 0, nullptr, a);
  npy_values_f64(y, 0, 0, nullptr, b);
  const bool u8 = is_uint8(x);
  if (u8 != is_uint8(y)) {
    auto kind = [](const NpyArray& v) {
      return std::string(is_uint8(v) ? "a uint8 array (" : "a float array (") + printable(v.dtype, 24) + ")";
    };
    return {false, "cannot compare " + kind(x) + " with " + kind(y) +
                       ": uint8 values are levels 0-255, float values are compared as they are; convert one side"};
  }
  if (x.shape != y.shape)
    return {false, "shape mismatch: " + shape_to_string(x.shape) + " vs " + shape_to_string(y.shape)};
  const size_t n = size_t(Tensor::numel_of(x.shape));
  constexpr size_t kChunk = 4096;
  std::vector<double> vx(std::min(n, kChunk)), vy(vx.size());
  DiffStats s;
  for (size_t first = 0; first < n; first += kChunk) {
    const size_t count = std::min(kChunk, n - first);
    npy_values_f64(x, first, count, vx.data(), a);
    npy_values_f64(y, first, count, vy.data(), b);
    for (size_t i = 0; i < count; ++i) s.add(vx[i], vy[i]);
  }
  return u8 ? judge(s, 255.0, " levels", th) : judge(s, 2.0, "", th);
}

Result compare_files(const std::string& a, const std::string& b, const Thresholds& th, int64_t max_pixels) {
  const Kind ka = kind_of(a), kb = kind_of(b);
  if (ka != kb || ka == Kind::other)
    return {false, "cannot compare " + shown(a) + " with " + shown(b) + ": both must be .png or both .npy"};
  try {
    return ka == Kind::png ? compare_pngs(a, b, th, max_pixels) : compare_npys(a, b, th);
  } catch (const Error& e) {
    return {false, with_paths_shown(e.what(), {a, b})};
  }
}

/// The .png and .npy files of a folder and of its subfolders, by path relative to the folder.
/// Subfolders are walked (not symbolic links to folders, which are counted as skipped; 32
/// levels at most); other files are counted as ignored.
struct Listing {
  std::set<std::string> files;
  int64_t subfolders = 0, linked_folders = 0, ignored = 0;
};

void list_dir(const std::string& root, const std::string& rel, int depth, Listing& out) {
  const std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) fail(ErrorKind::io, "cannot read folder ", shown(dir), ": ", std::strerror(errno));
  std::vector<std::string> names;
  while (dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names) {
    const std::string r = rel.empty() ? name : rel + "/" + name;
    const std::string full = root + "/" + r;
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) continue;
    const bool link = S_ISLNK(st.st_mode);
    if (link && ::stat(full.c_str(), &st) != 0) {
      ++out.ignored;  // a dangling link
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (link) {
        ++out.linked_folders;
      } else {
        if (depth >= 32) fail(ErrorKind::invalid_argument, "folders nested more than 32 deep at ", shown(full));
        ++out.subfolders;
        list_dir(root, r, depth + 1, out);
      }
    } else if (S_ISREG(st.st_mode) && kind_of(name) != Kind::other) {
      out.files.insert(r);
    } else {
      ++out.ignored;
    }
  }
}

int run_compare(int argc, char** argv) {
  Options opts = make_options(
      "compare",
      "Compares two images (.png, in levels of their bit depth: 8 or 16 bits), two .npy arrays (float16/32/64 "
      "compared in double, a float32 against a float64 widened; or uint8, such as --format u8npy, in levels as 8-bit "
      "PNGs; a uint8 array against a float one fails), or two folders with their subfolders (files paired by "
      "relative path; .png and .npy files are compared, a file on one side only fails; symbolic links to folders are "
      "not followed). Without thresholds the values must be identical; with thresholds every given one must hold. "
      "Equal values, equal infinities and NaN against NaN count as equal (|diff| 0); NaN against anything else, or an "
      "infinity against another value, differs by inf. PSNR = 10 log10(peak^2 / MSE) with peak 255 (65535 for "
      "16-bit) for PNG and uint8 .npy, and 2 for float .npy (the [-1, 1] image range: 10 log10(4 / MSE)). PNGs are "
      "decoded with libpng: a bad CRC, a broken image stream, extra image data or a palette index beyond the palette "
      "fails the pair. File names are printed escaped (a control byte, a backslash or a non-ASCII byte as \\xNN). "
      "Exit status: 0 when every file passes, 1 otherwise, 2 on a usage error.");
  opts.option("max-abs",
              "largest allowed |a - b| (PNG: levels of the file's bit depth, npy: values; uint8 npy: levels)", "X")
      .option("max-pixels",
              "largest PNG compared, in pixels (default 67108864 = 8192x8192); larger files fail before they are "
              "decompressed",
              "N")
      .option("min-psnr", "smallest allowed PSNR in dB", "Y")
      .positional("A B");
  add_quiet_option(opts);
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;
  const std::vector<std::string>& paths = args.positional();
  if (paths.size() != 2)
    fail(ErrorKind::invalid_argument, "expected two paths A B, got ", paths.size(), " (see sg2 compare --help)");
  Thresholds th;
  if (has(args, "max-abs")) {
    th.max_abs = parse_float("max-abs", get(args, "max-abs"));
    if (*th.max_abs < 0) fail(ErrorKind::invalid_argument, "--max-abs must be >= 0");
  }
  if (has(args, "min-psnr")) th.min_psnr = parse_float("min-psnr", get(args, "min-psnr"));
  const int64_t max_pixels = has(args, "max-pixels")
                                 ? parse_int("max-pixels", get(args, "max-pixels"), 1, int64_t(1) << 40)
                                 : kDefaultMaxPngPixels;
  const bool quiet = has(args, "quiet");

  const std::string& a = paths[0];
  const std::string& b = paths[1];
  for (const std::string& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) fail(ErrorKind::io, shown(p), ": no such file or folder");
  }
  // name -> result
  std::vector<std::pair<std::string, Result>> results;
  if (is_dir(a) != is_dir(b))
    fail(ErrorKind::invalid_argument, "cannot compare a folder with a file: ", shown(a), " vs ", shown(b));
  Listing la, lb;
  if (is_dir(a)) {
    list_dir(a, "", 0, la);
    list_dir(b, "", 0, lb);
    const std::set<std::string>& na = la.files;
    const std::set<std::string>& nb = lb.files;
    std::set<std::string> all = na;
    all.insert(nb.begin(), nb.end());
    if (all.empty())
      fail(ErrorKind::invalid_argument, "no .png or .npy files in ", shown(a), " or ", shown(b),
           " (or their subfolders)");
    for (const std::string& name : all) {
      if (!na.count(name))
        results.push_back({name, {false, "missing in " + shown(a)}});
      else if (!nb.count(name))
        results.push_back({name, {false, "missing in " + shown(b)}});
      else
        results.push_back({name, compare_files(a + "/" + name, b + "/" + name, th, max_pixels)});
    }
  } else {
    results.push_back({a + " vs " + b, compare_files(a, b, th, max_pixels)});  // (shown below)
  }
  int64_t failed = 0;
  for (const auto& [name, r] : results) {
    if (!r.pass) ++failed;
    if (!quiet || !r.pass) std::cout << (r.pass ? "PASS " : "FAIL ") << shown(name) << ": " << r.detail << "\n";
  }
  if (!quiet) {
    std::string rule = "identical values";
    if (th.max_abs || th.min_psnr) {
      rule.clear();
      if (th.max_abs) rule += "max|diff| <= " + fmt_num(*th.max_abs);
      if (th.min_psnr) rule += std::string(rule.empty() ? "" : " and ") + "PSNR >= " + fmt_num(*th.min_psnr) + " dB";
    }
    // What the folder walk took in and what it left out, so that nothing is skipped silently.
    std::string walked;
    auto part = [&](int64_t n, const char* one, const char* many) {
      if (n > 0) walked += (walked.empty() ? "; " : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
    };
    part(la.subfolders + lb.subfolders, "subfolder included", "subfolders included");
    part(la.linked_folders + lb.linked_folders, "symbolic link to a folder not followed",
         "symbolic links to folders not followed");
    part(la.ignored + lb.ignored, "other file ignored", "other files ignored");
    std::cout << "sg2 compare: " << (results.size() - failed) << " of " << results.size() << " files match (" << rule
              << ")" << (failed ? ", " + std::to_string(failed) + " do not" : std::string()) << walked << "\n";
  }
  std::cout.flush();
  return failed == 0 ? 0 : 1;
}

}  // namespace

SG2_COMMAND(compare, 60, "golden-image check: two images, .npy files or folders", run_compare);

}  // namespace sg2::cli
