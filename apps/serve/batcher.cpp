// sg2 serve: dynamic batching (batcher.h).
#include "serve/batcher.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "sg2/error.h"
#include "sg2/image_pipe.h"
#include "style_mix.h"

namespace sg2::cli::serve {

struct Batcher::Worker {
  Generator* gen = nullptr;
  std::unique_ptr<ImagePipe> pipe;
  std::string device;
  bool ready = false;
  std::exception_ptr error;
  std::mutex hold_mu;
  std::condition_variable hold_cv;
  int holds = 0;  // slots whose images requests still hold
  bool memory_readable = true;
  Clock::time_point memory_read;
};

namespace {

/// A pipe slot, given back when the last request holding its images lets go (from any thread).
struct SlotRelease {
  SlotRelease(ImagePipe* p, int i, std::mutex* m, std::condition_variable* cv, int* holds)
      : pipe(p), id(i), mu(m), cv(cv), holds(holds) {
    std::lock_guard<std::mutex> lock(*mu);
    ++*holds;
  }
  ~SlotRelease() {
    pipe->release(id);
    {
      std::lock_guard<std::mutex> lock(*mu);
      --*holds;
    }
    cv->notify_all();
  }
  SlotRelease(const SlotRelease&) = delete;
  SlotRelease& operator=(const SlotRelease&) = delete;
  ImagePipe* pipe;
  int id;
  std::mutex* mu;
  std::condition_variable* cv;
  int* holds;
};

/// Whether image requests a and b can share a batch: the engine applies the noise mode, and for random
/// noise its seed, per batch.
bool same_noise(const ImageRequest& a, const ImageRequest& b) {
  if (a.noise_mode != b.noise_mode) return false;
  return a.noise_mode != NoiseMode::random || a.noise_seed == b.noise_seed;
}

/// Picks a batch from `queue` in order: the oldest request, then every request that can join it (a
/// mapping-only request joins any batch; an image request one whose images have its noise), up to
/// `max`. take(it) is called for each pick.
template <typename Queue, typename Take>
int pick(Queue& queue, int max, Take&& take) {
  const ImageRequest* lead = nullptr;  // the first image request picked
  int n = 0;
  for (auto it = queue.begin(); it != queue.end() && n < max;) {
    const ImageRequest& r = it->request;
    if (r.ws_only || lead == nullptr || same_noise(*lead, r)) {
      if (!r.ws_only && lead == nullptr) lead = &r;
      ++n;
      if (take(it)) continue;  // erased: `it` is the next one
    }
    ++it;
  }
  return n;
}

void answer(Job& job, JobResult&& r) {
  if (!job.done) return;
  auto done = std::move(job.done);
  job.done = nullptr;
  done(std::move(r));
}

int status_of(const Error& e) { return e.kind() == ErrorKind::invalid_argument ? 400 : 500; }

/// Mapping groups: the engine applies class and truncation per call.
using GroupKey = std::tuple<int, uint32_t, int>;  // class, psi's bits, cutoff (-1: all rows)
GroupKey group_of(int class_idx, const Truncation& t) {
  uint32_t bits = 0;
  std::memcpy(&bits, &t.psi, sizeof bits);
  return {class_idx, bits, t.cutoff ? *t.cutoff : -1};
}

/// The image jobs' ws [n, num_ws, w_dim] and noise, in job order; answers (and removes) the
/// ws-only jobs. Jobs stay in `jobs` until answered, so that a failure can answer the rest.
struct Prepared {
  Tensor ws;
  NoiseSpec noise;
};

Prepared prepare(Generator& gen, std::vector<Job>& jobs, const std::string& device) {
  const ModelConfig& cfg = gen.config();
  const int64_t row = int64_t(cfg.num_ws) * cfg.w_dim;
  // w[i][0]: job i's seed (or row seed) mapped; w[i][1]: a mix's column seed.
  std::vector<std::vector<std::vector<float>>> w(jobs.size(), std::vector<std::vector<float>>(2));
  std::map<GroupKey, std::vector<std::pair<size_t, int>>> groups;
  std::map<GroupKey, Truncation> truncs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const ImageRequest& r = jobs[i].request;
    if (r.latent == Latent::ws) continue;
    const Truncation t = r.latent == Latent::mix ? Truncation{} : r.truncation;  // mix: psi 1, then the plain formula
    const GroupKey k = group_of(r.class_idx, t);
    truncs[k] = t;
    groups[k].push_back({i, 0});
    if (r.latent == Latent::mix) groups[k].push_back({i, 1});
  }
  for (const auto& [key, members] : groups) {
    std::vector<uint32_t> seeds;
    for (const auto& [i, which] : members)
      seeds.push_back(which == 0 ? jobs[i].request.seed : jobs[i].request.col_seed);
    const Tensor z = z_from_seeds(seeds, cfg.z_dim);
    const Tensor c = one_hot(std::vector<int>(seeds.size(), std::get<0>(key)), cfg.c_dim);
    const Tensor ws = gen.map(z, c, truncs.at(key));
    for (size_t m = 0; m < members.size(); ++m)
      w[members[m].first][size_t(members[m].second)].assign(ws.data() + int64_t(m) * row,
                                                            ws.data() + int64_t(m + 1) * row);
  }
  // The mapping-only requests are done.
  for (size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].request.ws_only) {
      JobResult r;
      r.ws = std::move(w[i][0]);
      r.batch = 1;
      r.device = device;
      answer(jobs[i], std::move(r));
    }
  std::vector<size_t> images;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (!jobs[i].request.ws_only) images.push_back(i);
  Prepared p;
  if (images.empty()) return p;
  p.ws = Tensor({int64_t(images.size()), cfg.num_ws, cfg.w_dim});
  const Tensor& w_avg = gen.model().at("mapping.w_avg");
  for (size_t n = 0; n < images.size(); ++n) {
    const size_t i = images[n];
    const ImageRequest& r = jobs[i].request;
    float* dst = p.ws.data() + int64_t(n) * row;
    if (r.latent == Latent::seed) {
      std::copy(w[i][0].begin(), w[i][0].end(), dst);
    } else if (r.latent == Latent::ws) {
      std::copy(r.ws.data(), r.ws.data() + row, dst);
    } else {  // sg2 mix: both seeds truncated by the plain formula, then the styles rows swapped in
      Tensor pair({2, cfg.num_ws, cfg.w_dim});
      std::copy(w[i][0].begin(), w[i][0].end(), pair.data());
      std::copy(w[i][1].begin(), w[i][1].end(), pair.data() + row);
      truncate_plain(pair, w_avg, r.truncation.psi);
      mix_styles(pair.data(), pair.data() + row, r.styles, cfg.num_ws, cfg.w_dim, dst);
    }
  }
  const ImageRequest& first = jobs[images[0]].request;
  p.noise.mode = first.noise_mode;
  p.noise.seed = first.noise_mode == NoiseMode::random ? first.noise_seed : 0;
  if (first.noise_mode == NoiseMode::random)
    for (size_t i : images) p.noise.keys.push_back(jobs[i].request.noise_key());
  // Keep the image jobs only, in ws row order.
  std::vector<Job> kept;
  for (size_t i : images) kept.push_back(std::move(jobs[i]));
  jobs = std::move(kept);
  return p;
}

}  // namespace

