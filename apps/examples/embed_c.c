/* Embedding sg2 through its C ABI (sg2/sg2_c.h), as C programs and other languages' FFIs (Python
 * ctypes, Rust, Go, C#) do: three digits "7" from the bundled model, as PNGs.
 * Build against an installed sg2:  cmake -S apps/examples -B ex -DCMAKE_PREFIX_PATH=<prefix>
 * Usage: embed_c [OUTDIR] [MODEL]   (MODEL: a model file or checkpoint; default: the bundled digits32) */
#include <sg2/sg2_c.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const char* outdir = argc > 1 ? argv[1] : ".";
  sg2_generator* g = NULL;
  if (sg2_generator_open(argc > 2 ? argv[2] : NULL, NULL, &g) != SG2_OK) { /* NULL options: CUDA when usable */
    fprintf(stderr, "embed_c: %s\n", sg2_last_error());
    return 1;
  }
  sg2_model_info info;
  sg2_generator_info(g, &info);
  const uint32_t seeds[3] = {0, 1, 2};
  const size_t image = (size_t)info.img_channels * info.img_resolution * info.img_resolution;
  float* img = malloc(sizeof(float) * 3 * image); /* [3, C, R, R] float32 */
  uint8_t* pixels = malloc(image);                /* [R, R, C] uint8 */
  int failed = img == NULL || pixels == NULL ||
               sg2_generate_seeds(g, seeds, 3, info.c_dim > 0 ? 7 : -1, 0.7f, SG2_NOISE_CONST, img) != SG2_OK;
  for (int i = 0; i < 3 && !failed; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/embed_c_seed%u.png", outdir, (unsigned)seeds[i]);
    failed =
        sg2_to_uint8(img + i * image, info.img_channels, info.img_resolution, info.img_resolution, pixels) != SG2_OK ||
        sg2_write_png(path, pixels, info.img_resolution, info.img_resolution, info.img_channels) != SG2_OK;
    if (!failed) printf("wrote %s (%dx%d)\n", path, info.img_resolution, info.img_resolution);
  }
  if (failed) fprintf(stderr, "embed_c: %s\n", img && pixels ? sg2_last_error() : "out of memory");
  free(img);
  free(pixels);
  sg2_generator_close(g);
  return failed;
}
