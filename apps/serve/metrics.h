// sg2 serve: the counters behind GET /metrics (Prometheus text format 0.0.4). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sg2::cli::serve {

/// A Prometheus histogram with fixed upper bounds (cumulative buckets, +Inf implied).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  /// "<name>_bucket{le="..."} n" lines, _sum and _count.
  std::string text(const std::string& name) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), the last one +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// Device memory of one generator, as its worker last read it.
struct DeviceGauge {
  std::string device;  ///< "cuda:0"
  size_t sg2_bytes = 0, free_bytes = 0, total_bytes = 0;
};

/// The `Server-Timing` header value of an image response (W3C Server Timing; durations in ms, as the
/// browser's developer tools show them): "queue;dur=Q, generate;dur=G, encode;dur=E".
std::string server_timing(double queue_ms, double generate_ms, double encode_ms);

class Metrics {
 public:
  Metrics();
  /// One HTTP response with `status`; image requests (/v1/generate, /v1/ws) also time their latency.
  void response(int status, bool image_request, double seconds);
  /// One batch of `images` images run on a device (images/s counts them when delivered).
  void batch(int images);
  void batch_failed();
  /// Where one image response's time went (seconds): waiting for its batch, the batch on the device
  /// (mapping, synthesis, the copy to the host) and encoding (sg2_stage_seconds{stage=...}).
  void stages(double queue_s, double generate_s, double encode_s);
  void set_queue_depth(int64_t n) { queue_depth_.store(n); }
  void set_device(const DeviceGauge& g);
  void in_flight(int delta) { in_flight_.fetch_add(delta); }
  /// The whole exposition.
  std::string text();

 private:
  double images_per_second();  // over the last 10 s (with mu_ held)
  std::mutex mu_;
  std::map<int, uint64_t> by_status_;
  Histogram latency_, batch_size_;
  double stage_sum_[3] = {0, 0, 0};
  uint64_t stage_count_ = 0;
  std::atomic<int64_t> queue_depth_{0}, in_flight_{0};
  uint64_t images_ = 0, batches_ = 0, batch_failures_ = 0;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int>> recent_;  // (when, images) of batches
  std::map<std::string, DeviceGauge> devices_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sg2::cli::serve
