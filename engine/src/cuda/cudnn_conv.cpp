// sg2 CUDA backend: cuDNN convolutions (cudnn_conv.h).
#include "cudnn_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cuda/cudnn_check.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_simt.h"
#include "kernels/conv2d_tf32x3.h"

namespace sg2::cuda {

namespace {

cudnnDataType_t cudnn_type(DType t) { return t == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor op, conversion";
    case CUDNN_FMA_MATH: return "fma";
  }
  return "?";
}

constexpr int kSimtAlgo = -100;    // pseudo algorithm: kernels/conv2d_simt.h (strict fp32, FMA)
constexpr int kTf32x3Algo = -101;  // pseudo algorithm: kernels/conv2d_tf32x3.h (fp32-accurate, tensor cores)

/// Strict fp32 kernels: SG2_FP32_CONV=simt (FMA only: the SIMT kernel first, no tensor cores),
/// =cudnn (cuDNN's FMA algorithms only); default: the 3xTF32 kernel first.
const char* fp32_conv_choice() {
  const char* e = std::getenv("SG2_FP32_CONV");
  return e ? e : "";
}

/// The shape and activations of the strict-fp32 kernels' argument structs (SIMT, 3xTF32).
template <typename Args>
Args implicit_gemm_args(const ConvShape& s, const void* x, void* y) {
  Args a;
  a.N = s.N;
  a.H = s.H;
  a.W = s.W;
  a.Cin = s.Cin;
  a.Cout = s.Cout;
  a.transposed = s.transposed;
  a.x = static_cast<const float*>(x);
  a.y = static_cast<float*>(y);
  return a;
}

bool device_runs_tf32x3() {
  int dev = 0, smem = 0, cc = 0;
  SG2_CUDA_CHECK(cudaGetDevice(&dev));
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  SG2_CUDA_CHECK(cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, dev));
  Tf32x3ConvArgs widest;
  widest.Cout = 64;
  return cc >= 8 && conv2d_tf32x3_smem_bytes(widest) <= size_t(smem);
}

bool use_direct_only() {
  const char* e = std::getenv("SG2_CONV");
  return e != nullptr && std::strcmp(e, "direct") == 0;
}

}  // namespace

struct CudnnConv::Part {
  int n = 0;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Part(const ConvShape& s, int n_, ConvMath math) : n(n_) {
    const cudnnDataType_t dt = cudnn_type(s.dtype);
    SG2_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    SG2_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    SG2_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    SG2_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    SG2_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, dt, n, s.Cin, s.H, s.W));
    SG2_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, dt, n, s.Cout, s.out_h(), s.out_w()));
    if (s.transposed) {
      // backward data of a forward conv [Cout-grid -> Cin]: filter K = Cin, C = Cout
      SG2_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NHWC, s.Cin, s.Cout, s.k, s.k));
      SG2_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, 0, 0, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    } else {
      SG2_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NHWC, s.Cout, s.Cin, s.k, s.k));
      SG2_CUDNN_CHECK(
          cudnnSetConvolution2dDescriptor(conv, s.pad, s.pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    }
    SG2_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math == ConvMath::fp32_strict ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  }
  ~Part() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
  Part(const Part&) = delete;
  Part& operator=(const Part&) = delete;
};

bool tf32x3_usable(int cin, int cout) {
  if (std::strcmp(fp32_conv_choice(), "simt") == 0 || std::strcmp(fp32_conv_choice(), "cudnn") == 0) return false;
  Tf32x3ConvArgs probe;
  probe.N = probe.H = probe.W = 1;
  probe.Cin = cin;
  probe.Cout = cout;
  return conv2d_tf32x3_shape_ok(probe) && device_runs_tf32x3();
}

