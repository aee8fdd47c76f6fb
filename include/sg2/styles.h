// sg2: the style vectors of a model — the per-layer affine outputs that modulate the synthesis
// network's convolutions (`styles` in the official networks_stylegan2.py SynthesisLayer.forward and
// ToRGBLayer.forward), as sg2 generate --save-styles writes them (docs/bulk.md "Latent archives").
//
// One image's styles are the layers' vectors concatenated in the order the official
// SynthesisNetwork runs them: block by block from 4x4 up, and in each block conv0 (not in b4),
// conv1, then torgb (every block for the skip architecture, the last block only for orig and
// resnet). Layer l's vector has in_channels values: for conv0 / conv1 the affine output
// affine(w[w_index]); for torgb affine(w[w_index]) * weight_gain (1 / sqrt(in_channels)), as the
// official ToRGBLayer scales it before modulating.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sg2/export.h"
#include "sg2/model.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// One modulated layer's place in an image's styles.
struct StyleLayer {
  std::string name;    ///< "b4.conv1", "b4.torgb", "b8.conv0", ... (the official module path below synthesis)
  int64_t offset = 0;  ///< first column in the concatenated styles
  int dims = 0;        ///< its width: the layer's input channels
  int w_index = 0;     ///< the ws row its affine reads
};

/// The layers of `config` in order (see above). Throws Error(invalid_argument) for an invalid config.
std::vector<StyleLayer> style_layers(const ModelConfig& config);

/// The total width of one image's styles: the sum of style_layers(config)'s dims.
int64_t style_dims(const ModelConfig& config);

}  // namespace sg2
SG2_PUBLIC_END
