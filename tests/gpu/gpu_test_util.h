// sg2 GPU tests: shared helpers — skipping without a GPU, device buffers from host tensors,
// random tensors, NCHW <-> NHWC, and comparisons with printed tolerances.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <algorithm>

#include "engine/cuda/conv.h"
#include "engine/cuda/cuda_raii.h"
#include "engine/cuda/device_caps.h"
#include "engine/cuda/options.h"
#include "engine/generator_access.h"
#include "kernels/dtype.h"
#include "kernels/tc_conv.h"
#include "sg2/generator.h"
#include "sg2/tensor.h"
#include "test_util.h"

/// Skips the test (cleanly, with the reason) when this build or machine has no usable GPU.
#define SG2_REQUIRE_GPU()                                                          \
  do {                                                                             \
    std::string sg2_why_;                                                          \
    if (!::sg2::cuda_available(&sg2_why_)) GTEST_SKIP() << "no GPU: " << sg2_why_; \
  } while (0)

namespace sg2::gputest {

using cuda::DeviceBuffer;
using cuda::DType;

/// The capabilities of GPU 0 (probed once per test process; the current device must be 0).
inline const cuda::DeviceCaps& gpu_caps() {
  static const cuda::DeviceCaps caps = cuda::DeviceCaps::probe(0);
  return caps;
}

/// Whether the engine would run a strict-fp32 Cin -> Cout 3x3 convolution on the tensor-core
/// kernel's 3xTF32 mode here (the selection table, engine/cuda/conv.h choose_conv).
inline bool tf32x3_runs_here(int cin, int cout) {
  cuda::ConvShape s;
  s.N = 1;
  s.H = s.W = 16;
  s.Cin = cin;
  s.Cout = cout;
  return cuda::choose_conv(s, cuda::ConvMath::fp32_strict, gpu_caps(), true).impl == cuda::ConvImpl::tensor_core;
}

/// Options for a Generator on GPU 0 in `p`, at most `max_batch` images per call.
inline GeneratorOptions on_gpu(Precision p, int max_batch) {
  GeneratorOptions o;
  o.device = Device{Device::Kind::cuda, 0};
  o.precision = p;
  o.max_batch = max_batch;
  return o;
}

/// A CUDA Generator (device 0) with engine-internal options: the fallbacks other GPUs take, a
/// memory limit (engine/cuda/options.h).
inline Generator cuda_generator(const Model& model, Precision p, int max_batch, const cuda::CudaOptions& o) {
  GeneratorOptions g;
  g.device = Device{Device::Kind::cuda, 0};
  g.precision = p;
  g.max_batch = max_batch;
  g.batch_invariant = o.batch_invariant;
  return GeneratorAccess::with_backend(model, g, [&](const Model& m) { return cuda::make_cuda_backend(m, 0, p, o); });
}

/// Tensor of the shape filled with N(0, scale^2) from `seed`.
inline Tensor randn(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f) {
  Tensor t(std::move(shape));
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (auto& v : t.vec()) v = d(gen);
  return t;
}

/// Rounds every value through fp16 (what an fp16 device tensor holds).
inline Tensor round_f16(Tensor t) {
  for (auto& v : t.vec()) v = __half2float(__float2half_rn(v));
  return t;
}

/// [N, C, H, W] -> [N, H, W, C] (or the reverse with to_nchw).
inline Tensor to_nhwc(const Tensor& t) {
  const int64_t N = t.dim(0), C = t.dim(1), H = t.dim(2), W = t.dim(3);
  Tensor o({N, H, W, C});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < H * W; ++p) o[(n * H * W + p) * C + c] = t[(n * C + c) * H * W + p];
  return o;
}
inline Tensor to_nchw(const Tensor& t) {
  const int64_t N = t.dim(0), H = t.dim(1), W = t.dim(2), C = t.dim(3);
  Tensor o({N, C, H, W});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < H * W; ++p) o[(n * C + c) * H * W + p] = t[(n * H * W + p) * C + c];
  return o;
}

