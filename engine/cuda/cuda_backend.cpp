// sg2 CUDA backend: the Backend on one GPU (backend.h make_cuda_backend) — mapping, synthesis
// through a cached executor per batch size (CUDA graph replays), noise inputs, dumps, splitting
// the batch when the device runs out of memory, and the `sg2 bench` timing hooks.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

#include "engine/backend.h"
#include "engine/cuda/cuda_raii.h"
#include "engine/cuda/device_caps.h"
#include "engine/cuda/device_info.h"
#include "engine/cuda/device_model.h"
#include "engine/cuda/executor.h"
#include "engine/cuda/options.h"
#include "engine/device_bench.h"
#include "engine/slot_ring.h"
#include "kernels/box_downscale.h"
#include "kernels/ref/parallel.h"
#include "kernels/to_uint8.h"
#include "sg2/error.h"
#include "sg2/npy.h"
#include "util/file_util.h"
#include "util/trace.h"

namespace sg2 {

namespace {

using namespace sg2::cuda;

constexpr size_t kWorkspaceLimit = size_t(1) << 30;  // per convolution
constexpr int kDefaultCachedBatches = 2;             // batch sizes whose executors stay (keep_batch_sizes raises it)

/// Device [N, H, W, C] in `dtype` -> host [N, C, H, W] float32.
Tensor download_nhwc(const void* x, DType dtype, int N, int H, int W, int C, cudaStream_t s) {
  const size_t count = size_t(N) * H * W * C;
  std::vector<float> nhwc(count);
  if (dtype == DType::f16) {
    std::vector<__half> h(count);
    SG2_CUDA_CHECK(cudaMemcpyAsync(h.data(), x, count * sizeof(__half), cudaMemcpyDeviceToHost, s));
    SG2_CUDA_CHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < count; ++i) nhwc[i] = __half2float(h[i]);
  } else {
    SG2_CUDA_CHECK(cudaMemcpyAsync(nhwc.data(), x, count * sizeof(float), cudaMemcpyDeviceToHost, s));
    SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  Tensor t({N, C, H, W});
  for (int n = 0; n < N; ++n)
    for (int p = 0; p < H * W; ++p)
      for (int c = 0; c < C; ++c) t[(int64_t(n) * C + c) * H * W + p] = nhwc[(size_t(n) * H * W + p) * C + c];
  return t;
}

Tensor download(const float* x, std::vector<int64_t> shape, cudaStream_t s) {
  Tensor t(std::move(shape));
  if (t.numel() > 0)
    SG2_CUDA_CHECK(cudaMemcpyAsync(t.data(), x, size_t(t.numel()) * sizeof(float), cudaMemcpyDeviceToHost, s));
  SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  return t;
}

void upload(void* dst, const float* src, size_t count, cudaStream_t s) {
  if (count) SG2_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyHostToDevice, s));
}

class CudaBackend final : public Backend, public DeviceBench {
 public:
  CudaBackend(const Model& model, int index, Precision precision, const CudaOptions& options)
      : model_(model), cfg_(model.config), index_(index), precision_(precision) {
    std::string why, hint;
    int raw_count = 0;
    if (cudaGetDeviceCount(&raw_count) != cudaSuccess) {
      cudaGetLastError();
      raw_count = 0;
    }
    // (counted, which makes every GPU's context, only to say why none is there)
    if (raw_count == 0 && cuda_device_count(&why, &hint) == 0)
      throw Error(ErrorKind::device, "cannot run on the GPU: " + why, hint);
    if (index < 0 || index >= raw_count)
      fail(ErrorKind::device, "CUDA device cuda:", index, " does not exist (this machine has ", raw_count,
           raw_count == 1 ? " GPU: cuda:0)" : " GPUs: cuda:0 to cuda:" + std::to_string(raw_count - 1) + ")");
    if (!device_usable(index, &why, &hint)) throw Error(ErrorKind::device, why, hint);
    detail::trace_step("cuda backend: driver up, device checked");
    DeviceGuard g(index_);
    caps_ = options.limit(DeviceCaps::probe(index_));
    stats_.limit = options.memory_limit_bytes;
    stream_ = std::make_unique<Stream>();
    map_stream_ = std::make_unique<Stream>();
    detail::trace_step("cuda backend: context and streams created");
    dev_ = std::make_unique<DeviceModel>(model_, precision_, caps_, options.batch_invariant, &stats_, stream_->get());
    if (dev_->uses_cudnn()) {  // batch invariance off: cuDNN's handle (invariant recipes never call it)
      cudnn_ = std::make_unique<CudnnHandle>(stream_->get());
      detail::trace_step("cuda backend: cuDNN handle created");
    }
    if (detail::trace_enabled()) {  // the upload's time, not the next step's
      SG2_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
      detail::trace_step("cuda backend: weights converted and uploaded");
    }
    for (const BlockData& b : dev_->blocks()) {
      if (b.conv0) noise_layers_.push_back(&*b.conv0);
      noise_layers_.push_back(&b.conv1);
    }
  }

