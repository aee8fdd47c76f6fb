// sg2 GPU tests: the official uint8 conversion on the GPU, streaming generation (sg2/stream.h) on
// the CUDA backend (one and two workers on one GPU), and batch invariance: an image's bits do not
// depend on the batch size, its position in the batch or the number of workers, in every precision
// (docs/precision.md, "Batch invariance").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <numeric>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/to_uint8.h"
#include "sg2/convert.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/image_pipe.h"
#include "sg2/random_model.h"
#include "sg2/stream.h"

using namespace sg2;
using namespace sg2::gputest;

namespace {

/// uint8 images of `seeds` through generate_stream: one byte vector per image.
std::vector<std::vector<uint8_t>> stream_u8(const std::vector<Generator*>& gens, const std::vector<uint32_t>& seeds,
                                            int batch, int class_idx = -1) {
  ImageJob job;
  job.seeds = seeds;
  job.class_idx = class_idx;
  StreamOptions so;
  so.batch = batch;
  std::vector<std::vector<uint8_t>> out;
  generate_stream(gens, job, so, [&](const StreamImage& im) {
    out.emplace_back(im.u8, im.u8 + size_t(im.width) * im.height * im.channels);
  });
  return out;
}

}  // namespace

TEST(GpuKernels, ToUint8IsTheOfficialConversion) {
  SG2_REQUIRE_GPU();
  // random values over and beyond [-1, 1], the conversion's edges, NaN and infinities
  Tensor img = randn({3, 3, 17, 9}, 61, 0.8f);
  const float edges[] = {-1.0f, 1.0f, 0.0f,     -1.0039216f, 0.9960785f, 127.0f / 127.5f, -128.0f / 127.5f,
                         1e-8f, NAN,  INFINITY, -INFINITY,   1.0000001f, -0.99999994f};
  for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); ++i) img[int64_t(i) * 7] = edges[i];
  for (int C : {1, 3, 4}) {
    Tensor t = Tensor({3, C, 17, 9});
    std::copy(img.data(), img.data() + t.numel(), t.data());
    auto d_img = to_device(t);
    cuda::DeviceBuffer d_u8(size_t(t.numel()), nullptr);
    cuda::images_to_uint8(d_img.as<float>(), 3, C, 17, 9, d_u8.as<uint8_t>(), nullptr);
    std::vector<uint8_t> got(size_t(t.numel()));
    SG2_CUDA_CHECK(cudaMemcpy(got.data(), d_u8.get(), got.size(), cudaMemcpyDeviceToHost));
    for (int n = 0; n < 3; ++n) {
      const Image8 ref = to_image8(t, n);
      EXPECT_EQ(std::memcmp(got.data() + size_t(n) * ref.pixels.size(), ref.pixels.data(), ref.pixels.size()), 0)
          << "C " << C << " image " << n;
    }
  }
}

TEST(GpuStream, MatchesGenerateWithOneAndTwoWorkersOnOneGpu) {
  SG2_REQUIRE_GPU();
  const Model m = make_random_model(make_config(64, 4096, 128, 64, 64, 3, 3, 2, Architecture::skip, 256.0f, 2), 7);
  const std::vector<uint32_t> seeds = {5, 1, 900, 42, 7, 0, 13, 99, 3, 12345};
  for (Precision p : {Precision::fp32, Precision::automatic}) {
    Generator a(m, on_gpu(p, 4)), b(m, on_gpu(p, 4));
    const Tensor img = a.generate(z_from_seeds(seeds, 64), one_hot(std::vector<int>(seeds.size(), 2), 3));
    for (int workers : {1, 2}) {
      std::vector<Generator*> gens = {&a};
      if (workers == 2) gens.push_back(&b);  // cuda:0,0: two workers on the same GPU
      const auto got = stream_u8(gens, seeds, 3, 2);
      ASSERT_EQ(got.size(), seeds.size());
      for (size_t i = 0; i < seeds.size(); ++i)
        EXPECT_EQ(got[i], to_image8(img, int64_t(i)).pixels)
            << to_string(p) << ", " << workers << " workers, image " << i;
    }
  }
}

