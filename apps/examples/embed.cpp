// Embedding sg2 in a C++ program: four digits "7" from the bundled model, as PNGs.
// Build against an installed sg2:  cmake -S apps/examples -B ex -DCMAKE_PREFIX_PATH=<prefix>
// Usage: embed [OUTDIR] [MODEL]   (MODEL: a model file or checkpoint; default: the bundled digits32)
#include <sg2/sg2.h>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const std::string outdir = argc > 1 ? argv[1] : ".";
  try {
    sg2::GeneratorOptions options;  // device: CUDA when usable, else CPU
    sg2::Generator gen(argc > 2 ? sg2::load_model(argv[2]) : sg2::load_default_model(), options);
    const sg2::ModelConfig& cfg = gen.config();

    const std::vector<uint32_t> seeds = {0, 1, 2, 3};
    sg2::Tensor z = sg2::z_from_seeds(seeds, cfg.z_dim);  // numpy RandomState(seed).randn(1, z_dim)
    sg2::Tensor c = cfg.c_dim > 0 ? sg2::one_hot(std::vector<int>(seeds.size(), 7), cfg.c_dim) : sg2::Tensor();
    sg2::Tensor ws = gen.map(z, c, sg2::Truncation{0.7f, std::nullopt});  // [4, num_ws, w_dim]
    sg2::Tensor img = gen.synthesize(ws);                                 // [4, C, R, R], noise_mode const

    for (size_t i = 0; i < seeds.size(); ++i) {
      const std::string path = outdir + "/embed_seed" + std::to_string(seeds[i]) + ".png";
      sg2::write_png(path, sg2::to_image8(img, static_cast<int64_t>(i)));  // official uint8 conversion
      std::cout << "wrote " << path << " (" << cfg.img_resolution << "x" << cfg.img_resolution << ", "
                << gen.device().str() << ")\n";
    }
  } catch (const sg2::Error& e) {  // the one exception type of sg2
    std::cerr << "embed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
