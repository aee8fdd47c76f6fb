// sg2 compare: the golden-image regression check — two PNGs, two .npy files, or two folders
// (walked with their subfolders, or with --no-recursive their own files only).
//
// Tolerances per kind of file: --max-levels (levels of the file's bit depth), --max-differing (the
// share of a file's values that differ at all) and --min-psnr hold PNGs and uint8 arrays;
// --max-abs and --min-psnr hold float arrays. A file passes when every tolerance given for its
// kind holds, and must be identical when none is. --max-abs on a PNG or uint8 array without
// --max-levels is a usage error (it meant levels there before: refused rather than reread). PNGs are
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
#include <string>
#include <utility>
#include <vector>

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

/// The two scales a file's values are on: levels (PNGs at their bit depth, uint8 arrays) or
/// values as stored (float16/32/64 arrays).
enum class Scale { levels, values };

/// The tolerances given on the command line. Each applies to one scale or both:
///   levels: --max-levels, --max-differing, --min-psnr;   values: --max-abs, --min-psnr.
/// A file passes when every one that applies to its scale holds; when none applies, its values
/// must be identical.
struct Thresholds {
  std::optional<int64_t> max_levels;
  std::optional<double> max_abs, max_differing_pct, min_psnr;
  std::string max_differing_text;  // as given ("0.2%"), for the lines
  bool any() const { return max_levels || max_abs || max_differing_pct || min_psnr; }
  bool any_for(Scale s) const {
    return min_psnr || (s == Scale::levels ? (max_levels || max_differing_pct) : bool(max_abs));
  }
};

/// A pair that cannot be judged with the options given: --max-abs on a level file without
/// --max-levels (a usage error, exit 2; before, --max-abs meant levels for those files).
struct Refusal {
  std::string file;  // as printed
  std::string what;  // "a PNG", "a uint8 array"
};

