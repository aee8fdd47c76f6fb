// sg2 CUDA backend: a convolution and its implementation choice (conv.h).
#include "engine/cuda/conv.h"

#include <algorithm>
#include <cstring>

#include "engine/cuda/cudnn_check.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_simt.h"
#include "kernels/tc_conv.h"
#include "kernels/tc_tconv.h"

namespace sg2::cuda {

namespace {

cudnnDataType_t cudnn_type(DType t) { return t == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor op, conversion";
    case CUDNN_FMA_MATH:
      return "fma";
  }
  return "?";
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

TcConvArgs::Operands operands_of(ConvMath math) {
  switch (math) {
    case ConvMath::fp32_strict:
      return TcConvArgs::Operands::tf32x3;
    case ConvMath::tf32:
      return TcConvArgs::Operands::tf32;
    case ConvMath::fp16:
      return TcConvArgs::Operands::f16;
  }
  return TcConvArgs::Operands::tf32x3;
}

/// The tensor-core kernel's arguments for this shape, math and choice (operands, implementation,
/// encoder).
TcConvArgs tc_args(const ConvShape& s, ConvMath math, const ConvChoice& choice, const DeviceCaps& caps, const void* x,
                   void* y) {
  TcConvArgs a;
  a.N = s.N;
  a.H = s.H;
  a.W = s.W;
  a.Cin = s.Cin;
  a.Cout = s.Cout;
  a.transposed = s.transposed;
  a.k = s.k;
  a.x = x;
  a.y = y;
  a.operands = operands_of(math);
  a.impl = choice.wgmma ? TcConvArgs::Impl::wgmma : TcConvArgs::Impl::mma;
  a.encode_tensor_map = caps.encode_tensor_map;
  a.num_sms = caps.sm_count;
  return a;
}

/// The transposed-conv kernel's arguments (operands, implementation: wgmma where choice.wgmma, else
/// mma.sync with the device's shared memory per block).
TcTconvArgs tconv_args(const ConvShape& s, ConvMath math, const ConvChoice& choice, const DeviceCaps& caps,
                       const void* x, void* y) {
  TcTconvArgs a;
  a.operands = math == ConvMath::fp16   ? TcTconvArgs::Operands::f16
               : math == ConvMath::tf32 ? TcTconvArgs::Operands::tf32
                                        : TcTconvArgs::Operands::tf32x3;
  a.impl = choice.wgmma ? TcTconvArgs::Impl::wgmma : TcTconvArgs::Impl::mma;
  a.smem_per_block = caps.smem_per_block_optin;
  a.N = s.N;
  a.H = s.H;
  a.W = s.W;
  a.Cin = s.Cin;
  a.Cout = s.Cout;
  a.x = x;
  a.y = y;
  a.num_sms = caps.sm_count;
  a.encode_tensor_map = caps.encode_tensor_map;
  return a;
}

/// sm_80+ (TF32/fp16 MMA, cp.async) with enough shared memory per block for the mma.sync kernel's
/// widest tile of these operands (3xTF32: ~108 KiB, not sm_86/sm_89).
bool device_runs_tc(const DeviceCaps& caps, TcConvArgs::Operands ops) {
  TcConvArgs widest;
  widest.Cout = 64;
  widest.operands = ops;
  return caps.cc_major >= 8 && tc_conv_smem_bytes(widest) <= caps.smem_per_block_optin;
}

/// The tensor-core kernel's split-K for `s` (its N: one image for batch invariance).
int tc_splits_for(const ConvShape& s, ConvMath math, const ConvChoice& choice, const DeviceCaps& caps) {
  TcConvArgs a = tc_args(s, math, choice, caps, nullptr, nullptr);
  return tc_conv_choose_splits(a, caps.sm_count);
}

const char* math_label(ConvMath m) {
  switch (m) {
    case ConvMath::fp32_strict:
      return "3xtf32 (fp32-accurate)";
    case ConvMath::tf32:
      return "tf32";
    case ConvMath::fp16:
      return "fp16";
  }
  return "?";
}

}  // namespace

bool batch_invariant(ConvImpl impl) { return impl != ConvImpl::cudnn; }

const char* to_string(ConvImpl impl) {
  switch (impl) {
    case ConvImpl::tensor_core:
      return "tensor_core";
    case ConvImpl::tc_transposed:
      return "tc_transposed";
    case ConvImpl::simt:
      return "simt";
    case ConvImpl::cudnn:
      return "cudnn";
    case ConvImpl::direct:
      return "direct";
  }
  return "?";
}

ConvChoice choose_conv(const ConvShape& one_image, ConvMath math, const DeviceCaps& caps, bool batch_invariant) {
  ConvShape s = one_image;
  s.N = 1;  // the shape of one image: nothing below depends on the batch
  const bool fp32 = math == ConvMath::fp32_strict;
  const bool implicit_gemm_shape = s.k == 3 && (s.transposed || s.pad == 1);
  const bool pointwise = s.k == 1 && !s.transposed && s.pad == 0;  // the resnet skip's 1x1
  const bool data_ok = s.dtype == (math == ConvMath::fp16 ? DType::f16 : DType::f32);
  ConvChoice c;
  if (s.H != s.W) {
    // Non-square layers: only the kernels whose every index keeps height and width apart (the
    // SIMT kernel in fp32, else the direct kernel; cuDNN, general by its API, when batch
    // invariance is off); the tiled tensor-core kernels are not tested on them.
    c.impl = fp32 && s.dtype == DType::f32 && implicit_gemm_shape && s.Cin % 8 == 0 && s.Cout % 32 == 0
                 ? ConvImpl::simt
                 : ConvImpl::direct;
    if (!batch_invariant) {
      c.fallback = c.impl;
      c.impl = ConvImpl::cudnn;
    }
    return c;
  }
  c.wgmma = caps.wgmma && s.Cout % 64 == 0 && !pointwise;  // the 1x1 runs on mma.sync only
  TcConvArgs probe = tc_args(s, math, c, caps, nullptr, nullptr);
  const bool tc_ok =
      (implicit_gemm_shape || pointwise) && data_ok && tc_conv_shape_ok(probe) && device_runs_tc(caps, probe.operands);
  // the transposed conv as one GEMM per tile: wgmma on Hopper, else mma.sync (sm_80+, with the
  // shared memory of its shallowest pipeline) where a tile has at least 64 cells: below, most of
  // its 128 MMA rows idle and the four phase GEMMs of tc_conv, which pack several images' pixels
  // into a tile, are faster (H100, mma.sync, 4 x 4 -> 9 x 9, 512 channels, batch 32: 0.072 against
  // 0.041 ms in fp16, 0.140 against 0.066 in tf32; from 8 x 8 on (81 cells), 1.0-1.85x faster;
  // session 14). 64 cells: inputs of 7 x 7 and up. 3xTF32: wgmma only (its mma.sync twin has no
  // three-product mode; tc_conv's phase GEMMs run it elsewhere), from 8 x 8 inputs up (H100, auto,
  // tc_conv's phase GEMMs -> the tile kernel, session 16: ffhq1024-f b64.conv0 0.104 -> 0.090 ms at
  // batch 1, 1.951 -> 1.415 at 32; b32.conv0 0.042 -> 0.049 and 0.810 -> 0.482; 8 x 8 0.026 -> 0.046 at
  // batch 1 but 0.373 -> 0.167 at 32 and 1.348 -> 0.641 for paper256's at 128, so taken for throughput;
  // 4 x 4 slower at every batch: 0.023 -> 0.046, 0.113 -> 0.164, paper256 0.416 -> 0.634).
  const bool tconv_wgmma = caps.wgmma && caps.encode_tensor_map != nullptr;
  ConvChoice tc_choice = c;
  tc_choice.wgmma = tconv_wgmma;
  const TcTconvArgs tprobe = tconv_args(s, math, tc_choice, caps, nullptr, nullptr);
  int tile_rows = 0, tile_cols = 0;
  if (s.transposed) tc_tconv_tile(s.H, s.W, &tile_rows, &tile_cols);
  const bool tconv_mma = !fp32 && caps.cc_major >= 8 && tc_tconv_mma_smem(tprobe) <= caps.smem_per_block_optin &&
                         tile_rows * tile_cols >= 64;
  const bool tconv_wgmma_x3 = tconv_wgmma && std::min(s.H, s.W) >= 8;
  const bool tconv_ok = s.transposed && s.k == 3 && data_ok && tc_tconv_shape_ok(tprobe) &&
                        (fp32 ? tconv_wgmma_x3 : tconv_wgmma || tconv_mma);
  if (tconv_ok) {
    c = tc_choice;
    c.impl = ConvImpl::tc_transposed;
  } else if (tc_ok) {
    c.impl = ConvImpl::tensor_core;
    c.splits = tc_splits_for(s, math, c, caps);
  } else if (fp32 && s.dtype == DType::f32 && implicit_gemm_shape && s.Cin % 8 == 0 && s.Cout % 32 == 0) {
    c.impl = ConvImpl::simt;
  } else {
    c.impl = ConvImpl::direct;
  }
  if (batch_invariant) return c;
  // Batch invariance off: the choices before it (faster, not batch-invariant).
  if (c.impl == ConvImpl::tensor_core) c.splits_per_batch = true;
  if (!fp32 || c.impl == ConvImpl::direct) {
    c.fallback = c.impl;
    c.impl = ConvImpl::cudnn;
  }
  return c;
}

struct Conv::Part {
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
      SG2_CUDNN_CHECK(
          cudnnSetConvolution2dDescriptor(conv, 0, 0, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    } else {
      SG2_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NHWC, s.Cout, s.Cin, s.k, s.k));
      SG2_CUDNN_CHECK(
          cudnnSetConvolution2dDescriptor(conv, s.pad, s.pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    }
    SG2_CUDNN_CHECK(
        cudnnSetConvolutionMathType(conv, math == ConvMath::fp32_strict ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
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

Conv::Conv(cudnnHandle_t handle, const ConvShape& s, ConvMath math, const ConvChoice& choice, const DeviceCaps& caps,
           size_t workspace_limit)
    : handle_(handle), shape_(s), math_(math), choice_(choice), caps_(caps) {
  if (s.N <= 0) fail(ErrorKind::internal, "Conv: empty batch");
  // Samples per cuDNN call: every tensor under 2^31 elements.
  const int64_t per_sample = std::max<int64_t>(int64_t(s.H) * s.W * s.Cin, int64_t(s.out_h()) * s.out_w() * s.Cout);
  chunk_ = static_cast<int>(std::min<int64_t>(s.N, std::max<int64_t>(1, (int64_t(1) << 31) / 2 / per_sample)));
  if (choice.impl == ConvImpl::cudnn) {
    if (!handle) fail(ErrorKind::internal, "Conv: a cuDNN choice without a cuDNN handle");
    add_cudnn_candidates(workspace_limit);
    add_own_candidate(choice.fallback, workspace_limit);
  } else {
    add_own_candidate(choice.impl, workspace_limit);
  }
  for (const Candidate& c : candidates_) max_workspace_ = std::max(max_workspace_, c.workspace);
}

void Conv::add_own_candidate(ConvImpl impl, size_t workspace_limit) {
  const ConvShape& s = shape_;
  switch (impl) {
    case ConvImpl::tensor_core: {
      // Split-K as the recipe chose it for one image, so that every batch size sums in the same
      // order (batch invariance off: tuned to this batch). Where this batch's partial sums would
      // not fit the workspace limit the batch runs in pieces (never fewer splits).
      tc_splits_ = choice_.splits;
      if (choice_.splits_per_batch) tc_splits_ = tc_splits_for(s, math_, choice_, caps_);
      TcConvArgs one = tc_args(s, math_, choice_, caps_, nullptr, nullptr);
      one.N = 1;
      one.splits = tc_splits_;
      const size_t per_image = tc_conv_workspace(one);
      tc_chunk_ = per_image == 0
                      ? s.N
                      : static_cast<int>(std::min<size_t>(s.N, std::max<size_t>(1, workspace_limit / per_image)));
      if (per_image <= workspace_limit)
        candidates_.push_back(Candidate{ConvImpl::tensor_core, 0, CUDNN_FMA_MATH, per_image * size_t(tc_chunk_)});
      break;
    }
    case ConvImpl::tc_transposed:
    case ConvImpl::simt:
      candidates_.push_back(Candidate{impl, 0, CUDNN_FMA_MATH, 0});
      break;
    case ConvImpl::cudnn:
    case ConvImpl::direct:
      break;  // direct: the fallback when no candidate runs (selected_ = -1)
  }
}

void Conv::add_cudnn_candidates(size_t workspace_limit) {
  const ConvShape& s = shape_;
  const ConvMath math = math_;
  // Candidates from the heuristics for the largest part, filtered; the remainder part is checked
  // when running. When every candidate wants more workspace than the limit, the batch is split
  // into smaller cuDNN calls (the workspace of these algorithms grows with the batch).
  const size_t before = candidates_.size();
  for (;;) {
    parts_.clear();
    candidates_.resize(before);
    try {
      parts_.push_back(std::make_unique<Part>(s, chunk_, math));
      if (s.N % chunk_ != 0) parts_.push_back(std::make_unique<Part>(s, s.N % chunk_, math));
    } catch (const Error&) {
      parts_.clear();  // cuDNN refuses the shape: another implementation will run it
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
      for (size_t i = before; i < candidates_.size(); ++i)
        if (candidates_[i].cudnn_algo == algo && candidates_[i].cudnn_math == m) return;
      candidates_.push_back(Candidate{ConvImpl::cudnn, algo, m, mem});
    };
    if (s.transposed) {
      int max_count = 0, returned = 0;
      SG2_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle_, &max_count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
      SG2_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, p.w, p.x, p.conv, p.y, max_count, &returned,
                                                                  perf.data()));
      for (int i = 0; i < returned; ++i) {
        const auto& r = perf[static_cast<size_t>(i)];
        if (r.algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || r.algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING)
          continue;
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
    if (candidates_.size() > before || !too_big || chunk_ == 1) break;
    chunk_ = (chunk_ + 1) / 2;
  }
}

Conv::~Conv() = default;

bool Conv::try_run(int ci, const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes,
                   cudaStream_t stream) const {
  const Candidate& c = candidates_[static_cast<size_t>(ci)];
  if (c.workspace > workspace_bytes) return false;
  switch (c.impl) {
    case ConvImpl::tensor_core: {
      // in pieces of tc_chunk_ images where the split-K partials of the whole batch would not fit
      const size_t esz = dtype_size(shape_.dtype);
      const size_t x_per = size_t(shape_.H) * shape_.W * shape_.Cin * esz;
      const size_t y_per = size_t(shape_.out_h()) * shape_.out_w() * shape_.Cout * esz;
      for (int n0 = 0; n0 < shape_.N; n0 += tc_chunk_) {
        TcConvArgs a = tc_args(shape_, math_, choice_, caps_, static_cast<const char*>(x) + n0 * x_per,
                               static_cast<char*>(y) + n0 * y_per);
        a.N = std::min(tc_chunk_, shape_.N - n0);
        a.w_hi = w_hi_;
        a.w_lo = w_lo_;
        a.splits = tc_splits_;
        a.partial = static_cast<float*>(workspace);
        if (!tc_conv_supports(a)) return false;
        tc_conv(a, stream);
      }
      return true;
    }
    case ConvImpl::tc_transposed: {
      TcTconvArgs a = tconv_args(shape_, math_, choice_, caps_, x, y);
      a.w = w_tconv_;
      a.w_lo = w_tconv_lo_;
      if (!tc_tconv_supports(a)) return false;
      tc_tconv(a, stream);
      return true;
    }
    case ConvImpl::simt: {
      SimtConvArgs a = implicit_gemm_args<SimtConvArgs>(shape_, x, y);
      a.w = static_cast<const float*>(w);
      if (!conv2d_simt_supports(a)) return false;
      conv2d_simt(a, stream);
      return true;
    }
    case ConvImpl::direct:
      return false;  // never a candidate: run() falls back to it
    case ConvImpl::cudnn:
      break;
  }
  const size_t esz = dtype_size(shape_.dtype);
  const int64_t x_per = int64_t(shape_.H) * shape_.W * shape_.Cin;
  const int64_t y_per = int64_t(shape_.out_h()) * shape_.out_w() * shape_.Cout;
  const float one = 1.0f, zero = 0.0f;
  for (int n0 = 0; n0 < shape_.N; n0 += chunk_) {
    const Part& p = *parts_[shape_.N - n0 >= chunk_ ? 0 : 1];
    const char* xp = static_cast<const char*>(x) + n0 * x_per * esz;
    char* yp = static_cast<char*>(y) + n0 * y_per * esz;
    cudnnStatus_t st = cudnnSetConvolutionMathType(p.conv, c.cudnn_math);
    if (st != CUDNN_STATUS_SUCCESS) return false;
    if (shape_.transposed) {
      st = cudnnConvolutionBackwardData(handle_, &one, p.w, w, p.x, xp, p.conv,
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(c.cudnn_algo), workspace,
                                        workspace_bytes, &zero, p.y, yp);
    } else {
      st = cudnnConvolutionForward(handle_, &one, p.x, xp, p.w, w, p.conv,
                                   static_cast<cudnnConvolutionFwdAlgo_t>(c.cudnn_algo), workspace, workspace_bytes,
                                   &zero, p.y, yp);
    }
    if (st != CUDNN_STATUS_SUCCESS) return false;
  }
  return true;
}

void Conv::select(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  // The first candidate that runs, in the table's order (the same choice on every run).
  selected_ = -1;
  for (int i = 0; i < static_cast<int>(candidates_.size()); ++i) {
    const ConvImpl impl = candidates_[static_cast<size_t>(i)].impl;
    if (impl == ConvImpl::tensor_core && (w_hi_ == nullptr || (math_ == ConvMath::fp32_strict && w_lo_ == nullptr)))
      continue;
    if (impl == ConvImpl::tc_transposed &&
        (w_tconv_ == nullptr || (math_ == ConvMath::fp32_strict && w_tconv_lo_ == nullptr)))
      continue;
    if (!try_run(i, x, w, y, workspace, workspace_bytes, stream)) continue;
    const cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) throw_cuda_error(e, "convolution (implementation trial)", __FILE__, __LINE__);
    selected_ = i;
    break;
  }
  selected_set_ = true;
}

size_t Conv::workspace() const { return selected_ >= 0 ? candidates_[static_cast<size_t>(selected_)].workspace : 0; }

ConvImpl Conv::impl() const {
  return selected_ >= 0 ? candidates_[static_cast<size_t>(selected_)].impl : ConvImpl::direct;
}

void Conv::run(const void* x, const void* w, void* y, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) const {
  if (!selected_set_) fail(ErrorKind::internal, "Conv::run before select");
  if (selected_ >= 0) {
    if (!try_run(selected_, x, w, y, workspace, workspace_bytes, stream))
      fail(ErrorKind::device, "a convolution refused to run after it ran before (", describe(), ")");
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

std::string Conv::describe() const { return selected_ < 0 ? "direct kernel" : describe_candidate(selected_); }

std::string Conv::describe_candidate(int i) const {
  const Candidate& c = candidates_.at(static_cast<size_t>(i));
  switch (c.impl) {
    case ConvImpl::simt:
      return "simt fp32 implicit gemm";
    case ConvImpl::tensor_core:
      return std::string("tensor-core implicit gemm, ") + math_label(math_) + " (" +
             (choice_.wgmma ? "wgmma" : "mma.sync") + ", split-k " + std::to_string(tc_splits_) + ")";
    case ConvImpl::tc_transposed:
      return std::string("tensor-core transposed conv, 4 phases per tile, ") + math_label(math_) +
             (choice_.wgmma ? " (wgmma, tma)" : " (mma.sync, cp.async)");
    case ConvImpl::direct:
      return "direct kernel";
    case ConvImpl::cudnn:
      break;
  }
  return std::string("cudnn ") + (shape_.transposed ? "bwd-data" : "fwd") + " algo " + std::to_string(c.cudnn_algo) +
         " (" + math_name(c.cudnn_math) + ", workspace " + std::to_string(c.workspace >> 20) + " MiB)";
}

}  // namespace sg2::cuda
