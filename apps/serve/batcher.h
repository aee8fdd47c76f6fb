// sg2 serve: dynamic batching — the requests of many clients merged into one batch per device, each
// answered with exactly the image it would get alone.
//
// One bounded queue feeds one worker thread per generator (one per --device entry). A worker takes the
// oldest request and every queued request that can share its batch, up to --max-batch. While a device
// computes a batch, the requests that arrive queue up and form the next one: when a full batch is
// queued it is submitted at once (the device runs it right after the one in flight, while the host
// copies and encodes the last), otherwise the batch in flight is delivered first and the next one
// takes what has arrived. --batch-window-ms W > 0 makes a batch wait up to W ms after its oldest
// request for more before it starts (bigger batches at a moderate load, for W of latency); with the
// default 0 a request on an idle device starts at once. Which requests share a batch: the engine applies the noise
// mode and the random-noise seed per batch, so those must match; everything else is per image — the
// mapping runs once per (class, truncation) group of the batch, style mixing and W+ rows are
// assembled on the host, and each image's random noise is keyed by its own seed (NoiseSpec::keys).
// Images do not depend on the batch they run in (GeneratorOptions::batch_invariant, the default), so
// a response is the image of the same request made alone, bit for bit (tests/serve/test_serve.py).
//
// Failures stay inside their batch: a device error or out-of-memory answers that batch's requests
// with status 500 and the worker goes on; a request whose pixels come out NaN (a huge truncation or
// latent) fails the batch with invalid_argument, which is then rerun one request at a time so that
// only that request gets its 400.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "serve/request.h"
#include "sg2/generator.h"

namespace sg2::cli::serve {

using Clock = std::chrono::steady_clock;

/// What a request gets back.
struct JobResult {
  int status = 200;                  ///< 200; 400 (bad input found by the engine), 500 (device failure), 503 (stopping)
  std::string error;                 ///< one line, when status != 200
  std::shared_ptr<const void> hold;  ///< keeps `pixels` valid (a slot of the device's pipe)
  const uint8_t* pixels = nullptr;   ///< [height, width, channels] uint8, the official conversion
  int width = 0, height = 0, channels = 0;
  std::vector<float> ws;  ///< ws_only requests: [num_ws * w_dim] float32, after truncation
  int batch = 0;          ///< images in the batch it ran in
  std::string device;     ///< where it ran ("cuda:0", "cpu")
  double queue_ms = 0;    ///< from its arrival to its batch starting (milliseconds)
  double compute_ms = 0;  ///< its batch: mapping, synthesis and the copy to the host (milliseconds)
};

/// One queued request. done() is called exactly once, from a worker thread (or from stop()).
struct Job {
  ImageRequest request;
  std::function<void(JobResult&&)> done;
  Clock::time_point arrival = Clock::now();
  Clock::time_point started{};  ///< when its batch started (set by the worker)
  /// Set by the caller when it gave up on the request (it answered already): the job is dropped
  /// before it runs.
  std::shared_ptr<std::atomic<bool>> cancelled;
};

struct BatcherOptions {
  int max_batch = 32;
  double window_ms = 0;
  int max_queue = 1024;
  int slots = 4;        ///< batches per device in flight or held by encoders
  int fault_every = 0;  ///< > 0: every Nth batch fails as a device error would (env SG2_SERVE_FAULT_EVERY)
  bool warm_up = true;  ///< run every batch size the pipe uses once before serving
};

class Batcher {
 public:
  /// The generators must outlive the batcher; each is used by its worker thread only.
  Batcher(std::vector<Generator*> gens, BatcherOptions options, Metrics* metrics);
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  /// Starts the workers and waits until each has its pipe (and has warmed up). Throws the first
  /// worker's error (sg2::Error) when one cannot start.
  void start();
  /// Queues a job; false (and done() not called) when the queue is full or the batcher is stopping.
  bool submit(Job job);
  /// Runs every queued job, then stops the workers and waits until every held image is released.
  void stop();
  int64_t queue_depth();

 private:
  struct Worker;
  void work(Worker& w);
  std::vector<Job> take(bool device_busy);
  void answer_all(std::vector<Job>& jobs, int status, const std::string& error);

  std::vector<Generator*> gens_;
  BatcherOptions opt_;
  Metrics* metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::atomic<uint64_t> batch_counter_{0};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
};

}  // namespace sg2::cli::serve
