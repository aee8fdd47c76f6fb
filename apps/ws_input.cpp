// sg2 CLI: --ws input (ws_input.h).
#include "ws_input.h"

#include "sg2/error.h"
#include "sg2/latents.h"
#include "sg2/text.h"

namespace sg2::cli {

WsLayout parse_ws_layout(const std::string& text) {
  if (text == "w") return WsLayout::w;
  if (text == "w+" || text == "wplus") return WsLayout::wplus;
  fail(ErrorKind::invalid_argument, "--ws-as: unknown layout '", text, "' (expected w or w+)");
}

WsArray read_ws_array(const std::string& path) {
  WsArray out;
  try {
    Latents l = read_latents(path);
    out.values = std::move(l.values);
    out.note = std::move(l.note);
  } catch (const Error& e) {  // an absurd shape is the file's fault too
    throw Error(e.kind() == ErrorKind::invalid_argument ? ErrorKind::bad_file : e.kind(), "--ws " + e.message(),
                e.hint());
  }
  const Tensor& t = out.values;
  if (t.ndim() >= 1 && t.dim(0) == 0)
    fail(ErrorKind::bad_file, "--ws ", printable(path, 4096), ": has no rows (shape ", t.shape_str(), ")");
  return out;
}

Tensor fit_ws(const Tensor& t, const std::string& path, const ModelConfig& cfg, WsLayout layout) {
  const std::string dims = std::to_string(cfg.num_ws) + ", " + std::to_string(cfg.w_dim);
  if (t.ndim() == 3 && t.dim(1) == cfg.num_ws && t.dim(2) == cfg.w_dim) {
    if (layout != WsLayout::unspecified)
      fail(ErrorKind::invalid_argument, "--ws-as is for 2-D arrays; ", printable(path, 4096), " is ", t.shape_str(),
           ", already W+ [N, ", dims, "]");
    return t;
  }
  if (t.ndim() == 2 && t.dim(1) == cfg.w_dim) {
    const int64_t rows = t.dim(0);
    if (layout == WsLayout::wplus) {
      if (rows != cfg.num_ws)
        fail(ErrorKind::invalid_argument, "--ws-as w+: ", printable(path, 4096), " is ", t.shape_str(),
             ", but one W+ latent of this model is [", dims, "]");
      return t.reshaped({1, cfg.num_ws, cfg.w_dim});
    }
    if (layout == WsLayout::unspecified && rows == cfg.num_ws)
      fail(ErrorKind::invalid_argument, "--ws ", printable(path, 4096), ": shape ", t.shape_str(),
           " is ambiguous for this model (num_ws ", cfg.num_ws, "): one W+ latent saved without its batch axis, or ",
           rows, " W latents. Add --ws-as w+ (one image) or --ws-as w (", rows, " images), or save it as [1, ", dims,
           "]");
    Tensor ws({rows, cfg.num_ws, cfg.w_dim});
    for (int64_t n = 0; n < rows; ++n)
      for (int l = 0; l < cfg.num_ws; ++l)
        std::copy(t.data() + n * cfg.w_dim, t.data() + (n + 1) * cfg.w_dim,
                  ws.data() + (n * cfg.num_ws + l) * cfg.w_dim);
    return ws;
  }
  fail(ErrorKind::invalid_argument, "--ws ", printable(path, 4096), ": shape ", t.shape_str(),
       " does not fit this model: expected [N, ", cfg.w_dim, "] (W) or [N, ", dims, "] (W+)");
}

}  // namespace sg2::cli
