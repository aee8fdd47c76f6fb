// sg2 CUDA backend: the tuning switches from the environment (tuning.h).
#include "engine/cuda/tuning.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "sg2/error.h"

namespace sg2::cuda {

namespace {

/// The value of `name`, or "" when unset.
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

/// A switch that is set to `on`, unset, or (an error) something else.
bool flag(const char* name, const char* on) {
  const std::string v = env(name);
  if (v.empty()) return false;
  if (v == on) return true;
  fail(ErrorKind::invalid_argument, "environment variable ", name, "='", v, "': expected ", on, " or unset");
}

}  // namespace

CudaTuning CudaTuning::from_environment() {
  CudaTuning t;
  const std::string fp32 = env("SG2_FP32_CONV");
  if (fp32 == "simt")
    t.fp32_conv = Fp32Conv::simt;
  else if (fp32 == "cudnn")
    t.fp32_conv = Fp32Conv::cudnn;
  else if (!fp32.empty())
    fail(ErrorKind::invalid_argument, "environment variable SG2_FP32_CONV='", fp32, "': expected simt, cudnn or unset");
  const std::string conv = env("SG2_CONV");
  if (conv == "direct")
    t.conv_policy = ConvPolicy::direct_only;
  else if (conv == "cudnn")
    t.conv_policy = ConvPolicy::allow_cudnn;
  else if (conv == "cudnn-first")
    t.conv_policy = ConvPolicy::cudnn_first;
  else if (!conv.empty())
    fail(ErrorKind::invalid_argument, "environment variable SG2_CONV='", conv,
         "': expected direct, cudnn, cudnn-first or unset");
  t.tf32x3_wgmma = !flag("SG2_TF32X3_KERNEL", "mma");
  t.tf32x3_tma_activations = !flag("SG2_TF32X3_TMA_X", "0");
  t.fused_conv1 = !flag("SG2_UNFUSED_CONV1", "1");
  t.separable_upconv = !flag("SG2_UPCONV_2D", "1");
  t.shared_table_epilogue = !flag("SG2_EPILOGUE_GENERAL", "1");
  t.auto_fp32_as_tf32 = flag("SG2_AUTO_FP32_MATH", "tf32");
  const std::string lim = env("SG2_CUDA_MEMORY_LIMIT_MB");
  if (!lim.empty()) {
    char* end = nullptr;
    const double mb = std::strtod(lim.c_str(), &end);
    if (end == lim.c_str() || *end != '\0' || !(mb > 0) || mb > 1e9)
      fail(ErrorKind::invalid_argument, "environment variable SG2_CUDA_MEMORY_LIMIT_MB='", lim,
           "': expected a positive number of MiB");
    t.memory_limit_bytes = static_cast<size_t>(mb * 1048576.0);
  }
  return t;
}

}  // namespace sg2::cuda
