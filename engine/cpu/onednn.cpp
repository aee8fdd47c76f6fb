// sg2 CPU backend: oneDNN convolutions and sgemm (onednn.h). Written for the oneDNN 2.x API
// (Debian 12's libdnnl-dev 2.6) and the 3.x API (primitive descriptors built without op
// descriptors).
#include "engine/cpu/onednn.h"

#include <dnnl.h>
#include <dnnl.hpp>

#include <sstream>

#include "sg2/error.h"

#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#elif DNNL_CPU_RUNTIME != DNNL_RUNTIME_SEQ
#error "sg2 needs oneDNN built with the OpenMP or the sequential CPU runtime (Debian's libdnnl-dev is)"
#endif

namespace sg2::cpu {

namespace {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

thread_local std::unique_ptr<dnnl::stream> t_stream;

dnnl::stream& worker_stream() {
  if (!t_stream) fail(ErrorKind::internal, "oneDNN used on a thread that is not a CPU backend worker");
  return *t_stream;
}

[[noreturn]] void onednn_fail(const char* what, const dnnl::error& e) {
  fail(ErrorKind::internal, "oneDNN ", what, " failed: ", e.what(), " (status ", static_cast<int>(e.status), ")");
}

}  // namespace

void onednn_init_worker() {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  omp_set_num_threads(1);  // this thread's OpenMP teams: oneDNN runs inline on it
#endif
  try {
    t_stream = std::make_unique<dnnl::stream>(cpu_engine());
  } catch (const dnnl::error& e) {
    onednn_fail("stream creation", e);
  }
}

std::string onednn_description() {
  const dnnl_version_t* v = dnnl_version();
  std::ostringstream s;
  s << "oneDNN " << v->major << "." << v->minor << "." << v->patch;
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  s << " (OpenMP runtime, one thread per call)";
#else
  s << " (sequential runtime)";
#endif
  return s.str();
}

void sgemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
           float* C, int64_t ldc) {
  const dnnl_status_t st = dnnl_sgemm('N', trans_b ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
  if (st != dnnl_success)
    fail(ErrorKind::internal, "oneDNN sgemm (", M, "x", N, "x", K, ") failed with status ", static_cast<int>(st));
}

struct ConvBand::Impl {
  dnnl::primitive prim;
  dnnl::memory::desc src, wei, dst, scratch;
  std::string impl_name;
  dnnl::memory::dims wei_dims;
};

ConvBand::ConvBand(int in_rows, int in_cols, int cin, int cout, int kh, int kw) : impl_(std::make_unique<Impl>()) {
  using dnnl::memory;
  out_rows_ = in_rows - kh + 1;
  out_cols_ = in_cols - kw + 1;
  if (in_rows < 1 || in_cols < 1 || cin < 1 || cout < 1 || kh < 1 || kw < 1 || out_rows_ < 1 || out_cols_ < 1)
    fail(ErrorKind::internal, "convolution band of bad shape ", in_rows, "x", in_cols, "x", cin, " -> ", cout,
         " kernel ", kh, "x", kw);
  Impl& m = *impl_;
  m.wei_dims = {cout, cin, kh, kw};
  m.src = memory::desc({1, cin, in_rows, in_cols}, memory::data_type::f32, memory::format_tag::nhwc);
  m.dst = memory::desc({1, cout, out_rows_, out_cols_}, memory::data_type::f32, memory::format_tag::nhwc);
  const memory::desc wany(m.wei_dims, memory::data_type::f32, memory::format_tag::any);
  const memory::dims stride{1, 1}, pad{0, 0};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  try {
#if DNNL_VERSION_MAJOR >= 3
    dnnl::convolution_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::convolution_direct, m.src, wany, m.dst, stride, pad,
                                                 pad, attr);
#else
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, m.src,
                                      wany, m.dst, stride, pad, pad);
    dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
#endif
    m.wei = pd.weights_desc();
    m.scratch = pd.scratchpad_desc();
    m.impl_name = pd.impl_info_str();
    m.prim = dnnl::convolution_forward(pd);
  } catch (const dnnl::error& e) {
    onednn_fail("convolution setup", e);
  }
}

ConvBand::~ConvBand() = default;
ConvBand::ConvBand(ConvBand&&) noexcept = default;
ConvBand& ConvBand::operator=(ConvBand&&) noexcept = default;

size_t ConvBand::scratchpad_bytes() const { return impl_->scratch.get_size(); }

std::string ConvBand::implementation() const { return impl_->impl_name; }

std::vector<float> ConvBand::prepare_weights(const float* weight) const {
  using dnnl::memory;
  const Impl& m = *impl_;
  std::vector<float> out((m.wei.get_size() + sizeof(float) - 1) / sizeof(float));
  try {
    const memory::desc plain(m.wei_dims, memory::data_type::f32, memory::format_tag::oihw);
    memory src(plain, cpu_engine(), const_cast<float*>(weight));
    memory dst(m.wei, cpu_engine(), out.data());
    dnnl::reorder(src, dst).execute(worker_stream(), src, dst);
    worker_stream().wait();
  } catch (const dnnl::error& e) {
    onednn_fail("weight reorder", e);
  }
  return out;
}

void ConvBand::run(const float* in, const float* weights, float* out, void* scratchpad) const {
  const Impl& m = *impl_;
  try {
    const auto& eng = cpu_engine();
    dnnl::memory src(m.src, eng, const_cast<float*>(in));
    dnnl::memory wei(m.wei, eng, const_cast<float*>(weights));
    dnnl::memory dst(m.dst, eng, out);
    dnnl::memory scr(m.scratch, eng, scratchpad);
    dnnl::stream& s = worker_stream();
    m.prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scr}});
    s.wait();
  } catch (const dnnl::error& e) {
    onednn_fail("convolution", e);
  }
}

}  // namespace sg2::cpu