CudnnConv::CudnnConv(cudnnHandle_t handle, const ConvShape& s, ConvMath math, size_t workspace_limit)
    : handle_(handle), shape_(s), math_(math) {
  if (s.N <= 0) fail(ErrorKind::internal, "CudnnConv: empty batch");
  // Samples per cuDNN call: every tensor under 2^31 elements.
  const int64_t per_sample = std::max<int64_t>(int64_t(s.H) * s.W * s.Cin, int64_t(s.out_h()) * s.out_w() * s.Cout);
  chunk_ = static_cast<int>(std::min<int64_t>(s.N, std::max<int64_t>(1, (int64_t(1) << 31) / 2 / per_sample)));
  if (use_direct_only()) return;
  // Candidates from the heuristics for the largest part, filtered; the remainder part is checked
  // when running. When every candidate wants more workspace than the limit, the batch is split
  // into smaller cuDNN calls (the workspace of these algorithms grows with the batch).
  for (;;) {
    parts_.clear();
    candidates_.clear();
    try {
      parts_.push_back(std::make_unique<Part>(s, chunk_, math));
      if (s.N % chunk_ != 0) parts_.push_back(std::make_unique<Part>(s, s.N % chunk_, math));
    } catch (const Error&) {
      parts_.clear();  // cuDNN refuses the shape: the direct kernel will run it
      return;
    }
    const Part& p = *parts_[0];
    bool too_big = false;
    auto accept = [&](int algo, cudnnStatus_t st, cudnnDeterminism_t det, cudnnMathType_t m, size_t mem) {
      if (st != CUDNN_STATUS_SUCCESS || det != CUDNN_DETERMINISTIC) return;
      // fp32 data converted to fp16 inside cuDNN: never (tf32 promises TF32 operands)
      if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && s.dtype == DType::f32) return;
      if (math == ConvMath::fp32_strict) {
        // strict fp32: never tensor cores (TF32); run with FMA math whatever the heuristic says
        if (m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return;
        m = CUDNN_FMA_MATH;
      }
      if (mem > workspace_limit) {
        too_big = true;
        return;
      }
      for (const Candidate& c : candidates_)
        if (c.algo == algo && c.math == m) return;
      candidates_.push_back({algo, m, mem});
    };
    if (s.transposed) {
      int max_count = 0, returned = 0;
      SG2_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle_, &max_count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
      SG2_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, p.w, p.x, p.conv, p.y, max_count, &returned,
                                                                  perf.data()));
      for (int i = 0; i < returned; ++i) {
        const auto& r = perf[static_cast<size_t>(i)];
        if (r.algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || r.algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING) continue;
        accept(static_cast<int>(r.algo), r.status, r.determinism, r.mathType, r.memory);
      }
    } else {
      int max_count = 0, returned = 0;
      SG2_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
      SG2_CUDNN_CHECK(
          cudnnGetConvolutionForwardAlgorithm_v7(handle_, p.x, p.w, p.conv, p.y, max_count, &returned, perf.data()));
      for (int i = 0; i < returned; ++i) {
        const auto& r = perf[static_cast<size_t>(i)];
        if (r.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || r.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING) continue;
        accept(static_cast<int>(r.algo), r.status, r.determinism, r.mathType, r.memory);
      }
    }
    if (!candidates_.empty() || !too_big || chunk_ == 1) break;
    chunk_ = (chunk_ + 1) / 2;
  }
  // Strict fp32: the SIMT implicit GEMM is a candidate too, first where it measured faster than
  // cuDNN's deterministic NHWC fp32 algorithms on an H200 (docs/performance-notes.md, run 3: with
  // SG2_CUDNN_AUTOTUNE=1 the timing chose it for outputs of 128 px and more at batch 32, and of
  // 64 px and more at batch 1; cuDNN's backward data took 23 ms for b1024.conv0 at batch 1, the
  // SIMT kernel 0.46 ms), else last. SG2_FP32_CONV=simt puts it first always, =cudnn leaves it
  // out. A fixed rule, so that every run picks the same kernels.
  if (math == ConvMath::fp32_strict && s.dtype == DType::f32 && s.k == 3 && (s.transposed || s.pad == 1) &&
      s.Cin % 8 == 0 && s.Cout % 32 == 0 && std::strcmp(fp32_conv_choice(), "cudnn") != 0) {
    const Candidate simt{kSimtAlgo, CUDNN_FMA_MATH, 0};
    const int res = s.out_h();
    const bool simt_only = std::strcmp(fp32_conv_choice(), "simt") == 0;
    const bool first = res >= 128 || (res >= 64 && s.N < 8) || simt_only;
    if (first) candidates_.insert(candidates_.begin(), simt);
    else candidates_.push_back(simt);
    // fp32-accurate on tensor cores (kernels/conv2d_tf32x3.h): first, with split-K where one
    // launch would not fill the GPU.
    if (!simt_only) {
      Tf32x3ConvArgs probe = implicit_gemm_args<Tf32x3ConvArgs>(s, nullptr, nullptr);
      int dev = 0, sms = 0;
      SG2_CUDA_CHECK(cudaGetDevice(&dev));
      SG2_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      probe.splits = conv2d_tf32x3_choose_splits(probe, sms);  // split-K where it shortens the launch
      // fewer splits where the partial sums would not fit the workspace limit (1 needs none)
      while (probe.splits > 1 && conv2d_tf32x3_workspace(probe) > workspace_limit) probe.splits /= 2;
      tc_splits_ = probe.splits;
      const size_t ws = conv2d_tf32x3_workspace(probe);
      // sm_80+ (TF32 MMA, cp.async) with enough shared memory per block (not sm_86/sm_89)
      if (conv2d_tf32x3_shape_ok(probe) && device_runs_tf32x3() && ws <= workspace_limit)
        candidates_.insert(candidates_.begin(), Candidate{kTf32x3Algo, CUDNN_FMA_MATH, ws});
    }
  }
  for (const Candidate& c : candidates_) max_ws_ = std::max(max_ws_, c.ws);
}

