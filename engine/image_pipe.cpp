// sg2: a generator's batches in flight for callers that form their own batches (sg2/image_pipe.h),
// over the backend's pipe (batch_pipe.h) that generate_stream uses.
#include "sg2/image_pipe.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend.h"
#include "engine/batch_pipe.h"
#include "engine/generator_access.h"
#include "sg2/error.h"

namespace sg2 {

struct ImagePipe::Impl {
  Generator* gen = nullptr;
  Backend* backend = nullptr;
  std::unique_ptr<BatchPipe> pipe;
  int batch = 0;
  bool pad = false;
  std::vector<int> counts;  // per slot: the images submitted (the rest of the slot is padding)
};

namespace {
int next_power_of_two(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}
int bucket_count(int batch) {  // 1, 2, 4, ... up to the first power of two >= batch
  int k = 1;
  for (int p = 1; p < batch; p *= 2) ++k;
  return k;
}
}  // namespace

ImagePipe::ImagePipe(Generator& gen, int batch, int slots) : impl_(std::make_unique<Impl>()) {
  if (batch < 1) fail(ErrorKind::invalid_argument, "ImagePipe: batch ", batch, " must be >= 1");
  if (slots < 2) fail(ErrorKind::invalid_argument, "ImagePipe: slots ", slots, " must be >= 2");
  impl_->gen = &gen;
  impl_->backend = &GeneratorAccess::backend(gen);
  impl_->batch = batch;
  impl_->pad = impl_->backend->keeps_state_per_batch_size();
  if (impl_->pad) impl_->backend->keep_batch_sizes(bucket_count(batch));
  PipeOutputs out;
  out.u8 = true;
  impl_->pipe = impl_->backend->make_pipe(batch, out, slots);
  impl_->counts.assign(static_cast<size_t>(slots), 0);
}

ImagePipe::~ImagePipe() = default;

int ImagePipe::batch() const { return impl_->batch; }
int ImagePipe::slots() const { return impl_->pipe->slots(); }

int ImagePipe::padded_size(int n) const {
  if (!impl_->pad) return n;
  return std::min(impl_->batch, next_power_of_two(std::max(n, 1)));
}

int ImagePipe::submit(const Tensor& ws, const NoiseSpec& noise) {
  const ModelConfig& cfg = impl_->gen->config();
  if (ws.ndim() != 3 || ws.dim(1) != cfg.num_ws || ws.dim(2) != cfg.w_dim)
    fail(ErrorKind::invalid_argument, "ws must be [N, ", cfg.num_ws, ", ", cfg.w_dim, "] for this model, got ",
         ws.shape_str());
  const int64_t n = ws.dim(0);
  if (n < 1 || n > impl_->batch)
    fail(ErrorKind::invalid_argument, "ImagePipe: a batch of ", n, " images for a pipe of 1 to ", impl_->batch);
  for (float v : ws.vec())
    if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "ws contains NaN or infinite values");
  if (!noise.maps.empty()) fail(ErrorKind::invalid_argument, "ImagePipe: noise maps are not taken");
  if (noise.mode == NoiseMode::random && static_cast<int64_t>(noise.keys.size()) != n)
    fail(ErrorKind::invalid_argument, "noise keys: ", noise.keys.size(), " given for ", n, " samples");
  const int padded = padded_size(static_cast<int>(n));
  int id = -1;
  if (padded == n) {
    id = impl_->pipe->submit(ws, noise);
  } else {
    // Padding rows repeat row 0 (finite, and cheap to make); their images are never shown.
    const size_t row = size_t(cfg.num_ws) * cfg.w_dim;
    Tensor full({padded, cfg.num_ws, cfg.w_dim});
    std::copy(ws.data(), ws.data() + size_t(n) * row, full.data());
    for (int i = static_cast<int>(n); i < padded; ++i) std::copy(ws.data(), ws.data() + row, full.data() + i * row);
    NoiseSpec part = noise;
    if (noise.mode == NoiseMode::random) part.keys.resize(size_t(padded), noise.keys[0]);
    id = impl_->pipe->submit(full, part);
  }
  impl_->counts.at(static_cast<size_t>(id)) = static_cast<int>(n);
  return id;
}

bool ImagePipe::has_free_slot() { return impl_->pipe->has_free_slot(); }

ImageBatch ImagePipe::wait(int id) {
  if (id < 0 || id >= slots()) fail(ErrorKind::invalid_argument, "ImagePipe: no slot ", id);
  const HostBatchView v = impl_->pipe->wait(id);
  const ModelConfig& cfg = impl_->gen->config();
  ImageBatch b;
  b.count = impl_->counts[static_cast<size_t>(id)];
  b.width = cfg.width();
  b.height = cfg.height();
  b.channels = cfg.img_channels;
  b.u8 = v.u8;
  return b;
}

void ImagePipe::release(int id) noexcept { impl_->pipe->release(id); }

DeviceMemory device_memory(Generator& gen) {
  Backend& b = GeneratorAccess::backend(gen);
  DeviceMemory m;
  if (!b.device_memory(&m)) fail(ErrorKind::unsupported, "the ", b.name(), " backend has no device memory");
  return m;
}

}  // namespace sg2
