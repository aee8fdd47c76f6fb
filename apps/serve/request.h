// sg2 serve: what one API request asks for, validated with the CLI's rules before it reaches a
// generator (apps/serve.cpp routes; batcher.h runs it).
//
//   GET  /v1/generate?seed=S[&class=K&trunc=PSI&trunc-cutoff=N]            as `sg2 generate --seeds S`
//   GET  /v1/generate?row-seed=R&col-seed=C[&styles=0-6&trunc=PSI&class=K] as `sg2 mix`'s R-C.png
//   POST /v1/generate  (body: a .npy W [1, w_dim] or W+ [1, num_ws, w_dim]) as `sg2 generate --ws`'s ws0000.png
//   GET  /v1/ws?seed=S[&class=K&trunc=PSI&trunc-cutoff=N]                  as `generate --save-ws`'s seed%04d_ws.npy
// and on the image requests noise-mode=const|random|none, noise-seed=N (random only), format=png|jpeg,
// png-level=L (png), quality=Q (jpeg). Every parameter may be given once; unknown ones are refused.
// Error messages quote what the client sent as it sent it (cut, not escaped): escape them before they
// reach a terminal or a response (serve::json_error does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sg2/generator.h"
#include "sg2/model.h"
#include "sg2/tensor.h"

namespace sg2::cli::serve {

/// How the request's latent is made.
enum class Latent {
  seed,  ///< z = RandomState(seed).randn, mapped with class and truncation (generate --seeds)
  mix,   ///< style mixing of seed (row) and col_seed (sg2 mix)
  ws,    ///< a given W+ row (generate --ws; its random-noise key is its row, 0)
};

/// Output format of an image request.
enum class Format { png, jpeg };

/// One validated request.
struct ImageRequest {
  Latent latent = Latent::seed;
  bool ws_only = false;  ///< /v1/ws: the mapped ws (float32 .npy), no image
  uint32_t seed = 0;     ///< the seed, or the row seed of a mix
  uint32_t col_seed = 0;
  std::vector<int> styles;  ///< mix: ws rows taken from col_seed, each in [0, num_ws)
  int class_idx = -1;       ///< conditional models: the label (required there); -1 otherwise
  Truncation truncation;    ///< seed: the engine's (lerp, cutoff); mix: psi of the plain formula
  Tensor ws;                ///< Latent::ws: [1, num_ws, w_dim]
  NoiseMode noise_mode = NoiseMode::const_;
  uint64_t noise_seed = 0;
  Format format = Format::png;
  int png_level = 6;
  int jpeg_quality = 90;

  /// The random-noise key of this image, as the CLI gives it: the seed (generate), the row seed (mix),
  /// the row 0 (a single --ws latent).
  uint64_t noise_key() const { return latent == Latent::ws ? 0 : seed; }
};

/// A query string's parameters, percent-decoded, in order.
using Query = std::vector<std::pair<std::string, std::string>>;

/// Splits "a=1&b=x%20y" into its parameters, percent-decoding names and values ('+' is a space).
/// Error(invalid_argument) for a malformed escape, an empty name, or a name given twice.
Query parse_query(const std::string& query);

/// The request a GET /v1/generate (ws_only: GET /v1/ws) query asks for. Error(invalid_argument) with
/// the CLI's message for the parameter ("seed: ...", "trunc: ...", ...), for an unknown parameter,
/// and for a combination the CLI refuses.
ImageRequest parse_get(const Query& query, const ModelConfig& cfg, bool ws_only);

/// The request of a POST /v1/generate: the body is a .npy array of one latent in a shape `--ws`
/// takes ([1, w_dim], [1, num_ws, w_dim], or [num_ws, w_dim] with ws-as=w+). Error(invalid_argument)
/// as parse_get, and for a body that is not such an array (wrong dtype, shape, NaN or infinite values).
ImageRequest parse_post(const Query& query, const std::string& body, const ModelConfig& cfg);

}  // namespace sg2::cli::serve
