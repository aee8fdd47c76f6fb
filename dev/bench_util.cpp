// sg2 kernel runner: buffers, timing and comparison (bench_util.h).
#include "dev/bench_util.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/cuda_check.h"

namespace sg2::dev {

DeviceBuffer upload(const std::vector<float>& v, DType dt) {
  DeviceBuffer b(std::max<size_t>(v.size(), 1) * cuda::dtype_size(dt), nullptr);
  if (dt == DType::f32) {
    SG2_CUDA_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  } else {
    std::vector<__half> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
    SG2_CUDA_CHECK(cudaMemcpy(b.get(), h.data(), h.size() * sizeof(__half), cudaMemcpyHostToDevice));
  }
  return b;
}

DeviceBuffer random_buffer(size_t count, DType dt, float scale, uint64_t seed) {
  std::vector<float> v(count);
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (float& x : v) {
    x = d(gen);
    if (x == 0.0f) x = scale * 1e-3f;  // never a zero
  }
  return upload(v, dt);
}

std::vector<float> download(const void* p, size_t count, DType dt) {
  std::vector<float> v(count);
  SG2_CUDA_CHECK(cudaDeviceSynchronize());
  if (dt == DType::f32) {
    SG2_CUDA_CHECK(cudaMemcpy(v.data(), p, count * sizeof(float), cudaMemcpyDeviceToHost));
  } else {
    std::vector<__half> h(count);
    SG2_CUDA_CHECK(cudaMemcpy(h.data(), p, count * sizeof(__half), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) v[i] = __half2float(h[i]);
  }
  return v;
}

Timing time_candidate(const Candidate& c, int warmup, int iters, float slow_ms, cudaStream_t s) {
  Timing t;
  cuda::Event a, b;
  // the first run: does it run at all, and how long does it take
  a.record(s);
  if (!c.run(s)) {
    SG2_CUDA_CHECK(cudaStreamSynchronize(s));
    t.note = "refused";
    return t;
  }
  b.record(s);
  SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  const float first = b.since(a);
  int n = iters;
  if (first > slow_ms) {
    warmup = 0;
    n = 3;
    t.note = "slow: 3 runs";
  }
  for (int i = 0; i < warmup; ++i) c.run(s);
  std::vector<cuda::Event> start(static_cast<size_t>(n)), stop(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    start[size_t(i)].record(s);
    c.run(s);
    stop[size_t(i)].record(s);
  }
  SG2_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<float> ms;
  for (int i = 0; i < n; ++i) ms.push_back(stop[size_t(i)].since(start[size_t(i)]));
  std::sort(ms.begin(), ms.end());
  t.ran = true;
  t.runs = n;
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  return t;
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 1.0, m = 0.0;
  for (float v : b) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    m = std::max(m, double(std::fabs(a[i] - b[i])));
  }
  return m / scale;
}

}  // namespace sg2::dev
