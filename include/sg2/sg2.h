// sg2: a standalone StyleGAN2 inference engine. Include this one header.
//
//   sg2::Generator gen(sg2::load_model("network-snapshot.pkl"));
//   sg2::Tensor img = gen.generate(sg2::z_from_seed(42, gen.config().z_dim), {});
//   sg2::write_png("seed0042.png", sg2::to_image8(img, 0));
//
// Every function throws sg2::Error (error.h) on failure; nothing aborts.
#pragma once

#include "sg2/blend.h"
#include "sg2/convert.h"
#include "sg2/default_model.h"
#include "sg2/edit.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/interrupt.h"
#include "sg2/latents.h"
#include "sg2/model.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"
#include "sg2/random_state.h"
#include "sg2/styles.h"
#include "sg2/tensor.h"
#include "sg2/text.h"