// The acceptance test: the same seeds at batch 1, 3, 8 and 32 and in a shuffled order give
// the same float output and the same PNG pixels, in every precision, on the 1024 config and a small
// fixture, and across two workers on one GPU.
TEST(GpuBatchInvariance, EveryBatchSizePositionAndWorkerCountInEveryPrecision) {
  SG2_REQUIRE_GPU();
  struct M {
    std::string label;
    Model model;
  };
  std::vector<M> models;
  models.push_back({"ffhq1024-f (random weights)", make_random_model(named_config("ffhq1024-f"), 3)});
  models.push_back(
      {"fp16clamp64 fixture", load_model(test::source_path("tests/data/fixtures/fp16clamp64/network-snapshot.pkl"))});
  constexpr int kImages = 32;
  std::vector<uint32_t> seeds(kImages);
  std::iota(seeds.begin(), seeds.end(), 0u);
  std::vector<size_t> order(kImages);
  std::iota(order.begin(), order.end(), size_t(0));
  std::mt19937 rng(5);
  std::shuffle(order.begin(), order.end(), rng);
  for (const M& mc : models) {
    const ModelConfig& cfg = mc.model.config;
    const Tensor z = z_from_seeds(seeds, cfg.z_dim);
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::automatic}) {
      const std::string what = mc.label + ", " + to_string(p);
      Generator g32(mc.model, on_gpu(p, kImages));
      const Tensor ws = g32.map(z, Tensor());
      const Tensor ref = g32.synthesize(ws);
      const size_t per = size_t(ref.numel() / kImages);
      auto same = [&](const Tensor& got, size_t got_index, size_t ref_index, const std::string& how) {
        EXPECT_EQ(std::memcmp(got.data() + got_index * per, ref.data() + ref_index * per, per * sizeof(float)), 0)
            << what << ": image " << ref_index << " " << how;
      };
      for (int batch : {1, 3, 8}) {
        Generator g(mc.model, on_gpu(p, batch));
        const Tensor got = g.synthesize(ws);
        for (size_t i = 0; i < kImages; ++i) same(got, i, i, "at batch " + std::to_string(batch));
      }
      Tensor shuffled({kImages, cfg.num_ws, cfg.w_dim});
      const size_t row = size_t(cfg.num_ws) * cfg.w_dim;
      for (size_t i = 0; i < kImages; ++i)
        std::copy(ws.data() + order[i] * row, ws.data() + (order[i] + 1) * row, shuffled.data() + i * row);
      const Tensor got = g32.synthesize(shuffled);
      for (size_t i = 0; i < kImages; ++i) same(got, i, order[i], "in shuffled position " + std::to_string(i));
      // uint8 (the PNG pixels) through the stream, two workers on one GPU at batch 3
      Generator w1(mc.model, on_gpu(p, 3)), w2(mc.model, on_gpu(p, 3));
      const auto u8 = stream_u8({&w1, &w2}, seeds, 3);
      for (size_t i = 0; i < kImages; ++i)
        EXPECT_EQ(u8[i], to_image8(ref, int64_t(i)).pixels) << what << ": image " << i << " (uint8, 2 workers)";
      std::cout << "  batch invariance checked: " << what << "\n";
    }
  }
}

// sg2 serve's path (sg2/image_pipe.h): batches of any size, padded on the GPU to the next power of two,
// give each row's image made alone; random noise keyed per image.
TEST(GpuImagePipe, PaddedBatchesGiveEachRowMadeAlone) {
  SG2_REQUIRE_GPU();
  const Model m = make_random_model(make_config(64, 4096, 128, 64, 64, 3, 3, 2, Architecture::skip, 256.0f, 2), 9);
  const std::vector<uint32_t> seeds = {5, 1, 900, 42, 7};
  for (Precision p : {Precision::fp32, Precision::automatic}) {
    Generator gen(m, on_gpu(p, 0)), alone(m, on_gpu(p, 1));
    const Tensor ws = gen.map(z_from_seeds(seeds, 64), one_hot(std::vector<int>(seeds.size(), 1), 3));
    ImagePipe pipe(gen, 8, 3), one(alone, 1, 2);
    EXPECT_EQ(pipe.padded_size(3), 4);
    EXPECT_EQ(pipe.padded_size(5), 8);
    EXPECT_EQ(pipe.padded_size(8), 8);
    for (int n : {1, 3, 5}) {
      NoiseSpec noise;
      noise.mode = NoiseMode::random;
      noise.seed = 4;
      for (int i = 0; i < n; ++i) noise.keys.push_back(seeds[size_t(i)]);
      const int id = pipe.submit(ws.slice0(0, n), noise);
      const ImageBatch b = pipe.wait(id);
      ASSERT_EQ(b.count, n);
      for (int i = 0; i < n; ++i) {
        NoiseSpec single = noise;
        single.keys = {seeds[size_t(i)]};
        const int j = one.submit(ws.slice0(i, i + 1), single);
        const ImageBatch a = one.wait(j);
        EXPECT_EQ(std::memcmp(b.u8 + size_t(i) * b.image_bytes(), a.u8, a.image_bytes()), 0)
            << to_string(p) << ", batch of " << n << ", image " << i;
        one.release(j);
      }
      pipe.release(id);
    }
    const DeviceMemory mem = device_memory(gen);
    EXPECT_GT(mem.sg2_bytes, size_t(0));
    EXPECT_GT(mem.total_bytes, mem.free_bytes);
  }
}
