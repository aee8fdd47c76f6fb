// sg2 readers: the family converters and structural family detection.
//
// Each family's name mapping lives in one file (design.md rule 2):
//   family_ada.cpp         stylegan2-ada-pytorch / stylegan3-repo pickles (identity map)
//   family_tf.cpp          NVlabs stylegan2 / stylegan2-ada TensorFlow pickles (spec §7b)
//   family_rosinality.cpp  rosinality/stylegan2-pytorch .pt checkpoints (spec §7c)
// detect.cpp picks one from the checkpoint's structure, never from the file name.
#pragma once

#include <string>

#include "readers/family_common.h"

namespace sg2::readers {

/// A stylegan2-ada-pytorch or stylegan3-repo StyleGAN2 generator module tree (`G_ema`).
/// `where` names it in messages ("G_ema").
Conversion convert_ada_generator(Checkpoint& ck, const pickle::Node* generator, const std::string& where);

/// A TensorFlow `dnnlib.tflib.network.Network` generator (`Gs`).
Conversion convert_tf_generator(Checkpoint& ck, const pickle::Node* gs, const std::string& where);

/// A rosinality generator state dict (`g_ema`) and, when present, `latent_avg` of the top-level
/// dict (`top` may be nullptr).
Conversion convert_rosinality(Checkpoint& ck, const pickle::Node* top, const pickle::Node* g_ema,
                              const std::string& where);

/// Finds the generator in the checkpoint's top-level value and converts it. Throws
/// Error(unsupported) for StyleGAN1, StyleGAN3, discriminator-only files, SWAGAN, progressive
/// (ToRGB_lod) networks, and Error(bad_file) for values that are not checkpoints (naming any
/// callable the file would have run, e.g. os.system, which sg2 never runs).
Conversion detect_and_convert(Checkpoint& ck);

}  // namespace sg2::readers