struct Result {
  bool pass = false;
  std::string detail;          // the statistics, or why the pair could not be compared
  std::optional<Scale> scale;  // set when the values were compared
  Result() = default;
  Result(bool p, std::string d) : pass(p), detail(std::move(d)) {}
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

/// True when `differing` of `n` values is at most pct percent of them (exact for counts: the
/// relative slack only absorbs the rounding of pct * n, far less than one value).
bool share_within(int64_t differing, int64_t n, double pct) {
  return 100.0 * double(differing) <= pct * double(n) * (1.0 + 1e-12);
}

/// The verdict and its line; peak is the signal range for PSNR (255 or 65535 for PNG levels and
/// 255 for uint8 arrays, 2 for [-1, 1] float images). A FAIL line judged by thresholds ends with
/// the ones that failed ("; fails --max-levels 1, --max-differing 0.2%").
Result judge(const DiffStats& s, double peak, const std::string& unit, Scale scale, const Thresholds& th) {
  const double mean = s.n > 0 ? s.sum / double(s.n) : 0.0;
  const double mse = s.n > 0 ? s.sq / double(s.n) : 0.0;
  const double psnr = mse > 0 ? 10.0 * std::log10(peak * peak / mse) : std::numeric_limits<double>::infinity();
  Result r;
  r.scale = scale;
  std::string failed;
  auto fails = [&](const std::string& what) { failed += (failed.empty() ? "" : ", ") + what; };
  if (!th.any_for(scale)) {
    r.pass = s.differing == 0;
  } else {
    if (scale == Scale::levels) {
      if (th.max_levels && !(s.max_abs <= double(*th.max_levels)))
        fails("--max-levels " + std::to_string(*th.max_levels));
      if (th.max_differing_pct && !share_within(s.differing, s.n, *th.max_differing_pct))
        fails("--max-differing " + th.max_differing_text);
    } else if (th.max_abs && !(s.max_abs <= *th.max_abs)) {
      fails("--max-abs " + fmt_num(*th.max_abs));
    }
    if (th.min_psnr && !(psnr >= *th.min_psnr)) fails("--min-psnr " + fmt_num(*th.min_psnr));
    r.pass = failed.empty();
  }
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.4g", s.n > 0 ? 100.0 * double(s.differing) / double(s.n) : 0.0);
  r.detail = "max|diff| " + fmt_num(s.max_abs) + unit + ", mean|diff| " + fmt_num(mean) + ", PSNR " + fmt_num(psnr) +
             " dB, " + std::to_string(s.differing) + " of " + std::to_string(s.n) + " values differ (" + pct + " %)";
  if (!failed.empty()) {
    r.detail += "; fails " + failed;
  } else if (!r.pass && th.any()) {  // thresholds were given, none for this scale
    r.detail += scale == Scale::levels ? "; not identical (no --max-levels, --max-differing or --min-psnr given)"
                                       : "; not identical (no --max-abs or --min-psnr given)";
  }
  return r;
}

/// Two PNGs, decoded by libpng (CRCs and palette indices checked) row by row at their own
/// precision: 16-bit files are compared at 16 bits. Memory: a row of each.
Result compare_pngs(const std::string& a, const std::string& b, const Thresholds& th, int64_t max_pixels) {
  // (--max-abs without --max-levels is refused before any PNG is opened: run_compare)
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
  return judge(s, wide ? 65535.0 : 255.0, wide ? " levels (16-bit)" : " levels", Scale::levels, th);
}

bool is_uint8(const NpyArray& x) { return x.dtype.size() == 3 && x.dtype[1] == 'u' && x.dtype[2] == '1'; }

/// Two .npy arrays: float16/32/64 in double (a float32 against a float64 is widened, never the
/// float64 narrowed), uint8 exactly in levels (as 8-bit PNGs: PSNR peak 255). A uint8 array
/// against a float one is refused: levels 0-255 and [-1, 1] values are not one scale. A uint8
/// pair under --max-abs without --max-levels throws Refusal (`name`: the pair as printed).
Result compare_npys(const std::string& a, const std::string& b, const std::string& name, const Thresholds& th) {
  const NpyArray x = read_npy(a), y = read_npy(b);
  // Every dtype is checked before the shapes (two empty arrays of an unsupported dtype fail too).
  npy_values_f64(x, 0, 0, nullptr, a);
  npy_values_f64(y, 0, 0, nullptr, b);
  const bool u8 = is_uint8(x);
  if (th.max_abs && !th.max_levels && (u8 || is_uint8(y))) throw Refusal{name, "a uint8 array"};
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
  return u8 ? judge(s, 255.0, " levels", Scale::levels, th) : judge(s, 2.0, "", Scale::values, th);
}

/// One pair; `name` is what its line calls it (escaped when printed). Errors of the files become
/// a FAIL with the message; Refusal passes through.
Result compare_files(const std::string& a, const std::string& b, const std::string& name, const Thresholds& th,
                     int64_t max_pixels) {
  const Kind ka = kind_of(a), kb = kind_of(b);
  if (ka != kb || ka == Kind::other)
    return {false, "cannot compare " + shown(a) + " with " + shown(b) + ": both must be .png or both .npy"};
  try {
    return ka == Kind::png ? compare_pngs(a, b, th, max_pixels) : compare_npys(a, b, name, th);
  } catch (const Error& e) {
    return {false, with_paths_shown(e.what(), {a, b})};
  }
}

/// The .png and .npy files of a folder and (when `recursive`) of its subfolders, by path relative
/// to the folder. Subfolders are walked (32 levels at most) or, without `recursive`, counted as
/// not walked; symbolic links to folders are never followed (counted); other files are counted as
/// ignored.
struct Listing {
  std::set<std::string> files;
  int64_t subfolders = 0, unwalked = 0, linked_folders = 0, ignored = 0;
};

void list_dir(const std::string& root, const std::string& rel, int depth, bool recursive, Listing& out) {
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
      } else if (!recursive) {
        ++out.unwalked;
      } else {
        if (depth >= 32) fail(ErrorKind::invalid_argument, "folders nested more than 32 deep at ", shown(full));
        ++out.subfolders;
        list_dir(root, r, depth + 1, recursive, out);
      }
    } else if (S_ISREG(st.st_mode) && kind_of(name) != Kind::other) {
      out.files.insert(r);
    } else {
      ++out.ignored;
    }
  }
}

