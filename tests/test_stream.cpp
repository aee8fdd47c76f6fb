// Streaming generation (sg2/stream.h) on the CPU backend: the same images as Generator::generate
// plus the official uint8 conversion, in index order, whatever the batch size and the number of
// generators; float and ws outputs; holds that outlive the sink; errors that stop the stream.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/random_model.h"
#include "sg2/stream.h"
#include "test_util.h"

using namespace sg2;

namespace {

Model cond_model() {
  return make_random_model(make_config(16, 128, 16, 8, 8, 3, 3, 2, Architecture::skip, 256.0f, 2), 21);
}

GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  return o;
}

struct Got {
  std::vector<int64_t> index;
  std::vector<uint64_t> key;
  std::vector<std::vector<uint8_t>> u8;
  std::vector<std::vector<float>> img, ws;
};

Got run(const std::vector<Generator*>& gens, const ImageJob& job, StreamOptions opt) {
  Got g;
  generate_stream(gens, job, opt, [&](const StreamImage& im) {
    g.index.push_back(im.index);
    g.key.push_back(im.key);
    const size_t n = size_t(im.width) * im.height * im.channels;
    if (im.u8) g.u8.emplace_back(im.u8, im.u8 + n);
    if (im.img) g.img.emplace_back(im.img, im.img + n);
    if (im.ws) g.ws.emplace_back(im.ws, im.ws + 6 * 8);
  });
  return g;
}

}  // namespace

TEST(Stream, SameImagesAsGenerateInOrderWhateverTheBatchAndGeneratorCount) {
  const Model m = cond_model();
  Generator g1(m, cpu()), g2(m, cpu());
  ImageJob job;
  job.seeds = {7, 3, 100, 42, 0, 5, 9};
  job.class_idx = 2;
  job.truncation.psi = 0.7f;
  job.noise_mode = NoiseMode::random;
  job.noise_seed = 11;
  // reference: generate + to_image8, one call
  const Tensor z = z_from_seeds(job.seeds, m.config.z_dim);
  const Tensor c = one_hot(std::vector<int>(job.seeds.size(), 2), m.config.c_dim);
  NoiseSpec noise;
  noise.mode = NoiseMode::random;
  noise.seed = 11;
  for (uint32_t s : job.seeds) noise.keys.push_back(s);
  const Tensor ws = g1.map(z, c, job.truncation);
  const Tensor img = g1.synthesize(ws, noise);
  for (int batch : {1, 3, 7, 16}) {
    for (int ngen : {1, 2}) {
      StreamOptions opt;
      opt.batch = batch;
      opt.float32 = true;
      opt.ws = true;
      std::vector<Generator*> gens = {&g1};
      if (ngen == 2) gens.push_back(&g2);
      const Got got = run(gens, job, opt);
      const std::string what = "batch " + std::to_string(batch) + ", " + std::to_string(ngen) + " generators";
      ASSERT_EQ(got.index.size(), job.seeds.size()) << what;
      for (size_t i = 0; i < job.seeds.size(); ++i) {
        EXPECT_EQ(got.index[i], int64_t(i)) << what;
        EXPECT_EQ(got.key[i], job.seeds[i]) << what;
        EXPECT_EQ(got.u8[i], to_image8(img, int64_t(i)).pixels) << what << " image " << i;
        const float* ref = img.data() + i * got.img[i].size();
        EXPECT_EQ(std::memcmp(got.img[i].data(), ref, got.img[i].size() * sizeof(float)), 0) << what;
        EXPECT_EQ(std::memcmp(got.ws[i].data(), ws.data() + i * 48, 48 * sizeof(float)), 0) << what;
      }
    }
  }
}

TEST(Stream, WsRowsAndHoldsThatOutliveTheSink) {
  const Model m = cond_model();
  Generator g(m, cpu());
  ImageJob job;
  job.ws = g.map(z_from_seeds({1, 2, 3, 4, 5}, 8), one_hot({0, 1, 2, 0, 1}, 3));
  const Tensor img = g.synthesize(job.ws);
  StreamOptions opt;
  opt.batch = 2;
  opt.batches_in_flight = 2;
  std::vector<StreamImage> kept;  // every image held past its sink call: the slots are reused only after
  kept.reserve(5);
  std::vector<std::vector<uint8_t>> copies;
  // With 2 slots and 3 batches, holding everything would block the stream: release all but the last.
  generate_stream({&g}, job, opt, [&](const StreamImage& im) {
    if (!kept.empty()) {
      copies.emplace_back(kept.back().u8, kept.back().u8 + 16 * 16 * 3);
      kept.clear();
    }
    kept.push_back(im);
  });
  copies.emplace_back(kept.back().u8, kept.back().u8 + 16 * 16 * 3);
  kept.clear();
  ASSERT_EQ(copies.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(copies[size_t(i)], to_image8(img, i).pixels) << i;
}

TEST(Stream, BadJobsAndSinkErrorsStopTheStream) {
  const Model m = cond_model();
  Generator g(m, cpu());
  ImageJob job;
  auto kind = [&](const ImageJob& j, StreamOptions o = {}) {
    try {
      generate_stream({&g}, j, o, [](const StreamImage&) {});
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::internal;
  };
  EXPECT_EQ(kind(job), ErrorKind::invalid_argument);  // nothing to make
  job.seeds = {1, 2, 3};
  EXPECT_EQ(kind(job), ErrorKind::invalid_argument);  // conditional model, no class
  job.class_idx = 3;
  EXPECT_EQ(kind(job), ErrorKind::invalid_argument);  // class out of range
  job.class_idx = 1;
  StreamOptions none;
  none.uint8 = false;
  EXPECT_EQ(kind(job, none), ErrorKind::invalid_argument);
  StreamOptions one_slot;
  one_slot.batches_in_flight = 1;
  EXPECT_EQ(kind(job, one_slot), ErrorKind::invalid_argument);
  job.ws = Tensor({2, 6, 8});
  EXPECT_EQ(kind(job), ErrorKind::invalid_argument);  // both seeds and ws
  job.ws = Tensor();
  // a sink that throws stops the stream; the error comes back unchanged
  int calls = 0;
  StreamOptions opt;
  opt.batch = 1;
  job.seeds = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_THROW(generate_stream({&g}, job, opt,
                               [&](const StreamImage&) {
                                 if (++calls == 3) throw std::runtime_error("disk full");
                               }),
               std::runtime_error);
  EXPECT_EQ(calls, 3);
  // the generator still works afterwards
  EXPECT_EQ(run({&g}, job, opt).index.size(), 8u);
}
