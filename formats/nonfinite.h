// sg2 internal: the check that a synthesized batch holds no NaN or infinite pixel, and what its
// message blames, by where the latents came from.
#pragma once

#include <cstdint>

#include "sg2/tensor.h"

namespace sg2 {

/// Where the latents of a batch came from, for the message of require_finite_images.
enum class NonfiniteSource {
  mapping,     ///< the model's own mapping network, |psi| <= 1: the model's weights are at fault
  truncation,  ///< its mapping with a truncation psi outside [-1, 1]
  given_ws,    ///< ws from the caller (--ws, the API's synthesize): either
  edited,      ///< its mapping's ws moved by edit directions (--edit): the edit's strength x direction
};

/// The cause a NaN or infinite pixel is put down to, for `source` (one clause, no period).
const char* nonfinite_cause(NonfiniteSource source);

/// Throws Error(invalid_argument) when a synthesized batch `img` ([N, C, H, W] float32) holds a
/// NaN or an infinite value: "the synthesis of sample K gave NaN or infinite pixels: <cause>", K
/// counted from `first_sample` ("a sample" when it is negative). The official code writes such
/// pixels as 0 without a word.
void require_finite_images(const Tensor& img, int64_t first_sample = 0,
                           NonfiniteSource source = NonfiniteSource::given_ws);

}  // namespace sg2
