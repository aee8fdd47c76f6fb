/* sg2: the C ABI, for other languages (Python ctypes/cffi, Rust, Go, C#, ...).
 *
 * Opaque handles, status codes, and a per-thread last-error message and hint; no C++ exception ever
 * crosses this boundary. Arrays are dense, C order, float32 unless stated, in host memory, with
 * shapes in PyTorch order. Semantics are those of the C++ API (sg2/generator.h).
 *
 *   sg2_generator* g = NULL;
 *   if (sg2_generator_open(NULL, NULL, &g) != SG2_OK) { fprintf(stderr, "%s\n", sg2_last_error()); ... }
 *   sg2_model_info info; sg2_generator_info(g, &info);
 *   float* img = malloc(sizeof(float) * n * info.img_channels * info.img_resolution * info.img_resolution);
 *   uint32_t seeds[] = {0, 1, 2};
 *   sg2_generate_seeds(g, seeds, 3, 7, 1.0f, SG2_NOISE_CONST, img);
 *   sg2_generator_close(g);
 */
#ifndef SG2_C_H
#define SG2_C_H

#include <stddef.h>
#include <stdint.h>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/** Status of every call. The numbering is stable (it mirrors sg2::ErrorKind, plus 1). */
typedef enum sg2_status {
  SG2_OK = 0,
  SG2_ERR_INVALID_ARGUMENT = 1, /**< a bad value: seed, shape, class, NULL pointer, ... */
  SG2_ERR_BAD_FILE = 2,         /**< a corrupt, truncated or mislabelled file */
  SG2_ERR_UNSUPPORTED = 3,      /**< a well-formed input sg2 does not support */
  SG2_ERR_IO = 4,               /**< the operating system refused (open, write, disk full) */
  SG2_ERR_DEVICE = 5,           /**< CUDA failure, no GPU, wrong architecture */
  SG2_ERR_OUT_OF_MEMORY = 6,    /**< host or device allocation failed */
  SG2_ERR_INTERNAL = 7          /**< a bug in sg2: please report it */
} sg2_status;

/** Official noise_mode. */
typedef enum sg2_noise_mode {
  SG2_NOISE_CONST = 0,                  /**< the model's stored noise_const maps */
  SG2_NOISE_RANDOM = 1,                 /**< fresh maps, reproducible from the noise seed and the sample's key */
  SG2_NOISE_NONE = 2,                   /**< no noise */
  SG2_NOISE_MODE_FORCE_INT = 0x7fffffff /* keeps the enum int-sized; not a mode */
} sg2_noise_mode;

/** An opened generator (model + device). Not thread-safe: use one per thread. A call made while
 *  another thread's call on the same handle runs fails at once with SG2_ERR_INVALID_ARGUMENT
 *  ("... is running a call on another thread ..."), instead of racing it.
 *  Every call checks all its arguments (n in [0, 2^31], classes, psi finite, noise mode, image
 *  sizes, labels without NaN) before it reads the caller's arrays; the arrays must then hold the
 *  sizes stated. */
typedef struct sg2_generator sg2_generator;

/** Options for sg2_generator_open; fill with sg2_options_init first. */
typedef struct sg2_options {
  const char* device;    /**< "cpu", "cuda", "cuda:N"; NULL = CUDA when usable, else cpu */
  const char* precision; /**< "auto", "fp32", "tf32", "fp16"; NULL = "auto" */
  int max_batch;         /**< largest batch run at once; 0 = backend default */
} sg2_options;

/** The model's dimensions. img_resolution is the larger image side; a non-square network
 *  (StyleGAN-Human's 1024x512) has an image of sg2_generator_image_size's height x width. */
typedef struct sg2_model_info {
  int z_dim, c_dim, w_dim, num_ws, img_resolution, img_channels;
} sg2_model_info;

/** The message of the last failed call on this thread ("" when none): one line, what failed and
 *  where. Valid until the next failing call on the same thread. */