Batcher::Batcher(std::vector<Generator*> gens, BatcherOptions options, Metrics* metrics)
    : gens_(std::move(gens)), opt_(options), metrics_(metrics) {
  if (gens_.empty()) fail(ErrorKind::invalid_argument, "serve: no generators");
}

Batcher::~Batcher() { stop(); }

void Batcher::start() {
  for (Generator* g : gens_) {
    auto w = std::make_unique<Worker>();
    w->gen = g;
    w->device = g->device().str();
    workers_.push_back(std::move(w));
  }
  for (auto& w : workers_) threads_.emplace_back([this, &w] { work(*w); });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return std::all_of(workers_.begin(), workers_.end(), [](const auto& w) { return w->ready; }); });
  for (auto& w : workers_)
    if (w->error) {
      stopping_ = true;
      lock.unlock();
      cv_.notify_all();
      for (std::thread& t : threads_) t.join();
      threads_.clear();
      std::rethrow_exception(w->error);
    }
}

bool Batcher::submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || static_cast<int64_t>(queue_.size()) >= opt_.max_queue) return false;
    queue_.push_back(std::move(job));
    if (metrics_) metrics_->set_queue_depth(static_cast<int64_t>(queue_.size()));
  }
  cv_.notify_all();
  return true;
}