  ~CudaBackend() override {
    try {
      DeviceGuard g(index_);
      executors_.clear();
      map_cache_.reset();
      dev_.reset();
      cudnn_.reset();
      map_stream_.reset();
      stream_.reset();
    } catch (...) {
    }
  }

  std::string name() const override { return "cuda:" + std::to_string(index_); }

  int64_t bytes_per_image() const override {
    // fp32 worst case: three activation buffers of the widest layer and two images per sample
    int64_t act = 0;
    for (int r : cfg_.block_resolutions())
      act = std::max<int64_t>(act, int64_t(cfg_.block_height(r) + 1) * (cfg_.block_width(r) + 1) * cfg_.channels_at(r));
    return 4 * (3 * act + 2 * int64_t(cfg_.img_channels) * cfg_.height() * cfg_.width());
  }
  int64_t memory_available() const override {
    size_t free_b = 0, total_b = 0;
    DeviceGuard g(index_);
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return static_cast<int64_t>(free_b);
  }
  std::string memory_name() const override { return "GPU memory of " + name(); }
  bool splits_on_out_of_memory() const override { return true; }
  int preferred_batch() const override {
    // a power of two up to 32 within half of the free memory (the rest: workspaces, cuDNN, graphs)
    const int64_t free_b = memory_available();
    if (free_b < 0) return 8;
    const int64_t n = std::max<int64_t>(1, (free_b / 2) / std::max<int64_t>(bytes_per_image(), 1));
    int b = 1;
    while (b * 2 <= n && b < 32) b *= 2;
    return b;
  }