const char* sg2_last_error(void);

/** What to do about the last failure on this thread, when sg2 has advice ("decompress it first",
 *  "use precision fp32 or auto on the CPU"); "" otherwise. Not part of sg2_last_error()'s text: show
 *  both (the sg2 CLI prints the hint on a line of its own). Valid as long as sg2_last_error(). */
const char* sg2_last_error_hint(void);

/** "0.1.0" */
const char* sg2_version(void);

/** Defaults: device NULL, precision NULL, max_batch 0. */
void sg2_options_init(sg2_options* options);

/** Opens a model file or checkpoint; path NULL = the bundled model (SG2_MODEL, then the install
 *  and build locations; sg2/default_model.h). options NULL = defaults. On success *out is a new
 *  handle to release with sg2_generator_close; on failure *out is NULL. */
sg2_status sg2_generator_open(const char* path, const sg2_options* options, sg2_generator** out);

/** Releases a handle (NULL is allowed). */
void sg2_generator_close(sg2_generator* generator);

sg2_status sg2_generator_info(const sg2_generator* generator, sg2_model_info* out);

/** The image's height and width (both img_resolution for a square network). Images of a
 *  non-square network are [n, img_channels, height, width]: height * width floats per channel,
 *  never more than the img_resolution^2 a caller of sg2_generator_info alone allocates. */
sg2_status sg2_generator_image_size(const sg2_generator* generator, int* height, int* width);

/** Mapping: z [n, z_dim], c [n, c_dim] one-hot (NULL for unconditional models) ->
 *  ws_out [n, num_ws, w_dim]. Truncation toward w_avg with psi on ws rows [0, cutoff); cutoff < 0
 *  truncates every row. */
sg2_status sg2_map(sg2_generator* generator, const float* z, const float* c, int64_t n, float psi, int cutoff,
                   float* ws_out);

/** Synthesis: ws [n, num_ws, w_dim] -> img_out [n, img_channels, H, W] (R x R when square;
 *  sg2_generator_image_size), nominally in [-1, 1]. No
 *  truncation. For SG2_NOISE_RANDOM, sample i's noise depends on (noise_seed, keys[i]); keys NULL
 *  means keys[i] = i. */
sg2_status sg2_synthesize(sg2_generator* generator, const float* ws, int64_t n, sg2_noise_mode noise_mode,
                          uint64_t noise_seed, const uint64_t* keys, float* img_out);

/** generate.py for a list of seeds: z = RandomState(seed).randn(1, z_dim), label class_idx
 *  (required, in [0, c_dim), for conditional models; pass -1 for unconditional ones), truncation
 *  psi on all rows, noise mode (random noise keyed by the seed, noise seed 0) -> img_out
 *  [n, img_channels, H, W] (sg2_generator_image_size). */
sg2_status sg2_generate_seeds(sg2_generator* generator, const uint32_t* seeds, int64_t n, int class_idx, float psi,
                              sg2_noise_mode noise_mode, float* img_out);

/** The official uint8 conversion (trunc(clamp(x * 127.5 + 128, 0, 255))) of one image
 *  img [channels, height, width] -> out [height, width, channels] (HWC). */
sg2_status sg2_to_uint8(const float* img, int channels, int height, int width, uint8_t* out);

/** Writes pixels [height, width, channels] (1 gray, 3 RGB, 4 RGBA) as a PNG, atomically. */
sg2_status sg2_write_png(const char* path, const uint8_t* pixels, int width, int height, int channels);

/** Copies the bundled model's path (with its terminating NUL) into buf when it fits; *needed
 *  (optional) receives the size required. SG2_ERR_INVALID_ARGUMENT when buf is too small,
 *  SG2_ERR_IO (message lists the places looked at) when the model is missing. */
sg2_status sg2_default_model_path(char* buf, size_t size, size_t* needed);

#ifdef __cplusplus
}
#endif
SG2_PUBLIC_END

#endif /* SG2_C_H */
