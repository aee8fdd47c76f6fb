// ImagePipe (sg2/image_pipe.h) on the CPU backend: the images of a submitted batch are those of each
// row made alone (Generator::synthesize + the official conversion), per-image random-noise keys, slots
// that block and free, padded_size on the CPU, bad arguments, and device_memory's refusal on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/image_pipe.h"
#include "sg2/random_model.h"
#include "test_util.h"

using namespace sg2;

namespace {
Model small_model() {
  return make_random_model(make_config(16, 128, 16, 8, 8, 3, 3, 2, Architecture::skip, 256.0f, 2), 31);
}
GeneratorOptions cpu() {
  GeneratorOptions o;
  o.device = Device{};
  return o;
}
}  // namespace

TEST(ImagePipe, BatchImagesAreEachRowMadeAlone) {
  const Model m = small_model();
  Generator gen(m, cpu()), ref(m, cpu());
  const std::vector<uint32_t> seeds = {4, 8, 15, 16, 23};
  const Tensor ws = gen.map(z_from_seeds(seeds, 8), one_hot(std::vector<int>(seeds.size(), 1), 3));
  for (NoiseMode mode : {NoiseMode::const_, NoiseMode::random, NoiseMode::none}) {
    ImagePipe pipe(gen, 8, 2);
    EXPECT_EQ(pipe.padded_size(5), 5);  // the CPU backend keeps nothing per batch size
    NoiseSpec noise;
    noise.mode = mode;
    noise.seed = 9;
    if (mode == NoiseMode::random) noise.keys = {40, 41, 42, 43, 44};
    const int id = pipe.submit(ws, noise);
    const ImageBatch b = pipe.wait(id);
    ASSERT_EQ(b.count, 5);
    ASSERT_EQ(b.image_bytes(), size_t(16 * 16 * 3));
    for (int i = 0; i < 5; ++i) {
      NoiseSpec one;
      one.mode = mode;
      one.seed = 9;
      if (mode == NoiseMode::random) one.keys = {uint64_t(40 + i)};
      const Image8 want = to_image8(ref.synthesize(ws.slice0(i, i + 1), one), 0);
      EXPECT_EQ(std::memcmp(b.u8 + size_t(i) * b.image_bytes(), want.pixels.data(), b.image_bytes()), 0)
          << to_string(mode) << ", image " << i;
    }
    pipe.release(id);
  }
}

TEST(ImagePipe, SlotsAreHeldUntilReleased) {
  const Model m = small_model();
  Generator gen(m, cpu());
  const Tensor ws = gen.map(z_from_seeds({1, 2}, 8), one_hot({0, 0}, 3));
  ImagePipe pipe(gen, 2, 2);
  const int a = pipe.submit(ws, {});
  EXPECT_TRUE(pipe.has_free_slot());
  const int b = pipe.submit(ws, {});
  EXPECT_NE(a, b);
  EXPECT_FALSE(pipe.has_free_slot());
  pipe.release(a);
  EXPECT_TRUE(pipe.has_free_slot());
  pipe.release(b);
}

TEST(ImagePipe, RefusesBadArguments) {
  const Model m = small_model();
  Generator gen(m, cpu());
  EXPECT_THROW(ImagePipe(gen, 0, 2), Error);
  EXPECT_THROW(ImagePipe(gen, 4, 1), Error);
  ImagePipe pipe(gen, 2, 2);
  const Tensor ws = gen.map(z_from_seeds({1, 2, 3}, 8), one_hot({0, 0, 0}, 3));
  EXPECT_THROW(pipe.submit(ws, {}), Error);  // 3 rows for a pipe of 2
  EXPECT_THROW(pipe.submit(Tensor({1, 3, 16}), {}), Error);
  NoiseSpec random;
  random.mode = NoiseMode::random;
  random.keys = {1};
  EXPECT_THROW(pipe.submit(ws.slice0(0, 2), random), Error);  // one key for two rows
  Tensor nan = ws.slice0(0, 1);
  nan[3] = std::nanf("");
  EXPECT_THROW(pipe.submit(nan, {}), Error);
  EXPECT_TRUE(pipe.has_free_slot());  // refused batches hold no slot
  try {
    device_memory(gen);
    FAIL() << "device_memory on the CPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
  }
}
