// Many images through the streaming API (sg2/stream.h): seeds 0-99 of the bundled model as PNGs, the
// generators computing the next batches while this thread writes the finished ones.
// Build against an installed sg2:  cmake -S apps/examples -B ex -DCMAKE_PREFIX_PATH=<prefix>
// Usage: stream [OUTDIR] [MODEL] [DEVICES]   (DEVICES: cpu, cuda, cuda:0,1 or cuda:all)
#include <sg2/sg2.h>
#include <sg2/stream.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string outdir = argc > 1 ? argv[1] : ".";
  try {
    const sg2::Model model = argc > 2 && *argv[2] ? sg2::load_model(argv[2]) : sg2::load_default_model();
    const std::vector<sg2::Device> devices =
        argc > 3 ? sg2::Device::parse_list(argv[3]) : std::vector<sg2::Device>{sg2::Device::best_available()};
    std::vector<sg2::Generator> gens;  // one per device: each batch goes to whichever is free
    for (const sg2::Device& d : devices) {
      sg2::GeneratorOptions options;
      options.device = d;
      gens.emplace_back(model, options);
    }
    std::vector<sg2::Generator*> workers;
    for (sg2::Generator& g : gens) workers.push_back(&g);

    sg2::ImageJob job;  // what to make: numpy seeds, as generate.py (or W/W+ rows)
    job.seeds = sg2::parse_seeds("0-99");
    if (gens[0].config().c_dim > 0) job.class_idx = 7;
    sg2::StreamOptions options;  // uint8 images; 3 batches in flight per generator bound the memory
    int written = 0;
    const sg2::StreamStats stats = sg2::generate_stream(workers, job, options, [&](const sg2::StreamImage& im) {
      // im.u8: [height, width, channels] uint8 (the official conversion); called in seed order
      char name[40];
      std::snprintf(name, sizeof name, "/stream_seed%04llu.png", static_cast<unsigned long long>(im.key));
      sg2::write_png(outdir + name, im.image8());
      ++written;
    });
    std::cout << "wrote " << written << " images in " << stats.wall_s << " s\n";
  } catch (const sg2::Error& e) {  // the one exception type of sg2
    std::cerr << "stream: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
