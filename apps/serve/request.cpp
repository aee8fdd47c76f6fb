// sg2 serve: request parameters (request.h), validated with the CLI's parsers and messages.
#include "serve/request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "cli_util.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "ws_input.h"

namespace sg2::cli::serve {

namespace {

/// Text the client sent, cut for a message (json_error escapes the whole message once).
std::string cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

int hex_value(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

std::string percent_decode(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1, lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        fail(ErrorKind::invalid_argument, "malformed query: '%' not followed by two hex digits in '", cut(s, 80), "'");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// The CLI's message for option `name` in the API's words: "--trunc: 'x' is not a number" becomes
/// "trunc: 'x' is not a number"; a message without the name gets it in front. Escaped (the text
/// quotes what the client sent).
std::string api_words(std::string m) {
  if (m.rfind("--", 0) == 0) m.erase(0, 2);
  for (size_t p = m.find(" --"); p != std::string::npos; p = m.find(" --", p + 1)) m.erase(p + 1, 2);
  return m;
}

[[noreturn]] void refuse(const std::string& name, const std::string& cli_message) {
  std::string m = cli_message;
  if (m.rfind("--" + name, 0) != 0) m = name + ": " + m;
  fail(ErrorKind::invalid_argument, cut(api_words(m), 300));
}

template <typename F>
auto checked(const std::string& name, F&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const Error& e) {
    refuse(name, e.what());
  }
}

/// The parameters of a query by name, refusing names outside `allowed` (with `why_not` for names
/// that exist for other requests).
class Params {
 public:
  Params(const Query& q, const std::set<std::string>& allowed, const std::string& what) {
    for (const auto& [k, v] : q) {
      if (allowed.count(k) == 0) {
        static const std::set<std::string> known = {"seed",      "row-seed",     "col-seed",   "styles",     "class",
                                                    "trunc",     "trunc-cutoff", "noise-mode", "noise-seed", "format",
                                                    "png-level", "quality",      "ws-as"};
        if (known.count(k)) fail(ErrorKind::invalid_argument, k, ": does not apply to ", what);
        fail(ErrorKind::invalid_argument, "unknown parameter '", cut(k, 60), "'");
      }
      values_.emplace_back(k, v);
    }
  }
  bool has(const std::string& k) const {
    return std::any_of(values_.begin(), values_.end(), [&](const auto& p) { return p.first == k; });
  }
  std::string get(const std::string& k, const std::string& fallback = "") const {
    for (const auto& p : values_)
      if (p.first == k) return p.second;
    return fallback;
  }

 private:
  Query values_;
};

uint32_t one_seed(const std::string& name, const std::string& text) {
  const std::vector<uint32_t> s = checked(name, [&] { return parse_seeds(text); });
  if (s.size() != 1)
    fail(ErrorKind::invalid_argument, name, ": one seed per request (got ", s.size(), " from '", cut(text, 60), "')");
  return s[0];
}

int class_index(const Params& p, const ModelConfig& cfg) {
  if (!p.has("class")) {
    if (cfg.c_dim > 0)
      fail(ErrorKind::invalid_argument, "this model is conditional (", cfg.c_dim,
           " classes): class=K is required, with K in [0, ", cfg.c_dim - 1, "]");
    return -1;
  }
  const int64_t k = checked("class", [&] {
    return parse_int("class", p.get("class"), std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  });
  if (cfg.c_dim == 0)
    fail(ErrorKind::invalid_argument, "class: this model is unconditional (c_dim 0); leave class out");
  if (k < 0 || k >= cfg.c_dim)
    fail(ErrorKind::invalid_argument, "class ", k, " is out of range: this model has classes 0..", cfg.c_dim - 1);
  return static_cast<int>(k);
}

void parse_noise(const Params& p, ImageRequest& r) {
  r.noise_mode = checked("noise-mode", [&] { return parse_noise_mode(p.get("noise-mode", "const")); });
  if (p.has("noise-seed")) {
    if (r.noise_mode != NoiseMode::random)
      fail(ErrorKind::invalid_argument, "noise-seed is only used with noise-mode random");
    r.noise_seed = checked("noise-seed", [&] { return parse_u64("noise-seed", p.get("noise-seed")); });
  }
}

void parse_output(const Params& p, const ModelConfig& cfg, ImageRequest& r) {
  const std::string f = p.get("format", "png");
  if (f == "png") {
    r.format = Format::png;
  } else if (f == "jpeg" || f == "jpg") {
    r.format = Format::jpeg;
    if (cfg.img_channels != 1 && cfg.img_channels != 3)
      fail(ErrorKind::invalid_argument, "format=jpeg: this model's images have ", cfg.img_channels,
           " channels (with alpha), and JPEG holds gray or RGB: use format=png");
  } else {
    fail(ErrorKind::invalid_argument, "format: unknown format '", cut(f, 40), "' (expected png or jpeg)");
  }
  if (p.has("png-level")) {
    if (r.format != Format::png) fail(ErrorKind::invalid_argument, "png-level is only used with format=png");
    r.png_level = checked("png-level", [&] { return parse_png_level(p.get("png-level")); });
  }
  if (p.has("quality")) {
    if (r.format != Format::jpeg) fail(ErrorKind::invalid_argument, "quality is only used with format=jpeg");
    r.jpeg_quality =
        static_cast<int>(checked("quality", [&] { return parse_int("quality", p.get("quality"), 1, 100); }));
  }
}

void parse_truncation(const Params& p, ImageRequest& r) {
  r.truncation.psi = checked("trunc", [&] { return parse_float("trunc", p.get("trunc", "1")); });
  if (p.has("trunc-cutoff"))
    r.truncation.cutoff = static_cast<int>(
        checked("trunc-cutoff", [&] { return parse_int("trunc-cutoff", p.get("trunc-cutoff"), 0, 1 << 20); }));
}

}  // namespace

Query parse_query(const std::string& query) {
  Query q;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= query.size() && !query.empty()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string part = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (!part.empty()) {
      const size_t eq = part.find('=');
      const std::string name = percent_decode(part.substr(0, eq));
      const std::string value = eq == std::string::npos ? std::string() : percent_decode(part.substr(eq + 1));
      if (name.empty()) fail(ErrorKind::invalid_argument, "malformed query: a parameter without a name");
      if (!seen.insert(name).second)
        fail(ErrorKind::invalid_argument, cut(name, 60), ": given twice (each parameter at most once)");
      q.emplace_back(name, value);
    }
    if (amp == query.size()) break;
  }
  return q;
}

ImageRequest parse_get(const Query& query, const ModelConfig& cfg, bool ws_only) {
  ImageRequest r;
  r.ws_only = ws_only;
  const bool mix = !ws_only && std::any_of(query.begin(), query.end(), [](const auto& kv) {
    return kv.first == "row-seed" || kv.first == "col-seed";
  });
  std::set<std::string> allowed;
  if (ws_only)
    allowed = {"seed", "class", "trunc", "trunc-cutoff"};
  else if (mix)
    allowed = {"row-seed",   "col-seed",   "styles", "class",     "trunc",
               "noise-mode", "noise-seed", "format", "png-level", "quality"};
  else
    allowed = {"seed", "class", "trunc", "trunc-cutoff", "noise-mode", "noise-seed", "format", "png-level", "quality"};
  const Params p(query, allowed,
                 ws_only ? "/v1/ws (it returns the mapped ws)"
                 : mix   ? "style mixing (row-seed, col-seed; sg2 mix has none)"
                         : "a seed's image");
  if (mix) {
    if (!p.has("row-seed") || !p.has("col-seed"))
      fail(ErrorKind::invalid_argument, "style mixing needs both row-seed and col-seed");
    r.latent = Latent::mix;
    r.seed = one_seed("row-seed", p.get("row-seed"));
    r.col_seed = one_seed("col-seed", p.get("col-seed"));
    r.styles = checked("styles", [&] { return parse_index_list("styles", p.get("styles", "0-6")); });
    if (!p.has("styles"))  // the official default 0-6, limited to the rows a small model has
      r.styles.erase(std::remove_if(r.styles.begin(), r.styles.end(), [&](int k) { return k >= cfg.num_ws; }),
                     r.styles.end());
    for (int k : r.styles)
      if (k >= cfg.num_ws)
        fail(ErrorKind::invalid_argument, "styles: ws row ", k, " does not exist: this model has rows 0..",
             cfg.num_ws - 1);
    r.truncation.psi = checked("trunc", [&] { return parse_float("trunc", p.get("trunc", "1")); });
  } else {
    if (!p.has("seed"))
      fail(ErrorKind::invalid_argument,
           ws_only ? "seed=S is required" : "seed=S (or row-seed and col-seed for style mixing) is required");
    r.latent = Latent::seed;
    r.seed = one_seed("seed", p.get("seed"));
    parse_truncation(p, r);
  }
  r.class_idx = class_index(p, cfg);
  if (!ws_only) {
    parse_noise(p, r);
    parse_output(p, cfg, r);
  }
  return r;
}

ImageRequest parse_post(const Query& query, const std::string& body, const ModelConfig& cfg) {
  const Params p(query, {"noise-mode", "noise-seed", "format", "png-level", "quality", "ws-as"},
                 "ws input (ws go straight into synthesis)");
  ImageRequest r;
  r.latent = Latent::ws;
  parse_noise(p, r);
  parse_output(p, cfg, r);
  WsLayout layout = WsLayout::unspecified;
  if (p.has("ws-as")) layout = checked("ws-as", [&] { return parse_ws_layout(p.get("ws-as")); });
  if (body.empty())
    fail(ErrorKind::invalid_argument, "body: empty; POST a .npy array of one W [1, ", cfg.w_dim, "] or W+ [1, ",
         cfg.num_ws, ", ", cfg.w_dim, "] latent");
  Tensor values;
  try {
    const NpyArray a = parse_npy(reinterpret_cast<const uint8_t*>(body.data()), body.size(), "body");
    values = npy_float_tensor(a, "body");
  } catch (const Error& e) {
    fail(ErrorKind::invalid_argument, cut(e.what(), 300));
  }
  if (values.ndim() >= 1 && values.dim(0) == 0)
    fail(ErrorKind::invalid_argument, "body: has no rows (shape ", values.shape_str(), ")");
  for (float v : values.vec())
    if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "body: contains NaN or infinite values");
  try {
    r.ws = fit_ws(values, "body", cfg, layout);
  } catch (const Error& e) {
    std::string m = e.what();
    if (m.rfind("--ws ", 0) == 0) m.erase(0, 5);
    fail(ErrorKind::invalid_argument, cut(api_words(m), 300));
  }
  if (r.ws.dim(0) != 1)
    fail(ErrorKind::invalid_argument, "body: holds ", r.ws.dim(0), " latents; POST one per request ([1, ", cfg.w_dim,
         "] or [1, ", cfg.num_ws, ", ", cfg.w_dim, "])");
  return r;
}

}  // namespace sg2::cli::serve