CudnnConv::~CudnnConv() = default;

bool CudnnConv::try_run(int ci, const void* x, const void* w, void* y, void* ws, size_t ws_bytes,
                        cudaStream_t stream) const {
  const Candidate& c = candidates_[static_cast<size_t>(ci)];
  if (c.algo == kTf32x3Algo) {
    Tf32x3ConvArgs a = implicit_gemm_args<Tf32x3ConvArgs>(shape_, x, y);
    a.w_hi = w_hi_;
    a.w_lo = w_lo_;
    a.splits = tc_splits_;
    a.partial = static_cast<float*>(ws);
    if (c.ws > ws_bytes || !conv2d_tf32x3_supports(a)) return false;
    conv2d_tf32x3(a, stream);
    return true;
  }
  if (c.algo == kSimtAlgo) {
    SimtConvArgs a = implicit_gemm_args<SimtConvArgs>(shape_, x, y);
    a.w = static_cast<const float*>(w);
    if (!conv2d_simt_supports(a)) return false;
    conv2d_simt(a, stream);
    return true;
  }
  if (c.ws > ws_bytes) return false;
  const size_t esz = dtype_size(shape_.dtype);
  const int64_t x_per = int64_t(shape_.H) * shape_.W * shape_.Cin;
  const int64_t y_per = int64_t(shape_.out_h()) * shape_.out_w() * shape_.Cout;
  const float one = 1.0f, zero = 0.0f;
  for (int n0 = 0; n0 < shape_.N; n0 += chunk_) {
    const Part& p = *parts_[shape_.N - n0 >= chunk_ ? 0 : 1];
    const char* xp = static_cast<const char*>(x) + n0 * x_per * esz;
    char* yp = static_cast<char*>(y) + n0 * y_per * esz;
    cudnnStatus_t st;
    st = cudnnSetConvolutionMathType(p.conv, c.math);
    if (st != CUDNN_STATUS_SUCCESS) return false;
    if (shape_.transposed) {
      st = cudnnConvolutionBackwardData(handle_, &one, p.w, w, p.x, xp, p.conv,
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), ws, ws_bytes, &zero, p.y, yp);
    } else {
      st = cudnnConvolutionForward(handle_, &one, p.x, xp, p.w, w, p.conv, static_cast<cudnnConvolutionFwdAlgo_t>(c.algo),
                                   ws, ws_bytes, &zero, p.y, yp);
    }
    if (st != CUDNN_STATUS_SUCCESS) return false;
  }
  return true;
}

