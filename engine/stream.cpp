// sg2: streaming generation (sg2/stream.h) — one worker thread per generator takes the next batch,
// maps it, and submits it to its backend's pipe (batch_pipe.h); finished batches are handed to the
// caller's thread, which calls the sink in index order.
#include "sg2/stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "engine/batch_pipe.h"
#include "engine/generator_access.h"
#include "sg2/error.h"
#include "sg2/styles.h"

namespace sg2 {

Image8 StreamImage::image8() const {
  if (u8 == nullptr) fail(ErrorKind::invalid_argument, "StreamImage::image8: the stream was asked for no uint8 images");
  Image8 im;
  im.width = width;
  im.height = height;
  im.channels = channels;
  im.pixels.assign(u8, u8 + size_t(width) * height * channels);
  return im;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// A finished batch's memory (StreamImage::hold): its pipe slot, given back when the last holder
/// lets go, and its ws.
struct SlotHold {
  SlotHold(std::shared_ptr<BatchPipe> p, int i, Tensor w, Tensor zz)
      : pipe(std::move(p)), id(i), ws(std::move(w)), z(std::move(zz)) {}
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;
  ~SlotHold() { pipe->release(id); }
  std::shared_ptr<BatchPipe> pipe;
  int id;
  Tensor ws;  // [count, num_ws, w_dim] when asked for
  Tensor z;   // [count, z_dim] when asked for (seed jobs)
};

/// A batch on the host, waiting for the caller's thread.
struct Finished {
  int count = 0;
  HostBatchView view;
  std::shared_ptr<SlotHold> hold;
};

void validate_job(const ImageJob& job, const ModelConfig& cfg) {
  const bool from_ws = !job.ws.empty() || job.ws.ndim() > 0;
  if (from_ws == !job.seeds.empty())
    fail(ErrorKind::invalid_argument,
         from_ws ? "give either seeds or ws rows, not both" : "the job has no seeds and no ws rows");
  if (from_ws) {
    if (job.ws.ndim() != 3 || job.ws.dim(1) != cfg.num_ws || job.ws.dim(2) != cfg.w_dim)
      fail(ErrorKind::invalid_argument, "ws must be [N, ", cfg.num_ws, ", ", cfg.w_dim, "] for this model, got ",
           job.ws.shape_str());
    if (job.tf_seed_mode) fail(ErrorKind::invalid_argument, "the TF seed mode needs seeds, not ws rows");
  }
  if (job.ws_first_row < 0 || job.ws_first_row > (int64_t(1) << 50))
    fail(ErrorKind::invalid_argument, "ws_first_row ", job.ws_first_row, " is out of range [0, 2^50]");
  if (cfg.c_dim > 0 && !from_ws && (job.class_idx < 0 || job.class_idx >= cfg.c_dim))
    fail(ErrorKind::invalid_argument, "this model is conditional (", cfg.c_dim,
         " classes): every image needs a class in [0, ", cfg.c_dim - 1, "], got ", job.class_idx);
  if (job.tf_seed_mode && job.noise_mode != NoiseMode::const_)
    fail(ErrorKind::invalid_argument, "the TF seed mode defines the const noise maps: use noise mode const");
  check_edits(job.edits, cfg.num_ws, cfg.w_dim);
}

bool same_config(const ModelConfig& a, const ModelConfig& b) { return config_to_json(a) == config_to_json(b); }

}  // namespace

StreamStats generate_stream(const std::vector<Generator*>& gens, const ImageJob& job, const StreamOptions& options,
                            const std::function<void(const StreamImage&)>& sink) {
  const Clock::time_point start = Clock::now();
  if (gens.empty()) fail(ErrorKind::invalid_argument, "generate_stream: no generators");
  for (Generator* g : gens)
    if (g == nullptr) fail(ErrorKind::invalid_argument, "generate_stream: a null generator");
  const ModelConfig& cfg = gens[0]->config();
  for (Generator* g : gens)
    if (!same_config(g->config(), cfg) || g->precision() != gens[0]->precision())
      fail(ErrorKind::invalid_argument, "generate_stream: the generators hold different models or precisions");
  validate_job(job, cfg);
  if (options.batch < 0) fail(ErrorKind::invalid_argument, "generate_stream: batch ", options.batch, " must be >= 0");
  if (options.batches_in_flight < 2)
    fail(ErrorKind::invalid_argument, "generate_stream: batches_in_flight must be >= 2, got ",
         options.batches_in_flight);
  if (!options.uint8 && !options.float32 && !options.ws)
    fail(ErrorKind::invalid_argument, "generate_stream: ask for at least one of uint8, float32, ws");
  if (options.downscale < 1 || cfg.height() % options.downscale != 0 || cfg.width() % options.downscale != 0)
    fail(ErrorKind::invalid_argument, "generate_stream: downscale ", options.downscale, " is not a divisor of the ",
         cfg.width(), "x", cfg.height(), " resolution");
  const bool from_ws = job.seeds.empty();
  for (float v : job.ws.vec())
    if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "ws contains NaN or infinite values");
  if (!std::isfinite(job.truncation.psi))
    fail(ErrorKind::invalid_argument, "truncation psi must be finite, got ", job.truncation.psi);
  const int64_t total = from_ws ? job.ws.dim(0) : static_cast<int64_t>(job.seeds.size());
  int batch = options.batch;
  if (batch == 0) {
    batch = gens[0]->max_batch();
    for (Generator* g : gens) batch = std::min(batch, g->max_batch());
  }
  batch = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(batch, std::max<int64_t>(total, 1))));
  const int64_t batches = (total + batch - 1) / batch;
  const int H = cfg.height(), W = cfg.width(), C = cfg.img_channels;
  const size_t row = size_t(cfg.num_ws) * cfg.w_dim;
  const size_t per_image = size_t(C) * H * W;
  const int f8 = std::max(1, options.downscale);  // the uint8 images' downscale factor
  const size_t per_u8 = size_t(C) * (H / f8) * (W / f8);
  const Tensor label = cfg.c_dim > 0 && !from_ws ? one_hot({job.class_idx}, cfg.c_dim) : Tensor();

  // Shared between the workers and the caller's thread.
  std::mutex mu;
  std::condition_variable cv;
  std::map<int64_t, Finished> done;  // by batch index
  std::exception_ptr error;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> next{0};
  std::vector<std::shared_ptr<BatchPipe>> pipes(gens.size());
  std::mutex stats_mu;
  StreamStats stats;

  auto fail_stream = [&](std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = e;
      stop = true;
    }
    cv.notify_all();
    for (auto& p : pipes)
      if (p) p->cancel();
  };

  PipeOutputs outs;
  outs.u8 = options.uint8;
  outs.img = options.float32;
  outs.styles = options.styles;
  outs.downscale = options.downscale;
  const int64_t sdims = options.styles ? style_dims(cfg) : 0;
  outs.nonfinite_source = from_ws                              ? NonfiniteSource::given_ws
                          : !job.edits.empty()                 ? NonfiniteSource::edited
                          : std::fabs(job.truncation.psi) <= 1 ? NonfiniteSource::mapping
                                                               : NonfiniteSource::truncation;
  // The pipes first (device memory, pinned buffers), on this thread, so that a failure is reported
  // before any work starts.
  for (size_t g = 0; g < gens.size(); ++g)
    pipes[g] = std::shared_ptr<BatchPipe>(
        GeneratorAccess::backend(*gens[g]).make_pipe(batch, outs, options.batches_in_flight).release());

  auto worker = [&](size_t g) {
    Generator& gen = *gens[g];
    BatchPipe& pipe = *pipes[g];
    double prepare_s = 0, submit_s = 0, wait_s = 0;
    struct Pending {
      int64_t index;
      int id;
      int count;
      Tensor ws;
      Tensor z;
    };
    std::vector<Pending> pending;  // at most one batch in flight on the device besides the newest
    auto publish = [&](Pending& p) {
      const Clock::time_point t = Clock::now();
      Finished f;
      f.view = pipe.wait(p.id);
      wait_s += seconds_since(t);
      f.count = p.count;
      f.hold = std::make_shared<SlotHold>(pipes[g], p.id, std::move(p.ws), std::move(p.z));
      {
        std::lock_guard<std::mutex> lock(mu);
        done.emplace(p.index, std::move(f));
      }
      cv.notify_all();
    };
    try {
      while (!stop) {
        const int64_t b = next.fetch_add(1);
        if (b >= batches) break;
        const int64_t first = b * batch;
        const int n = static_cast<int>(std::min<int64_t>(batch, total - first));
        Clock::time_point t = Clock::now();
        NoiseSpec noise;
        noise.mode = job.noise_mode;
        noise.seed = job.noise_seed;
        Tensor ws, z;
        if (from_ws) {
          ws = job.ws.slice0(first, first + n);
          if (noise.mode == NoiseMode::random)
            for (int i = 0; i < n; ++i) noise.keys.push_back(static_cast<uint64_t>(job.ws_first_row + first + i));
        } else {
          const std::vector<uint32_t> seeds(job.seeds.begin() + first, job.seeds.begin() + first + n);
          if (job.tf_seed_mode) {
            std::vector<Tensor> zs;
            for (uint32_t s : seeds) {
              TfSeedInputs in = tf_seed_inputs(s, cfg);
              zs.push_back(std::move(in.z));
              noise.maps.push_back(std::move(in.noise_maps));
            }
            z = concat0(zs);
          } else {
            z = z_from_seeds(seeds, cfg.z_dim);
          }
          Tensor c;
          if (cfg.c_dim > 0) {
            c = Tensor({n, cfg.c_dim});
            for (int i = 0; i < n; ++i)
              std::copy(label.data(), label.data() + cfg.c_dim, c.data() + int64_t(i) * cfg.c_dim);
          }
          ws = gen.map(z, c, job.truncation);
          if (noise.mode == NoiseMode::random)
            for (uint32_t s : seeds) noise.keys.push_back(s);
        }
        apply_edits(ws, job.edits);  // after truncation (slice0 copied the given rows)
        prepare_s += seconds_since(t);
        // Never wait for a slot while holding a batch the caller may be waiting for: the caller
        // might hold the slot we wait for until it gets that batch.
        if (!pipe.has_free_slot()) {
          for (Pending& p : pending) publish(p);
          pending.clear();
        }
        t = Clock::now();
        const int id = pipe.submit(ws, noise);
        submit_s += seconds_since(t);
        pending.push_back(
            Pending{b, id, n, options.ws ? std::move(ws) : Tensor(), options.z ? std::move(z) : Tensor()});
        if (pending.size() > 1) {  // the previous batch: its copies overlap this one's compute
          publish(pending.front());
          pending.erase(pending.begin());
        }
      }
      for (Pending& p : pending) publish(p);
      pending.clear();
    } catch (...) {
      for (Pending& p : pending) pipe.release(p.id);
      fail_stream(std::current_exception());
    }
    std::lock_guard<std::mutex> lock(stats_mu);
    stats.prepare_s += prepare_s;
    stats.submit_s += submit_s;
    stats.wait_s += wait_s;
  };

  std::vector<std::thread> threads;
  try {
    for (size_t g = 0; g < gens.size(); ++g) threads.emplace_back(worker, g);
  } catch (...) {
    fail_stream(std::current_exception());
  }
  double sink_s = 0;
  int64_t delivered = 0;
  for (int64_t b = 0; b < batches; ++b) {
    Finished f;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return error != nullptr || done.count(b) > 0; });
      if (error) break;
      f = std::move(done.at(b));
      done.erase(b);
    }
    const Clock::time_point t = Clock::now();
    try {
      for (int i = 0; i < f.count; ++i) {
        StreamImage im;
        im.index = b * batch + i;
        im.key = from_ws ? static_cast<uint64_t>(job.ws_first_row + im.index) : job.seeds[size_t(im.index)];
        im.width = W / f8;
        im.height = H / f8;
        im.channels = C;
        im.u8 = f.view.u8 ? f.view.u8 + size_t(i) * per_u8 : nullptr;
        im.img = f.view.img ? f.view.img + size_t(i) * per_image : nullptr;
        im.ws = options.ws ? f.hold->ws.data() + size_t(i) * row : nullptr;
        im.z = options.z && !from_ws && cfg.z_dim > 0 ? f.hold->z.data() + size_t(i) * size_t(cfg.z_dim) : nullptr;
        im.styles = f.view.styles ? f.view.styles + size_t(i) * size_t(sdims) : nullptr;
        im.hold = f.hold;
        sink(im);
        ++delivered;
      }
    } catch (...) {
      sink_s += seconds_since(t);
      fail_stream(std::current_exception());
      break;
    }
    sink_s += seconds_since(t);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    done.clear();  // gives their slots back, so that no worker waits for one
  }
  cv.notify_all();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  stats.sink_s = sink_s;
  stats.images = delivered;
  stats.wall_s = seconds_since(start);
  return stats;
}

}  // namespace sg2
