// sg2 CLI: --ws input (ws_input.h).
#include "ws_input.h"

#include <cmath>

#include "sg2/error.h"
#include "sg2/npy.h"
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
    if (is_npz_file(path)) {
      auto arrays = read_npz(path);
      const std::pair<std::string, NpyArray>* pick = nullptr;
      for (const auto& a : arrays)
        if (a.first == "w") pick = &a;
      if (pick == nullptr && arrays.size() == 1) pick = &arrays[0];
      if (pick == nullptr) {
        std::string names;
        for (size_t i = 0; i < arrays.size() && i < 8; ++i) names += (i ? ", '" : "'") + arrays[i].first + "'";
        if (arrays.size() > 8) names += " and " + std::to_string(arrays.size() - 8) + " more";
        fail(ErrorKind::bad_file, "--ws ", printable(path, 4096), ": an .npz with arrays ", names,
             ", none called 'w' (the name NVIDIA's projector uses); save the latents as .npy or under the name w");
      }
      out.values = npy_float_tensor(pick->second, printable(path, 4096) + ": array '" + pick->first + "'");
      out.note = "array '" + pick->first + "' of the .npz";
    } else {
      out.values = read_npy_tensor(path);
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::invalid_argument) throw;
    throw Error(ErrorKind::bad_file, "--ws " + printable(path, 4096) + ": " + e.message(),
                e.hint());  // e.g. an absurd shape
  }
  const Tensor& t = out.values;
  if (t.ndim() >= 1 && t.dim(0) == 0)
    fail(ErrorKind::bad_file, "--ws ", printable(path, 4096), ": has no rows (shape ", t.shape_str(), ")");
  for (float v : t.vec())
    if (!std::isfinite(v))
      fail(ErrorKind::bad_file, "--ws ", printable(path, 4096), ": contains NaN or infinite values");
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