/// Device copy of a host tensor in `dt` (float32 or float16).
inline DeviceBuffer to_device(const Tensor& t, DType dt = DType::f32) {
  DeviceBuffer b(static_cast<size_t>(std::max<int64_t>(t.numel(), 1)) * cuda::dtype_size(dt), nullptr);
  if (dt == DType::f32) {
    SG2_CUDA_CHECK(cudaMemcpy(b.get(), t.data(), size_t(t.numel()) * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<__half> h(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half_rn(t.vec()[i]);
    SG2_CUDA_CHECK(cudaMemcpy(b.get(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  }
  return b;
}
inline DeviceBuffer to_device(const std::vector<float>& v) {
  return to_device(Tensor({static_cast<int64_t>(v.size())}, v));
}
inline DeviceBuffer to_device(const std::vector<int>& v) {
  DeviceBuffer b(std::max<size_t>(v.size(), 1) * sizeof(int), nullptr);
  SG2_CUDA_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(int), cudaMemcpyHostToDevice));
  return b;
}

/// Device buffer of `count` elements filled with a NaN pattern (every element must be written).
inline DeviceBuffer poisoned(size_t count, DType dt = DType::f32) {
  DeviceBuffer b(std::max<size_t>(count, 1) * cuda::dtype_size(dt), nullptr);
  SG2_CUDA_CHECK(cudaMemset(b.get(), 0xff, b.bytes()));  // 0xffff... is NaN in fp32 and fp16
  return b;
}

/// The wgmma tensor-core convolution's arguments for a square input (the kernel tests' common part):
/// operands, batch, size, channels, direction and buffers (w_lo: 3xTF32 only); the caller sets the
/// split-K and the variants.
inline cuda::TcConvArgs wgmma_conv_args(cuda::TcConvArgs::Operands ops, int n, int hw, int cin, int cout,
                                        bool transposed, const void* x, const void* w_hi, const float* w_lo) {
  cuda::TcConvArgs a;
  a.operands = ops;
  a.impl = cuda::TcConvArgs::Impl::wgmma;
  a.encode_tensor_map = gpu_caps().encode_tensor_map;
  a.N = n;
  a.H = a.W = hw;
  a.Cin = cin;
  a.Cout = cout;
  a.transposed = transposed;
  a.x = x;
  a.w_hi = w_hi;
  a.w_lo = ops == cuda::TcConvArgs::Operands::tf32x3 ? w_lo : nullptr;
  return a;
}

/// Runs cuda::tc_conv(a) (with the workspace its splits need) into a fresh NaN-filled output of
/// y_count elements of dt and returns the output's bytes.
inline std::vector<char> run_tc_conv(cuda::TcConvArgs a, size_t y_count, DType dt) {
  DeviceBuffer d_y = poisoned(y_count, dt);
  a.y = d_y.get();
  DeviceBuffer partial(std::max<size_t>(cuda::tc_conv_workspace(a), 16), nullptr);
  a.partial = partial.as<float>();
  EXPECT_TRUE(cuda::tc_conv_supports(a));
  cuda::tc_conv(a, nullptr);
  std::vector<char> out(y_count * cuda::dtype_size(dt));
  SG2_CUDA_CHECK(cudaMemcpy(out.data(), d_y.get(), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

/// Host copy of a device buffer holding `shape` elements of `dt`, as float32.
inline Tensor from_device(const void* p, std::vector<int64_t> shape, DType dt = DType::f32) {
  SG2_CUDA_CHECK(cudaDeviceSynchronize());
  Tensor t(std::move(shape));
  if (dt == DType::f32) {
    SG2_CUDA_CHECK(cudaMemcpy(t.data(), p, size_t(t.numel()) * 4, cudaMemcpyDeviceToHost));
  } else {
    std::vector<__half> h(static_cast<size_t>(t.numel()));
    SG2_CUDA_CHECK(cudaMemcpy(h.data(), p, h.size() * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < h.size(); ++i) t.vec()[i] = __half2float(h[i]);
  }
  return t;
}

/// max |x| (at least 1): the scale relative tolerances refer to.
inline double scale_of(const Tensor& t) {
  double m = 1.0;
  for (float v : t.vec()) m = std::max(m, double(std::fabs(v)));
  return m;
}

/// gtest assertion: max |a - b| <= tol * scale_of(b), printing the stats.
inline ::testing::AssertionResult near_rel(const Tensor& a, const Tensor& b, double tol, const std::string& label) {
  return test::tensors_near(a, b, tol * scale_of(b), label);
}

}  // namespace sg2::gputest
