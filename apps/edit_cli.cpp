// sg2 CLI: --edit, --edit-layers, --edit-component (edit_cli.h).
#include "edit_cli.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli_util.h"
#include "sg2/error.h"

namespace sg2::cli {

namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// A finite float32 strength, or a usage error naming the --edit argument.
float parse_strength(const std::string& arg, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  const bool whole =
      !text.empty() && end == text.c_str() + text.size() && text.find_first_of(" \t") == std::string::npos;
  if (!whole || !std::isfinite(v) || !std::isfinite(static_cast<float>(v)))
    fail(ErrorKind::invalid_argument, "--edit ", shown(arg), ": the strength '", shown(text), "' is not a finite ",
         whole && std::isfinite(v) ? "float32 number" : "number",
         " (FILE:STRENGTH, e.g. smile.npy:1.5 or smile.npy:-2)");
  return static_cast<float>(v);
}

}  // namespace

void add_edit_options(Options& opts) {
  opts.group("edit")
      .repeatable("edit",
                  "move every w by STRENGTH (default 1) x the direction in FILE after truncation (w + STRENGTH * d "
                  "in float32); .npy ([w_dim], [1, w_dim], [num_ws, w_dim]; InterFaceGAN boundaries), GANSpace .npz "
                  "(with --edit-component), StyleCLIP / e4e .pt tensors; repeatable, applied in order",
                  "FILE[:STRENGTH]")
      .option("edit-layers", "the ws rows A..B (inclusive) that every --edit moves (default: all rows)", "A-B")
      .option("edit-component", "which direction of an --edit file holding several (GANSpace lat_comp: 0 .. K-1)", "K")
      .group("");
}

std::pair<std::string, std::optional<std::string>> split_edit_arg(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return {text, std::nullopt};
  const std::string path = text.substr(0, colon);
  if (is_file(text) && !is_file(path)) return {text, std::nullopt};  // a file name with ':'
  return {path, text.substr(colon + 1)};
}

EditArgs read_edit_args(const Args& args) {
  EditArgs out;
  const std::vector<std::string> given = args.get_all("edit");
  if (given.empty()) {
    for (const char* o : {"edit-layers", "edit-component"})
      if (args.has(o)) fail(ErrorKind::invalid_argument, "--", o, " needs --edit FILE");
    return out;
  }
  if (given.size() > 64) fail(ErrorKind::invalid_argument, "--edit is given ", given.size(), " times (at most 64)");
  if (args.has("edit-layers")) {
    const std::string t = trim_blanks(args.get("edit-layers"));
    const size_t dash = t.find('-', 1);
    const std::string a = dash == std::string::npos ? t : t.substr(0, dash);
    const std::string b = dash == std::string::npos ? t : t.substr(dash + 1);
    const int first = static_cast<int>(parse_int("edit-layers", trim_blanks(a), 0, 1 << 20));
    const int last = static_cast<int>(parse_int("edit-layers", trim_blanks(b), 0, 1 << 20));
    if (first > last)
      fail(ErrorKind::invalid_argument, "--edit-layers ", shown(t), ": the first row ", first, " is after the last ",
           last, " (A-B with A <= B, e.g. 0-5)");
    out.rows = std::make_pair(first, last);
  }
  int component = -1;
  if (args.has("edit-component"))
    component = static_cast<int>(parse_int("edit-component", args.get("edit-component"), 0, (1 << 30) - 1));
  bool any_several = false;
  for (const std::string& g : given) {
    auto [path, strength_text] = split_edit_arg(g);
    if (path.empty()) fail(ErrorKind::invalid_argument, "--edit ", shown(g), ": no file name (FILE[:STRENGTH])");
    WsEdit e;
    e.strength = strength_text ? parse_strength(g, *strength_text) : 1.0f;
    e.what = "--edit " + shown(path);
    EditDirection d;
    try {
      d = read_edit_direction(path, component);
    } catch (const Error& err) {  // name the option, as --ws does: "--edit FILE: cannot open ..."
      if (err.message().rfind("--edit", 0) == 0) throw;
      throw Error(err.kind(), "--edit " + err.message(), err.hint());
    }
    any_several |= d.components > 1;
    e.direction = std::move(d.values);
    out.notes.push_back(d.note.empty() ? std::string() : e.what + ": " + d.note + ", " + e.direction.shape_str());
    out.edits.push_back(std::move(e));
    out.strength_given.push_back(strength_text.has_value());
  }
  if (component >= 0 && !any_several)
    fail(ErrorKind::invalid_argument, "--edit-component ", component,
         ": no --edit file holds several directions (it selects one of a GANSpace lat_comp or a [K, rows, w_dim] "
         "stack)");
  return out;
}

void fit_edits(EditArgs& edits, const ModelConfig& cfg) {
  if (edits.rows && edits.rows->second >= cfg.num_ws)
    fail(ErrorKind::invalid_argument, "--edit-layers ", edits.rows->first, "-", edits.rows->second,
         ": this model has ws rows 0-", cfg.num_ws - 1);
  for (WsEdit& e : edits.edits) {
    e.first_row = edits.rows ? edits.rows->first : 0;
    e.last_row = edits.rows ? edits.rows->second : -1;
  }
  check_edits(edits.edits, cfg.num_ws, cfg.w_dim);
}

void edit_notes(const std::string& command, const EditArgs& edits, bool quiet) {
  if (quiet) return;
  for (const std::string& n : edits.notes)
    if (!n.empty()) say(command, "note", n);
}

Tensor synthesize_edited(Generator& gen, const Tensor& ws, const NoiseSpec& noise, const EditArgs& edits) {
  try {
    return gen.synthesize(ws, noise);
  } catch (const Error& e) {
    if (edits.empty() || e.kind() != ErrorKind::invalid_argument ||
        e.message().find("NaN or infinite pixels") == std::string::npos)
      throw;
    const std::string hint = "--edit moved these ws: a smaller strength keeps them in the mapping network's range";
    throw e.with_hint(e.hint().empty() ? hint : e.hint() + "; " + hint);
  }
}

}  // namespace sg2::cli
