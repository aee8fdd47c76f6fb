// sg2 CLI: reading `--ws` latents (generate.py --projected-w) and fitting them to a model.
//
// Files: what sg2::read_latents reads (sg2/latents.h): a .npy array; an .npz (numpy.savez) such as
// NVIDIA projector's projected_w.npz (its array 'w', or its only array); a torch.save file of e4e /
// pSp / StyleCLIP latents (a tensor), rosinality projector.py's result (its images' 'latent'
// stacked), or a dict of tensors (the one called w / ws / latent / latents, or the only one). The
// entry used is reported. Shapes, for a model with num_ws and w_dim:
//   [N, num_ws, w_dim]  N W+ latents (what generate.py --projected-w takes);
//   [N, w_dim]          N W latents, each broadcast to every ws row;
//   [num_ws, w_dim]     ambiguous: one W+ latent saved without its batch axis (rosinality's
//                       projector with --w_plus, several encoders) or num_ws W latents. Never
//                       guessed: refused unless --ws-as w+ (one W+) or --ws-as w (num_ws W rows)
//                       says which.
#pragma once

#include <string>

#include "sg2/model.h"
#include "sg2/tensor.h"

namespace sg2::cli {

/// --ws-as: how to read a 2-D array.
enum class WsLayout { unspecified, w, wplus };
/// "w" or "w+" (also "wplus"); Error(invalid_argument) otherwise.
WsLayout parse_ws_layout(const std::string& text);

/// The array of a --ws file, and which entry of the file it was.
struct WsArray {
  Tensor values;     ///< float32, as stored (a projector result: its images stacked)
  std::string note;  ///< "array 'w' of the .npz", "the tensor of the torch.save file", ... (empty for .npy)
};

/// Reads --ws FILE before the model is loaded: errors start "--ws FILE: " (Error(bad_file) for
/// contents that are not latents, saying what --ws accepts, a non-float array, NaN or infinite
/// values, no rows; an .npz with several arrays, none called 'w').
WsArray read_ws_array(const std::string& path);

/// The array as ws [N, num_ws, w_dim] for `cfg`, by the rules above. Error(invalid_argument)
/// naming the file and both shapes when it does not fit, or when it is ambiguous.
Tensor fit_ws(const Tensor& values, const std::string& path, const ModelConfig& cfg, WsLayout layout);

}  // namespace sg2::cli