int64_t Batcher::queue_depth() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  std::vector<Job> left;  // only when a worker failed to start
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
  }
  answer_all(left, 503, "the server is stopping");
}

void Batcher::answer_all(std::vector<Job>& jobs, int status, const std::string& error) {
  for (Job& j : jobs) {
    JobResult r;
    r.status = status;
    r.error = error;
    answer(j, std::move(r));
  }
}

std::vector<Job> Batcher::take(bool device_busy) {
  std::unique_lock<std::mutex> lock(mu_);
  auto drop_cancelled = [&] {
    queue_.erase(
        std::remove_if(queue_.begin(), queue_.end(), [](const Job& j) { return j.cancelled && j.cancelled->load(); }),
        queue_.end());
  };
  auto compatible = [&] { return pick(queue_, opt_.max_batch, [](std::deque<Job>::iterator&) { return false; }); };
  for (;;) {
    drop_cancelled();
    if (queue_.empty()) {
      if (device_busy || stopping_) return {};
      cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      continue;
    }
    // A busy device takes the next batch at once only when it is full (the device computes it right
    // after the one in flight); otherwise the batch in flight is delivered first, and the requests that
    // arrive meanwhile join the next batch.
    if (device_busy && compatible() < opt_.max_batch) return {};
    if (!device_busy && opt_.window_ms > 0 && !stopping_) {
      const Clock::time_point deadline =
          queue_.front().arrival + std::chrono::microseconds(static_cast<int64_t>(opt_.window_ms * 1000));
      while (!stopping_ && !queue_.empty() && compatible() < opt_.max_batch && Clock::now() < deadline)
        cv_.wait_until(lock, deadline);
      drop_cancelled();
      if (queue_.empty()) continue;
    }
    // Moved out first, erased after: the lead request stays where pick() looks at it.
    std::vector<Job> batch;
    std::vector<size_t> picked;
    auto first = queue_.begin();
    pick(queue_, opt_.max_batch, [&](std::deque<Job>::iterator& it) {
      picked.push_back(size_t(it - first));
      return false;
    });
    for (size_t i : picked) batch.push_back(std::move(queue_[i]));
    for (auto it = picked.rbegin(); it != picked.rend(); ++it) queue_.erase(queue_.begin() + std::ptrdiff_t(*it));
    if (metrics_) metrics_->set_queue_depth(static_cast<int64_t>(queue_.size()));
    return batch;
  }
}

