// sg2 serve: GET /metrics (metrics.h).
#include "serve/metrics.h"

#include <cstdio>
#include <sstream>

namespace sg2::cli::serve {

namespace {
std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
using Clock = std::chrono::steady_clock;
}  // namespace

std::string server_timing(double queue_ms, double generate_ms, double encode_ms) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "queue;dur=%.3f, generate;dur=%.3f, encode;dur=%.3f", queue_ms, generate_ms,
                encode_ms);
  return buf;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::text(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    os << name << "_bucket{le=\"" << number(bounds_[i]) << "\"} " << cum << "\n";
  }
  cum += counts_.back();
  os << name << "_bucket{le=\"+Inf\"} " << cum << "\n"
     << name << "_sum " << number(sum_) << "\n"
     << name << "_count " << count_ << "\n";
  return os.str();
}

Metrics::Metrics()
    : latency_({0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}),
      batch_size_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      start_(Clock::now()) {}

void Metrics::response(int status, bool image_request, double seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++by_status_[status];
  }
  if (image_request) latency_.observe(seconds);
}

void Metrics::batch(int images) {
  batch_size_.observe(images);
  std::lock_guard<std::mutex> lock(mu_);
  images_ += uint64_t(images);
  ++batches_;
  recent_.emplace_back(Clock::now(), images);
}

void Metrics::batch_failed() {
  std::lock_guard<std::mutex> lock(mu_);
  ++batch_failures_;
}

void Metrics::stages(double queue_s, double generate_s, double encode_s) {
  std::lock_guard<std::mutex> lock(mu_);
  stage_sum_[0] += queue_s;
  stage_sum_[1] += generate_s;
  stage_sum_[2] += encode_s;
  ++stage_count_;
}

void Metrics::set_device(const DeviceGauge& g) {
  std::lock_guard<std::mutex> lock(mu_);
  devices_[g.device] = g;
}

double Metrics::images_per_second() {
  const Clock::time_point now = Clock::now();
  while (!recent_.empty() && now - recent_.front().first > std::chrono::seconds(10)) recent_.pop_front();
  int64_t n = 0;
  for (const auto& r : recent_) n += r.second;
  const double span = std::min(10.0, std::chrono::duration<double>(now - start_).count());
  return span > 0 ? double(n) / span : 0.0;
}

std::string Metrics::text() {
  std::ostringstream os;
  std::lock_guard<std::mutex> lock(mu_);
  os << "# HELP sg2_http_requests_total HTTP responses by status code.\n# TYPE sg2_http_requests_total counter\n";
  for (const auto& [code, n] : by_status_) os << "sg2_http_requests_total{code=\"" << code << "\"} " << n << "\n";
  os << "# HELP sg2_request_duration_seconds Latency of image and ws requests, from the request read to the "
        "response queued.\n# TYPE sg2_request_duration_seconds histogram\n"
     << latency_.text("sg2_request_duration_seconds");
  os << "# HELP sg2_batch_size Images per batch run on a device.\n# TYPE sg2_batch_size histogram\n"
     << batch_size_.text("sg2_batch_size");
  os << "# HELP sg2_queue_depth Requests waiting for a batch.\n# TYPE sg2_queue_depth gauge\nsg2_queue_depth "
     << queue_depth_.load() << "\n";
  os << "# HELP sg2_requests_in_flight Requests read and not yet answered.\n# TYPE sg2_requests_in_flight gauge\n"
        "sg2_requests_in_flight "
     << in_flight_.load() << "\n";
  os << "# HELP sg2_images_total Images made.\n# TYPE sg2_images_total counter\nsg2_images_total " << images_ << "\n";
  os << "# HELP sg2_batches_total Batches run.\n# TYPE sg2_batches_total counter\nsg2_batches_total " << batches_
     << "\n";
  os << "# HELP sg2_batch_failures_total Batches that failed on the device.\n# TYPE sg2_batch_failures_total "
        "counter\nsg2_batch_failures_total "
     << batch_failures_ << "\n";
  os << "# HELP sg2_images_per_second Images made per second over the last 10 s.\n# TYPE sg2_images_per_second "
        "gauge\nsg2_images_per_second "
     << number(images_per_second()) << "\n";
  os << "# HELP sg2_stage_seconds Time of image responses by stage: waiting for a batch (queue), the batch on the "
        "device (generate), encoding (encode).\n# TYPE sg2_stage_seconds summary\n";
  const char* names[3] = {"queue", "generate", "encode"};
  for (int i = 0; i < 3; ++i)
    os << "sg2_stage_seconds_sum{stage=\"" << names[i] << "\"} " << number(stage_sum_[i]) << "\n"
       << "sg2_stage_seconds_count{stage=\"" << names[i] << "\"} " << stage_count_ << "\n";
  if (!devices_.empty()) {
    os << "# HELP sg2_gpu_memory_bytes GPU memory: held by sg2, free and total on the device.\n"
          "# TYPE sg2_gpu_memory_bytes gauge\n";
    for (const auto& [name, g] : devices_) {
      os << "sg2_gpu_memory_bytes{device=\"" << name << "\",kind=\"sg2\"} " << g.sg2_bytes << "\n";
      os << "sg2_gpu_memory_bytes{device=\"" << name << "\",kind=\"free\"} " << g.free_bytes << "\n";
      os << "sg2_gpu_memory_bytes{device=\"" << name << "\",kind=\"total\"} " << g.total_bytes << "\n";
    }
  }
  return os.str();
}

}  // namespace sg2::cli::serve