/// A finite number: the whole text (strtod), else Error(invalid_argument) "--<what> ...".
double parse_real(const std::string& what, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isspace(static_cast<unsigned char>(text[0])))
    fail(ErrorKind::invalid_argument, "--", what, ": '", shown(text), "' is not a number (see sg2 compare --help)");
  if (!std::isfinite(v))
    fail(ErrorKind::invalid_argument, "--", what, ": ", shown(text),
         " is not a finite number (see sg2 compare --help)");
  return v;
}

/// "0.2%": a percentage in [0, 100], with its % sign (a bare 0.2 could be read as a fraction).
double parse_percent(const std::string& text) {
  if (text.empty() || text.back() != '%')
    fail(ErrorKind::invalid_argument, "--max-differing: '", shown(text), "' needs a % sign: --max-differing ",
         shown(text), "% allows ", shown(text), " of every 100 values to differ (see sg2 compare --help)");
  const double p = parse_real("max-differing", text.substr(0, text.size() - 1));
  if (p < 0 || p > 100)
    fail(ErrorKind::invalid_argument, "--max-differing: ", shown(text),
         " is not a share of the values: give 0% to 100% (see sg2 compare --help)");
  return p;
}

/// The rule the summary states, per scale: "identical values" without thresholds, else what each
/// scale present (both when none was read) is held to.
std::string rule_text(const Thresholds& th, bool levels_seen, bool values_seen) {
  if (!th.any()) return "identical values";
  if (!levels_seen && !values_seen) levels_seen = values_seen = true;
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : " and ") + p;
    return out.empty() ? std::string("identical") : out;
  };
  std::string rule;
  if (levels_seen) {
    std::vector<std::string> parts;
    if (th.max_levels)
      parts.push_back("max|diff| <= " + std::to_string(*th.max_levels) + (*th.max_levels == 1 ? " level" : " levels"));
    if (th.max_differing_pct) parts.push_back("at most " + fmt_num(*th.max_differing_pct) + " % of the values differ");
    if (th.min_psnr) parts.push_back("PSNR >= " + fmt_num(*th.min_psnr) + " dB");
    rule = "PNGs and uint8 arrays: " + join(parts);
  }
  if (values_seen) {
    std::vector<std::string> parts;
    if (th.max_abs) parts.push_back("max|diff| <= " + fmt_num(*th.max_abs));
    if (th.min_psnr) parts.push_back("PSNR >= " + fmt_num(*th.min_psnr) + " dB");
    rule += (rule.empty() ? "" : "; ") + std::string("float arrays: ") + join(parts);
  }
  return rule;
}

[[noreturn]] void refuse(const Refusal& r) {
  fail_hint(ErrorKind::invalid_argument,
            "before, --max-abs meant levels for PNGs and uint8 arrays: --max-abs 1 on them is now --max-levels 1; "
            "sg2's own golden tests use --max-levels 1 --max-differing 0.2% (PNGs) with --max-abs 1e-4 (float arrays)",
            "--max-abs applies to float .npy arrays only, and ", r.file, " is ", r.what,
            ": give PNGs and uint8 arrays their tolerance in levels with --max-levels N (--max-levels 0: identical) "
            "(see sg2 compare --help)");
}