  Tensor map(const Tensor& z, const Tensor& c, const Truncation& trunc, const std::string& dump_dir) override {
    DeviceGuard g(index_);
    try {
      return map_once(z, c, trunc, dump_dir);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::out_of_memory || executors_.empty()) throw;
      executors_.clear();  // the cached synthesis buffers made room short
      map_cache_.reset();
      return map_once(z, c, trunc, dump_dir);
    }
  }

  /// The mapping's buffers for batch N, kept between calls: allocating and freeing them on every
  /// call made each batch wait for the whole device (cudaFree synchronizes it), the previous
  /// batch's synthesis and copies included.
  struct MapCache {
    MapCache(const DeviceModel& m, int n, MemoryStats* stats)
        : N(n), mb(m, n, stats), ws(size_t(n) * m.config().num_ws * m.config().w_dim * sizeof(float), stats) {}
    int N;
    MappingBuffers mb;
    DeviceBuffer ws;
  };

  Tensor map_once(const Tensor& z, const Tensor& c, const Truncation& trunc, const std::string& dump_dir) {
    const int N = static_cast<int>(z.dim(0));
    if (N == 0) return Tensor({0, cfg_.num_ws, cfg_.w_dim});
    if (!dump_dir.empty()) detail::make_dirs(dump_dir);
    // Its own stream: the next batch's mapping runs beside this one's synthesis (stream_), which
    // it never touches (the ws come back to the host).
    cudaStream_t s = map_stream_->get();
    if (!map_cache_ || map_cache_->N != N) {
      map_cache_.reset();
      map_cache_ = std::make_unique<MapCache>(*dev_, N, &stats_);
    }
    MappingBuffers& mb = map_cache_->mb;
    DeviceBuffer& ws = map_cache_->ws;
    if (cfg_.z_dim > 0) upload(mb.z.get(), z.data(), size_t(z.numel()), s);
    if (cfg_.c_dim > 0) upload(mb.c.get(), c.data(), size_t(c.numel()), s);
    const int cutoff = trunc.cutoff ? std::min(*trunc.cutoff, cfg_.num_ws) : cfg_.num_ws;
    std::function<void(int, const float*, int)> after;
    if (!dump_dir.empty())
      after = [&](int i, const float* y, int width) {
        write_npy(dump_dir + "/mapping_fc" + std::to_string(i) + ".npy", download(y, {N, width}, s));
      };
    run_mapping(*dev_, mb, trunc.psi, cutoff, ws.as<float>(), s, after);
    return download(ws.as<float>(), {N, cfg_.num_ws, cfg_.w_dim}, s);
  }

  Tensor synthesize(const Tensor& ws, const NoiseSpec& noise, const std::string& dump_dir) override {
    DeviceGuard g(index_);
    const int N = static_cast<int>(ws.dim(0));
    if (N == 0) return Tensor({0, cfg_.img_channels, cfg_.height(), cfg_.width()});
    if (!dump_dir.empty()) detail::make_dirs(dump_dir);
    std::vector<Tensor> parts;
    int b = 0;
    while (b < N) {
      const int n = std::min(N - b, max_ok_batch_);
      try {
        parts.push_back(run_chunk(ws, noise, b, n, b == 0 ? dump_dir : std::string()));
        b += n;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::out_of_memory) throw;
        cudaGetLastError();
        if (!executors_.empty()) {  // free the other batch sizes' buffers, then try again
          executors_.clear();
          map_cache_.reset();
          continue;
        }
        if (n == 1)
          fail_hint(ErrorKind::out_of_memory, "free memory on the GPU (other processes hold it?)", "the GPU ", name(),
                    " cannot hold even one ", cfg_.width(), "x", cfg_.height(), " image of this model: ", e.message());
        max_ok_batch_ = n / 2;  // split the batch and go on
      }
    }
    return parts.size() == 1 ? std::move(parts[0]) : concat0(parts);
  }

  DeviceBench* device_bench() override { return this; }

  bool keeps_state_per_batch_size() const override { return true; }
  void keep_batch_sizes(int n) override { cached_batches_ = std::max(cached_batches_, std::min(n, 64)); }

  bool device_memory(DeviceMemory* out) override {
    DeviceGuard g(index_);
    size_t free_b = 0, total_b = 0;
    SG2_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    out->sg2_bytes = stats_.current;
    out->peak_bytes = stats_.peak;
    out->free_bytes = free_b;
    out->total_bytes = total_b;
    return true;
  }

  // --- DeviceBench ---------------------------------------------------------------------------

  BenchResult time_generate(int batch, int warmup, int iters, uint64_t seed) override {
    DeviceGuard g(index_);
    cudaStream_t s = stream_->get();
    release_batches();
    SG2_CUDA_CHECK(cudaDeviceSynchronize());
    size_t free0 = 0, free1 = 0, total = 0;
    SG2_CUDA_CHECK(cudaMemGetInfo(&free0, &total));
    stats_.reset_peak();
    BenchResult r;
    r.batch = batch;
    Executor& ex = executor(batch);
    bench_inputs(ex, batch, seed);
    const float* img = ex.generate(s);  // captures the graph (after one eager run)
    for (int i = 0; i < warmup; ++i) ex.generate(s);
    SG2_CUDA_CHECK(cudaStreamSynchronize(s));
    SG2_CUDA_CHECK(cudaMemGetInfo(&free1, &total));
    std::vector<Event> start(static_cast<size_t>(iters)), stop(static_cast<size_t>(iters));
    for (int i = 0; i < iters; ++i) {
      start[size_t(i)].record(s);
      ex.generate(s);
      stop[size_t(i)].record(s);
    }
    SG2_CUDA_CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < iters; ++i) r.ms.push_back(stop[size_t(i)].since(start[size_t(i)]));
    const int check = std::min(batch, 4);
    const Tensor out = download(img, {check, cfg_.img_channels, cfg_.height(), cfg_.width()}, s);
    r.output_finite = true;
    double sum = 0;
    for (float v : out.vec()) {
      if (!std::isfinite(v)) r.output_finite = false;
      sum += std::fabs(double(v));
    }
    r.output_mean_abs = out.numel() ? sum / double(out.numel()) : 0.0;
    r.model_bytes = dev_->arena_bytes();
    r.batch_bytes = ex.bytes();
    r.workspace_bytes = ex.workspace_bytes();
    r.peak_bytes = stats_.peak;
    r.meminfo_delta = free0 > free1 ? free0 - free1 : 0;
    r.conv_algorithms = ex.conv_descriptions();
    r.graph = ex.uses_graphs();
    r.graph_error = ex.capture_error();
    return r;
  }

  std::vector<std::pair<std::string, float>> profile(int batch, uint64_t seed) override {
    DeviceGuard g(index_);
    Executor& ex = executor(batch);
    bench_inputs(ex, batch, seed);
    return ex.profile(stream_->get());
  }

  void release_batches() override {
    DeviceGuard g(index_);
    executors_.clear();
    map_cache_.reset();
  }

  std::string device_description() const override {
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    return device_name(index_) + ", cuDNN " + std::to_string(cudnnGetVersion()) + ", CUDA runtime " +
           std::to_string(rt) + ", built for " + built_architectures();
  }

 private:
  Executor& executor(int N) {
    auto it = executors_.find(N);
    if (it == executors_.end()) {
      while (static_cast<int>(executors_.size()) >= cached_batches_) {
        auto oldest = std::min_element(executors_.begin(), executors_.end(),
                                       [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
        executors_.erase(oldest);
      }
      Cached c;
      c.ex = std::make_unique<Executor>(*dev_, N, cudnn_ ? cudnn_->get() : nullptr, caps_, &stats_, stream_->get(),
                                        kWorkspaceLimit);
      it = executors_.emplace(N, std::move(c)).first;
      detail::trace_step("cuda backend: a batch size's buffers and kernels chosen");
    }
    it->second.used = ++use_counter_;
    return *it->second.ex;
  }

  /// Benchmark inputs: z of seeds seed .. seed + batch - 1 (numpy RandomState), classes cycled.
  void bench_inputs(Executor& ex, int batch, uint64_t seed) {
    cudaStream_t s = stream_->get();
    std::vector<uint32_t> seeds;
    for (int n = 0; n < batch; ++n) seeds.push_back(static_cast<uint32_t>(seed + uint64_t(n)));
    if (cfg_.z_dim > 0) {
      const Tensor z = z_from_seeds(seeds, cfg_.z_dim);
      upload(ex.mapping().z.get(), z.data(), size_t(z.numel()), s);
    }
    if (cfg_.c_dim > 0) {
      std::vector<int> classes;
      for (int n = 0; n < batch; ++n) classes.push_back(n % cfg_.c_dim);
      const Tensor c = one_hot(classes, cfg_.c_dim);
      upload(ex.mapping().c.get(), c.data(), size_t(c.numel()), s);
    }
    SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  /// Uploads the noise of rows [b, b + n) for executor `ex` and says which program runs.
  NoiseKind prepare_noise(Executor& ex, const NoiseSpec& noise, int b, int n) {
    cudaStream_t s = stream_->get();
    NoiseKind kind = NoiseKind::constant;
    if (noise.mode == NoiseMode::none || !cfg_.synthesis.use_noise)
      kind = NoiseKind::none;
    else if (noise.mode == NoiseMode::random || !noise.maps.empty())
      kind = NoiseKind::per_sample;
    if (kind == NoiseKind::per_sample) {
      const int P = dev_->noise_floats_per_sample();
      std::vector<float> host(size_t(n) * P);
      const int L = static_cast<int>(noise_layers_.size());
      ref::parallel_for(int64_t(n) * L, [&](int64_t job) {
        const int i = static_cast<int>(job / L);
        const ConvLayer& c = *noise_layers_[size_t(job % L)];
        const int li = c.plan->noise_index;
        if (li < 0) return;
        const int64_t rr = int64_t(c.plan->height) * c.plan->width;
        float* dst = host.data() + size_t(i) * P + c.noise_offset;
        if (noise.mode == NoiseMode::random) {
          const uint64_t key = noise.keys.empty() ? uint64_t(b + i) : noise.keys[size_t(b + i)];
          const Tensor t = random_noise_map(noise.seed, key, li, c.plan->height, c.plan->width);
          std::copy(t.data(), t.data() + rr, dst);
        } else {
          const Tensor& t = noise.maps[size_t(b + i)][size_t(li)];
          std::copy(t.data(), t.data() + rr, dst);
        }
      });
      upload(ex.noise_maps(), host.data(), host.size(), s);
    }
    return kind;
  }

  /// Rows [b, b + n) of ws through synthesis; returns the device image [n, C, H, W] (the
  /// executor's buffer: valid until its next run).
  const float* synthesize_rows(Executor& ex, const Tensor& ws, const NoiseSpec& noise, int b, int n,
                               const std::string& dump_dir) {
    cudaStream_t s = stream_->get();
    const size_t row = size_t(cfg_.num_ws) * cfg_.w_dim;
    upload(ex.ws(), ws.data() + size_t(b) * row, size_t(n) * row, s);
    const NoiseKind kind = prepare_noise(ex, noise, b, n);
    if (dump_dir.empty()) return ex.synthesize(kind, s);
    BlockDumpFn dump = [&](int res, const void* x, DType dt, int C, const float* im) {
      const std::string tag = dump_dir + "/b" + std::to_string(res);
      const int h = cfg_.block_height(res), w = cfg_.block_width(res);
      if (x) write_npy(tag + "_x.npy", download_nhwc(x, dt, n, h, w, C, s));
      if (im) write_npy(tag + "_img.npy", download(im, {n, cfg_.img_channels, h, w}, s));
    };
    return ex.synthesize_eager(kind, s, dump);
  }

  /// Rows [b, b + n) of ws through synthesis, downloaded.
  Tensor run_chunk(const Tensor& ws, const NoiseSpec& noise, int b, int n, const std::string& dump_dir) {
    Executor& ex = executor(n);
    const float* img = synthesize_rows(ex, ws, noise, b, n, dump_dir);
    return download(img, {n, cfg_.img_channels, cfg_.height(), cfg_.width()}, stream_->get());
  }

  /// The CUDA pipe (batch_pipe.h): per slot a device uint8 (and float) buffer and pinned host
  /// copies. submit() replays the synthesis graph and the uint8 conversion on the backend's
  /// stream and queues the device-to-host copies on the pipe's own stream behind an event, so the
  /// next batch computes while this one is copied and consumed.
  class Pipe final : public BatchPipe {
   public:
    Pipe(CudaBackend& be, int batch, PipeOutputs out, int slots) : be_(be), batch_(batch), out_(out), ring_(slots) {
      DeviceGuard g(be_.index_);
      const int C = be_.cfg_.img_channels, H = be_.cfg_.height(), W = be_.cfg_.width();
      per_image_ = size_t(C) * H * W;
      const int f = std::max(1, out_.downscale);
      per_u8_ = size_t(C) * (H / f) * (W / f);
      // --size: the full-size uint8 images of a batch, downscaled into the slot (stream-ordered, so one for all slots)
      if (out_.u8 && f > 1) full_u8_ = DeviceBuffer(size_t(batch) * per_image_, &be_.stats_);
      copy_stream_ = std::make_unique<Stream>();
      if (out_.styles) {  // every layer's columns of the executor's padded styles, packed (sg2/styles.h order)
        for (const BlockData& bd : be_.dev_->blocks()) {
          if (bd.conv0) style_cols_.push_back({bd.conv0->s_col, style_dims_, bd.conv0->plan->in_channels});
          if (bd.conv0) style_dims_ += bd.conv0->plan->in_channels;
          style_cols_.push_back({bd.conv1.s_col, style_dims_, bd.conv1.plan->in_channels});
          style_dims_ += bd.conv1.plan->in_channels;
          if (bd.torgb) style_cols_.push_back({bd.torgb->s_col, style_dims_, bd.torgb->plan->in_channels});
          if (bd.torgb) style_dims_ += bd.torgb->plan->in_channels;
        }
      }
      for (int i = 0; i < slots; ++i) {
        Slot sl;
        if (out_.styles) {
          sl.dev_styles = DeviceBuffer(size_t(batch) * style_dims_ * sizeof(float), &be_.stats_);
          sl.host_styles = PinnedBuffer(size_t(batch) * style_dims_ * sizeof(float));
        }
        if (out_.u8) {
          sl.dev_u8 = DeviceBuffer(size_t(batch) * per_u8_, &be_.stats_);
          sl.host_u8 = PinnedBuffer(size_t(batch) * per_u8_);
        }
        if (out_.img) {
          sl.dev_img = DeviceBuffer(size_t(batch) * per_image_ * sizeof(float), &be_.stats_);
          sl.host_img = PinnedBuffer(size_t(batch) * per_image_ * sizeof(float));
        }
        slots_.push_back(std::move(sl));
      }
    }
    ~Pipe() override {
      try {
        DeviceGuard g(be_.index_);
        copy_stream_->sync();
      } catch (...) {
      }
    }

    int slots() const override { return ring_.size(); }

    int submit(const Tensor& ws, const NoiseSpec& noise) override {
      const int n = static_cast<int>(ws.dim(0));
      if (n < 1 || n > batch_) fail(ErrorKind::internal, "pipe: batch of ", n, " for a pipe of ", batch_);
      const int id = ring_.acquire();
      try {
        DeviceGuard g(be_.index_);
        Slot& sl = slots_[size_t(id)];
        cudaStream_t s = be_.stream_->get();
        const int C = be_.cfg_.img_channels, H = be_.cfg_.height(), W = be_.cfg_.width();
        int b = 0;
        while (b < n) {  // in pieces the device can hold (halved on out-of-memory, as synthesize)
          const int k = std::min(n - b, be_.max_ok_batch_);
          try {
            Executor& ex = be_.executor(k);
            const float* img = be_.synthesize_rows(ex, ws, noise, b, k, std::string());
            if (out_.u8 && !full_u8_)
              images_to_uint8(img, k, C, H, W, sl.dev_u8.as<uint8_t>() + size_t(b) * per_u8_, s);
            if (out_.u8 && full_u8_) {
              images_to_uint8(img, k, C, H, W, full_u8_.as<uint8_t>(), s);
              box_downscale_u8(full_u8_.as<uint8_t>(), k, H, W, C, out_.downscale,
                               sl.dev_u8.as<uint8_t>() + size_t(b) * per_u8_, s);
            }
            if (out_.img)
              SG2_CUDA_CHECK(cudaMemcpyAsync(sl.dev_img.as<float>() + size_t(b) * per_image_, img,
                                             size_t(k) * per_image_ * sizeof(float), cudaMemcpyDeviceToDevice, s));
            if (out_.styles) {
              const size_t S = size_t(be_.dev_->s_cols()) * sizeof(float), P = size_t(style_dims_) * sizeof(float);
              for (const StyleCols& c : style_cols_)
                SG2_CUDA_CHECK(cudaMemcpy2DAsync(sl.dev_styles.as<float>() + size_t(b) * style_dims_ + c.dst, P,
                                                 ex.styles() + c.src, S, size_t(c.dims) * sizeof(float), size_t(k),
                                                 cudaMemcpyDeviceToDevice, s));
            }
            b += k;
          } catch (const Error& e) {
            if (e.kind() != ErrorKind::out_of_memory) throw;
            cudaGetLastError();
            SG2_CUDA_CHECK(cudaStreamSynchronize(s));
            if (!be_.executors_.empty()) {
              be_.executors_.clear();
              be_.map_cache_.reset();
              continue;
            }
            if (k == 1)
              fail_hint(ErrorKind::out_of_memory, "free memory on the GPU (other processes hold it?)", "the GPU ",
                        be_.name(), " cannot hold even one ", be_.cfg_.width(), "x", be_.cfg_.height(),
                        " image of this model: ", e.message());
            be_.max_ok_batch_ = k / 2;
          }
        }
        sl.count = n;
        sl.computed.record(s);
        cudaStream_t cs = copy_stream_->get();
        SG2_CUDA_CHECK(cudaStreamWaitEvent(cs, sl.computed.get(), 0));
        if (out_.u8)
          SG2_CUDA_CHECK(
              cudaMemcpyAsync(sl.host_u8.get(), sl.dev_u8.get(), size_t(n) * per_u8_, cudaMemcpyDeviceToHost, cs));
        if (out_.img)
          SG2_CUDA_CHECK(cudaMemcpyAsync(sl.host_img.get(), sl.dev_img.get(), size_t(n) * per_image_ * sizeof(float),
                                         cudaMemcpyDeviceToHost, cs));
        if (out_.styles)
          SG2_CUDA_CHECK(cudaMemcpyAsync(sl.host_styles.get(), sl.dev_styles.get(),
                                         size_t(n) * style_dims_ * sizeof(float), cudaMemcpyDeviceToHost, cs));
        sl.copied.record(cs);
        return id;
      } catch (...) {
        ring_.release(id);
        throw;
      }
    }

    HostBatchView wait(int id) override {
      Slot& sl = slots_.at(size_t(id));
      {
        DeviceGuard g(be_.index_);
        SG2_CUDA_CHECK(cudaEventSynchronize(sl.copied.get()));
      }
      HostBatchView v;
      v.count = sl.count;
      v.u8 = out_.u8 ? static_cast<const uint8_t*>(sl.host_u8.get()) : nullptr;
      v.img = out_.img ? static_cast<const float*>(sl.host_img.get()) : nullptr;
      v.styles = out_.styles ? static_cast<const float*>(sl.host_styles.get()) : nullptr;
      return v;
    }

    void release(int id) noexcept override { ring_.release(id); }
    void cancel() noexcept override { ring_.cancel(); }
    bool has_free_slot() override { return ring_.any_free(); }

   private:
    struct Slot {
      int count = 0;
      DeviceBuffer dev_u8, dev_img, dev_styles;
      PinnedBuffer host_u8, host_img, host_styles;
      Event computed, copied;
    };
    struct StyleCols {
      int src;   // first column in the executor's styles
      int dst;   // first column in an image's packed styles
      int dims;  // the layer's width
    };
    std::vector<StyleCols> style_cols_;
    int style_dims_ = 0;
    CudaBackend& be_;
    int batch_;
    PipeOutputs out_;
    size_t per_image_ = 0, per_u8_ = 0;  // floats / uint8 bytes of one image (uint8: after --size)
    DeviceBuffer full_u8_;
    SlotRing ring_;
    std::unique_ptr<Stream> copy_stream_;
    std::vector<Slot> slots_;
  };

  std::unique_ptr<BatchPipe> make_pipe(int batch, PipeOutputs out, int slots) override {
    return std::make_unique<Pipe>(*this, batch, out, slots);
  }

  struct Cached {
    std::unique_ptr<Executor> ex;
    uint64_t used = 0;
  };

  const Model& model_;
  const ModelConfig& cfg_;
  int index_;
  Precision precision_;
  DeviceCaps caps_;
  MemoryStats stats_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Stream> map_stream_;  // map(): the mapping network of stream jobs
  std::unique_ptr<MapCache> map_cache_;
  std::unique_ptr<CudnnHandle> cudnn_;
  std::unique_ptr<DeviceModel> dev_;
  std::map<int, Cached> executors_;
  std::vector<const ConvLayer*> noise_layers_;
  uint64_t use_counter_ = 0;
  int max_ok_batch_ = INT_MAX;
  int cached_batches_ = kDefaultCachedBatches;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const Model& model, int index, Precision precision, bool batch_invariant) {
  cuda::CudaOptions o;
  o.batch_invariant = batch_invariant;
  return std::make_unique<CudaBackend>(model, index, precision, o);
}

std::unique_ptr<Backend> cuda::make_cuda_backend(const Model& model, int index, Precision precision,
                                                 const CudaOptions& options) {
  return std::make_unique<CudaBackend>(model, index, precision, options);
}

}  // namespace sg2