void CudnnConv::select(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes,
                       cudaStream_t stream) {
  // Default: cuDNN's heuristic order, the first candidate that runs (the same choice on every run
  // of the program). SG2_CUDNN_AUTOTUNE=1: the fastest candidate by timing (may differ between
  // processes when two are equally fast, so results are then reproducible only within a process).
  const char* at = std::getenv("SG2_CUDNN_AUTOTUNE");
  const bool autotune = at != nullptr && std::strcmp(at, "1") == 0;
  selected_ = -1;
  float best = 0.0f;
  for (int i = 0; i < static_cast<int>(candidates_.size()); ++i) {
    if (!try_run(i, x, w, y, workspace, workspace_bytes, stream)) continue;
    const cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) throw_cuda_error(e, "cudnn convolution (algorithm trial)", __FILE__, __LINE__);
    if (!autotune) {
      selected_ = i;
      break;
    }
    cudaEvent_t a = nullptr, b = nullptr;
    SG2_CUDA_CHECK(cudaEventCreate(&a));
    SG2_CUDA_CHECK(cudaEventCreate(&b));
    SG2_CUDA_CHECK(cudaEventRecord(a, stream));
    bool ok = true;
    for (int r = 0; r < 3 && ok; ++r) ok = try_run(i, x, w, y, workspace, workspace_bytes, stream);
    SG2_CUDA_CHECK(cudaEventRecord(b, stream));
    SG2_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0.0f;
    SG2_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (ok && (selected_ < 0 || ms < best)) {
      selected_ = i;
      best = ms;
    }
  }
  selected_set_ = true;
}

size_t CudnnConv::workspace() const { return selected_ >= 0 ? candidates_[static_cast<size_t>(selected_)].ws : 0; }

void CudnnConv::run(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream) const {
  if (!selected_set_) fail(ErrorKind::internal, "CudnnConv::run before select");
  if (selected_ >= 0) {
    if (!try_run(selected_, x, w, y, workspace, workspace_bytes, stream))
      fail(ErrorKind::device, "cuDNN refused a convolution it ran before (", describe(), ")");
    return;
  }
  Conv2dArgs a;
  a.N = shape_.N;
  a.H = shape_.H;
  a.W = shape_.W;
  a.Cin = shape_.Cin;
  a.Cout = shape_.Cout;
  a.k = shape_.k;
  a.pad = shape_.pad;
  a.transposed = shape_.transposed;
  a.dtype = shape_.dtype;
  a.x = x;
  a.w = w;
  a.y = y;
  conv2d_direct(a, stream);
}

std::string CudnnConv::describe() const {
  if (selected_ < 0) return "direct kernel";
  const Candidate& c = candidates_[static_cast<size_t>(selected_)];
  if (c.algo == kSimtAlgo) return "simt fp32 implicit gemm";
  if (c.algo == kTf32x3Algo) {
    Tf32x3ConvArgs a = implicit_gemm_args<Tf32x3ConvArgs>(shape_, nullptr, nullptr);
    const bool wg = conv2d_tf32x3_impl(a) == Tf32x3ConvArgs::Impl::wgmma;
    return std::string("3xtf32 fp32-accurate implicit gemm (tensor cores, ") + (wg ? "wgmma" : "mma.sync") +
           ", split-k " + std::to_string(tc_splits_) + ")";
  }
  return std::string("cudnn ") + (shape_.transposed ? "bwd-data" : "fwd") + " algo " + std::to_string(c.algo) + " (" +
         math_name(c.math) + ", ws " + std::to_string(c.ws >> 20) + " MiB)";
}

}  // namespace sg2::cuda
