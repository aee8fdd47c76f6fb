// sg2 CPU backend: every setting that shapes how the CPU runs a model, in one place — resolved
// once, when a backend is created, from GeneratorOptions and the environment, and passed down
// (the CUDA backend's counterpart is engine/cuda/options.h). None of them changes a result bit:
// work is split by the model's shape alone, so images are the same for every thread count.
//   threads       GeneratorOptions::threads (--threads), else SG2_CPU_THREADS, else every core
//   reference     GeneratorOptions::reference_cpu, or SG2_CPU_REFERENCE=1: the plain C++ reference
//                 ops of kernels/ref (the tests' oracle) instead of oneDNN (always so without oneDNN)
//   profile       SG2_CPU_PROFILE=1: per-phase wall and CPU times on stderr when the backend ends
//   unit_macs, min_band_pixels, min_up_band_rows, min_channel_block: the work units of the oneDNN
//                 path (engine/cpu/layers.cpp: a band of output rows x a block of output channels)
#pragma once

#include <cstdint>

namespace sg2 {

struct CpuTuning {
  int threads = 1;
  bool reference = false;
  bool profile = false;
  int64_t unit_macs = int64_t(1) << 26;  ///< a unit's work: about 1 ms of one core's convolution
  int min_band_pixels = 256;             ///< a band holds at least this many output pixels
  int min_up_band_rows = 32;             ///< conv0: each band recomputes the f - 1 rows its FIR reads beyond it
  int min_channel_block = 64;            ///< output channels split into blocks of at least this many

  /// The settings for GeneratorOptions::threads = `requested_threads` and ::reference_cpu =
  /// `reference`, with the environment read here, once. Throws Error(invalid_argument) naming the
  /// variable for a value it does not know (SG2_CPU_THREADS not in [1, 1024]; SG2_CPU_REFERENCE or
  /// SG2_CPU_PROFILE other than empty, 0 or 1), or for a bad `requested_threads`.
  static CpuTuning resolve(int requested_threads, bool reference);
};

}  // namespace sg2
