// sg2 CPU backend on oneDNN: the default for Device cpu (make_cpu_backend in backend.h picks it
// unless the reference ops are asked for).
//
// The same plan as the reference backend (engine/cpu_backend.cpp), computed as the CUDA
// backend does: activations modulated by the styles (x * s), 3x3 convolutions and stride-2
// transposed convolutions with the shared weight (oneDNN, NHWC float32), the output times the
// closed-form demodulation coefficients d = 1 / sqrt(s^2 Q^T + 1e-8); the up-sampling FIR,
// noise, bias, lrelu, gain and clamp in one pass per band; ToRGB and the image path. Fully
// connected layers (mapping, affine, ToRGB, resnet skip) with oneDNN's sgemm.
//
// Parallelism: a persistent pool of `threads` workers; each phase of the forward pass (one layer
// over the whole batch) is cut into units by the model alone (cpu/layers.h), and every library call
// in a unit is single-threaded. Results are bit-identical for any batch size, position in the
// batch and thread count.
#pragma once

#include <memory>

#include "engine/backend.h"
#include "engine/cpu_tuning.h"

namespace sg2 {

/// The oneDNN CPU backend with tuning.threads workers and its work units (engine/cpu_tuning.h).
/// Throws Error(invalid_argument) for tf32 / fp16, Error(unsupported) for a layer shape it
/// cannot run, Error(internal) when oneDNN fails.
std::unique_ptr<Backend> make_onednn_cpu_backend(const Model& model, Precision precision, const CpuTuning& tuning);

}  // namespace sg2
