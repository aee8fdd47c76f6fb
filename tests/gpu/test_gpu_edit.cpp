// sg2 GPU tests: edit directions (ImageJob::edits, sg2/edit.h) on the CUDA backend: the ws every image
// carries are the truncated ws moved as the CPU arithmetic says, the images are the synthesis of exactly
// those ws, and the edit costs at most 3 % of generate_stream's throughput at 1024 (issue 25's target).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu_test_util.h"
#include "sg2/edit.h"
#include "sg2/generator.h"
#include "sg2/random_model.h"
#include "sg2/stream.h"

using namespace sg2;
using namespace sg2::gputest;

namespace {

Tensor wave(std::vector<int64_t> shape, float f, float scale) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = std::sin(f * float(i) + 0.3f) * scale;
  return t;
}

}  // namespace

TEST(GpuEdit, StreamImagesAreTheSynthesisOfTheEditedWs) {
  SG2_REQUIRE_GPU();
  const ModelConfig cfg = make_config(64, 4096, 128, 64, 64, 0, 3, 2, Architecture::skip, 256.0f, 2);
  const Model m = make_random_model(cfg, 17);
  Generator gen(m, on_gpu(Precision::fp32, 4));
  const std::vector<uint32_t> seeds = {3, 8, 1000, 5, 77};
  std::vector<WsEdit> edits = {WsEdit{wave({cfg.w_dim}, 0.9f, 1.3f), 2.25f, 0, -1, "vec"},
                               WsEdit{wave({cfg.num_ws, cfg.w_dim}, 0.17f, 0.6f), -1.5f, 1, 3, "rows"}};
  ImageJob job;
  job.seeds = seeds;
  job.truncation.psi = 0.7f;
  job.edits = edits;
  StreamOptions so;
  so.batch = 2;
  so.ws = true;
  so.float32 = true;
  std::vector<Tensor> got_ws, got_img;
  generate_stream({&gen}, job, so, [&](const StreamImage& im) {
    Tensor w({1, cfg.num_ws, cfg.w_dim});
    std::memcpy(w.data(), im.ws, sizeof(float) * size_t(w.numel()));
    got_ws.push_back(w);
    Tensor img({1, im.channels, im.height, im.width});
    std::memcpy(img.data(), im.img, sizeof(float) * size_t(img.numel()));
    got_img.push_back(img);
  });
  ASSERT_EQ(got_ws.size(), seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    Truncation t;
    t.psi = 0.7f;
    Tensor ws = gen.map(z_from_seeds({seeds[i]}, cfg.z_dim), Tensor(), t);
    const Tensor plain = ws;
    apply_edits(ws, edits);
    EXPECT_EQ(std::memcmp(ws.data(), got_ws[i].data(), sizeof(float) * size_t(ws.numel())), 0) << i;
    EXPECT_NE(std::memcmp(ws.data(), plain.data(), sizeof(float) * size_t(ws.numel())), 0) << i;
    const Tensor img = gen.synthesize(ws);
    EXPECT_EQ(std::memcmp(img.data(), got_img[i].data(), sizeof(float) * size_t(img.numel())), 0) << i;
  }
}