int run_compare(int argc, char** argv) {
  Options opts = make_options(
      "compare",
      "Compares two images (.png, in levels of their bit depth: 8 or 16 bits), two .npy arrays (float16/32/64 "
      "compared in double, a float32 against a float64 widened; or uint8, such as --format u8npy, in levels as 8-bit "
      "PNGs; a uint8 array against a float one fails), or two folders with their subfolders (files paired by "
      "relative path; .png and .npy files are compared, a file on one side only fails; symbolic links to folders are "
      "not followed; --no-recursive: the folders' own files only). Tolerances, usable together on a folder of PNGs "
      "and .npy files: --max-levels, --max-differing and --min-psnr hold PNGs and uint8 arrays, --max-abs and "
      "--min-psnr float arrays; a file passes when every one given for its kind holds, and must be identical when "
      "none is given for its kind. Equal values, equal infinities and NaN against NaN count as equal (|diff| 0); "
      "NaN against anything else, or an infinity against another value, differs by inf. PSNR = 10 log10(peak^2 / "
      "MSE) with peak 255 (65535 for 16-bit) for PNG and uint8 .npy, and 2 for float .npy (the [-1, 1] image range: "
      "10 log10(4 / MSE)). PNGs are decoded with libpng: a bad CRC, a broken image stream, extra image data or a "
      "palette index beyond the palette fails the pair. One line per file (PASS/FAIL and the statistics) and a "
      "summary; file names are printed escaped (a control byte, a backslash or a non-ASCII byte as \\xNN). Exit "
      "status: 0 when every file passes, 1 otherwise, 2 on a usage error.");
  opts.option("max-levels",
              "PNGs and uint8 .npy arrays: largest allowed |a - b| in levels of the file's bit depth (8-bit: of 255; "
              "16-bit PNGs: of 65535, so one 8-bit level is 257), an integer",
              "N")
      .option("max-differing",
              "PNGs and uint8 .npy arrays: largest share of a file's values that may differ at all, in percent with "
              "its % sign (0.2%); per file",
              "P%")
      .option("max-abs",
              "float .npy arrays (float16/32/64) only: largest allowed |a - b|, in the values' own units (the [-1, 1] "
              "scale for sg2's --format npy); with PNGs or uint8 arrays it needs --max-levels for them",
              "X")
      .option("min-psnr", "every file: smallest allowed PSNR in dB (peaks above)", "Y")
      .option("max-pixels",
              "largest PNG compared, in pixels (default 67108864 = 8192x8192); larger files fail before they are "
              "decompressed",
              "N")
      .flag("no-recursive",
            "folders: compare only their own files; their subfolders are counted in the summary, not walked")
      .flag("q,quiet",
            "print only the FAIL lines: no PASS lines and no summary, nothing when every file passes (errors still go "
            "to stderr; the exit status is the same)")
      .positional("A B");
  auto args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return 0;
  const std::vector<std::string>& paths = args.positional();
  if (paths.size() != 2)
    fail(ErrorKind::invalid_argument, "expected two paths A B, got ", paths.size(), " (see sg2 compare --help)");
  Thresholds th;
  if (has(args, "max-levels")) th.max_levels = parse_int("max-levels", get(args, "max-levels"), 0, 65535);
  if (has(args, "max-differing")) {
    th.max_differing_text = get(args, "max-differing");
    th.max_differing_pct = parse_percent(th.max_differing_text);
  }
  if (has(args, "max-abs")) {
    th.max_abs = parse_real("max-abs", get(args, "max-abs"));
    if (*th.max_abs < 0) fail(ErrorKind::invalid_argument, "--max-abs must be >= 0 (see sg2 compare --help)");
  }
  if (has(args, "min-psnr")) th.min_psnr = parse_real("min-psnr", get(args, "min-psnr"));
  const int64_t max_pixels = has(args, "max-pixels")
                                 ? parse_int("max-pixels", get(args, "max-pixels"), 1, int64_t(1) << 40)
                                 : kDefaultMaxPngPixels;
  const bool quiet = has(args, "quiet");
  const bool recursive = !has(args, "no-recursive");

  const std::string& a = paths[0];
  const std::string& b = paths[1];
  for (const std::string& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) fail(ErrorKind::io, shown(p), ": no such file or folder");
  }
  if (is_dir(a) != is_dir(b))
    fail(ErrorKind::invalid_argument, "cannot compare a folder with a file: ", shown(a), " vs ", shown(b));
  // The pairs: (name as printed unescaped, path in A, path in B); a name on one side only fails.
  struct Pair {
    std::string name, pa, pb, missing_in;
  };
  std::vector<Pair> pairs;
  Listing la, lb;
  if (is_dir(a)) {
    list_dir(a, "", 0, recursive, la);
    list_dir(b, "", 0, recursive, lb);
    std::set<std::string> all = la.files;
    all.insert(lb.files.begin(), lb.files.end());
    if (all.empty())
      fail(ErrorKind::invalid_argument, "no .png or .npy files in ", shown(a), " or ", shown(b),
           recursive ? " (or their subfolders)" : " (--no-recursive: their subfolders were not walked)");
    for (const std::string& name : all)
      pairs.push_back({name, a + "/" + name, b + "/" + name,
                       !la.files.count(name)   ? a
                       : !lb.files.count(name) ? b
                                               : std::string()});
  } else {
    pairs.push_back({a + " vs " + b, a, b, ""});
  }
  // --max-abs without --max-levels on a PNG: refused before any file is read (uint8 arrays are
  // known by their header: compare_npys).
  if (th.max_abs && !th.max_levels) {
    for (const Pair& p : pairs)
      for (const std::string& f : {p.pa, p.pb})
        if (kind_of(f) == Kind::png) refuse({shown(f), "a PNG"});
  }
  std::vector<std::pair<std::string, Result>> results;
  bool levels_seen = false, values_seen = false;
  for (const Pair& p : pairs) {
    if (!p.missing_in.empty()) {
      results.push_back({p.name, {false, "missing in " + shown(p.missing_in)}});
      continue;
    }
    try {
      results.push_back({p.name, compare_files(p.pa, p.pb, shown(p.pa), th, max_pixels)});
    } catch (const Refusal& r) {
      refuse(r);
    }
    const Result& r = results.back().second;
    if (kind_of(p.pa) == Kind::png || r.scale == Scale::levels) levels_seen = true;
    if (r.scale == Scale::values) values_seen = true;
  }
  int64_t failed = 0;
  for (const auto& [name, r] : results) {
    if (!r.pass) ++failed;
    if (!quiet || !r.pass) std::cout << (r.pass ? "PASS " : "FAIL ") << shown(name) << ": " << r.detail << "\n";
  }
  if (!quiet) {
    // What the folder walk took in and what it left out, so that nothing is skipped silently.
    std::string walked;
    auto part = [&](int64_t n, const char* one, const char* many) {
      if (n > 0) walked += (walked.empty() ? "; " : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
    };
    part(la.subfolders + lb.subfolders, "subfolder included", "subfolders included");
    part(la.unwalked + lb.unwalked, "subfolder not walked (--no-recursive)", "subfolders not walked (--no-recursive)");
    part(la.linked_folders + lb.linked_folders, "symbolic link to a folder not followed",
         "symbolic links to folders not followed");
    part(la.ignored + lb.ignored, "other file ignored", "other files ignored");
    std::cout << "sg2 compare: " << (results.size() - failed) << " of " << results.size() << " files match ("
              << rule_text(th, levels_seen, values_seen) << ")"
              << (failed ? ", " + std::to_string(failed) + " do not" : std::string()) << walked << "\n";
  }
  std::cout.flush();
  return failed == 0 ? 0 : 1;
}

}  // namespace

SG2_COMMAND(compare, 60, "golden-image check: two images, .npy files or folders", run_compare);

}  // namespace sg2::cli