void Batcher::work(Worker& w) {
  try {
    w.pipe = std::make_unique<ImagePipe>(*w.gen, opt_.max_batch, opt_.slots);
    if (opt_.warm_up) {  // every batch size the pipe runs, once (a GPU builds a CUDA graph per size)
      const ModelConfig& cfg = w.gen->config();
      const Tensor& w_avg = w.gen->model().at("mapping.w_avg");
      std::vector<int> sizes;  // the padded sizes; a backend that runs every size as it comes: one
      bool pads = false;
      for (int n = 1; n <= opt_.max_batch; ++n) {
        pads = pads || w.pipe->padded_size(n) != n;
        if (std::find(sizes.begin(), sizes.end(), w.pipe->padded_size(n)) == sizes.end())
          sizes.push_back(w.pipe->padded_size(n));
      }
      if (!pads) sizes = {1};
      for (int n : sizes) {
        Tensor ws({n, cfg.num_ws, cfg.w_dim});
        for (int64_t i = 0; i < ws.numel(); ++i) ws[i] = w_avg[i % cfg.w_dim];
        const int id = w.pipe->submit(ws, NoiseSpec{});
        w.pipe->wait(id);
        w.pipe->release(id);
      }
    }
  } catch (...) {
    w.error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    w.ready = true;
  }
  cv_.notify_all();
  if (w.error) return;

  struct InFlight {
    std::vector<Job> jobs;
    int id = -1;
  };
  std::optional<InFlight> pending;

  auto finish = [&](InFlight& f) {
    ImageBatch b;
    try {
      b = w.pipe->wait(f.id);
    } catch (const Error& e) {
      w.pipe->release(f.id);
      if (metrics_) metrics_->batch_failed();
      answer_all(f.jobs, 500,
                 "the batch of " + std::to_string(f.jobs.size()) + " on " + w.device + " failed: " + e.what());
      return;
    }
    const Clock::time_point delivered = Clock::now();
    auto hold = std::make_shared<SlotRelease>(w.pipe.get(), f.id, &w.hold_mu, &w.hold_cv, &w.holds);
    if (metrics_) metrics_->batch(b.count);
    for (int i = 0; i < b.count && i < static_cast<int>(f.jobs.size()); ++i) {
      JobResult r;
      r.hold = hold;
      r.pixels = b.u8 + size_t(i) * b.image_bytes();
      r.width = b.width;
      r.height = b.height;
      r.channels = b.channels;
      r.batch = b.count;
      r.device = w.device;
      const Job& j = f.jobs[size_t(i)];
      r.queue_ms = std::chrono::duration<double, std::milli>(j.started - j.arrival).count();
      r.compute_ms = std::chrono::duration<double, std::milli>(delivered - j.started).count();
      answer(f.jobs[size_t(i)], std::move(r));
    }
    hold.reset();
    if (metrics_ && w.memory_readable && Clock::now() - w.memory_read > std::chrono::seconds(1)) {
      w.memory_read = Clock::now();
      try {
        const DeviceMemory m = device_memory(*w.gen);
        metrics_->set_device(DeviceGauge{w.device, m.sg2_bytes, m.free_bytes, m.total_bytes});
      } catch (const Error&) {
        w.memory_readable = false;  // the CPU backend
      }
    }
  };

  // One batch: prepared, submitted, and (with the one before it done) delivered. A batch that fails
  // with invalid_argument is rerun one request at a time, so that only the request at fault fails.
  std::function<void(std::vector<Job>&, bool)> run = [&](std::vector<Job>& jobs, bool alone) {
    try {
      const Clock::time_point started = Clock::now();
      for (Job& j : jobs) j.started = started;
      if (opt_.fault_every > 0 && (batch_counter_.fetch_add(1) + 1) % uint64_t(opt_.fault_every) == 0)
        fail(ErrorKind::device, "injected device fault (SG2_SERVE_FAULT_EVERY=", opt_.fault_every, ")");
      Prepared p = prepare(*w.gen, jobs, w.device);
      if (jobs.empty()) return;
      if (pending && !w.pipe->has_free_slot()) {
        finish(*pending);
        pending.reset();
      }
      const int id = w.pipe->submit(p.ws, p.noise);
      if (pending) {
        finish(*pending);
        pending.reset();
      }
      pending = InFlight{std::move(jobs), id};
      if (alone) {
        finish(*pending);
        pending.reset();
      }
    } catch (const Error& e) {
      if (pending) {
        finish(*pending);
        pending.reset();
      }
      size_t open = 0;
      for (const Job& j : jobs) open += j.done ? 1 : 0;
      if (e.kind() == ErrorKind::invalid_argument && open > 1) {
        for (Job& j : jobs) {
          if (!j.done) continue;
          std::vector<Job> one;
          one.push_back(std::move(j));
          run(one, true);
        }
        return;
      }
      if (metrics_ && e.kind() != ErrorKind::invalid_argument) metrics_->batch_failed();
      const std::string what = e.kind() == ErrorKind::invalid_argument ? std::string(e.what())
                                                                       : "the batch of " + std::to_string(open) +
                                                                             " on " + w.device + " failed: " + e.what();
      answer_all(jobs, status_of(e), what);
    } catch (const std::bad_alloc&) {
      if (pending) {
        finish(*pending);
        pending.reset();
      }
      if (metrics_) metrics_->batch_failed();
      answer_all(jobs, 500, "out of host memory");
    }
  };

  for (;;) {
    std::vector<Job> jobs = take(pending.has_value());
    if (jobs.empty()) {
      if (pending) {
        finish(*pending);
        pending.reset();
        continue;
      }
      break;  // stopping, and nothing is queued
    }
    run(jobs, false);
  }
  std::unique_lock<std::mutex> lock(w.hold_mu);
  w.hold_cv.wait_for(lock, std::chrono::seconds(60), [&] { return w.holds == 0; });
}

}  // namespace sg2::cli::serve
