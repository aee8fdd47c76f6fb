// sg2 kernel runner: CUTLASS sm90 fprop configurations, fp32 operands multiplied as TF32, fp32 sums
// and output (cutlass_conv.h), and the entry points over both tables (cutlass_conv_f16.cu's too).
#include <cuda_runtime_api.h>

#include "dev/cutlass/cutlass_conv_sm90.cuh"

namespace sg2::dev {

namespace {
using namespace cutlass_sm90;
using F32_128x128 = Fprop<float, Shape<_128, _128, Shape<_32>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F32_128x64 = Fprop<float, Shape<_128, _64, Shape<_32>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F32_128x128_c2 = Fprop<float, Shape<_128, _128, Shape<_32>>, Shape<_2, _1, _1>, Ws, EpiWs>;
const Config kF32[] = {config<F32_128x128>("128x128x32"), config<F32_128x64>("128x64x32"),
                       config<F32_128x128_c2>("128x128x32 cluster 2x1")};

/// Configuration i of the fp16 or TF32 table, or null.
const Config* config_at(int i, bool f16) {
  int n = int(sizeof kF32 / sizeof kF32[0]);
  const Config* table = f16 ? f16_configs(&n) : kF32;
  return i >= 0 && i < n ? &table[i] : nullptr;
}

bool on_sm90() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major == 9;
}
}  // namespace

int cutlass_conv_count(bool f16) {
  int n = int(sizeof kF32 / sizeof kF32[0]);
  if (f16) f16_configs(&n);
  return n;
}

std::string cutlass_conv_name(int i, bool f16) {
  const Config* c = config_at(i, f16);
  return std::string("cutlass sm90 fprop ") + (f16 ? "f16 " : "tf32 ") + (c ? c->name : "?");
}

size_t cutlass_conv_workspace(int i, const CutlassConvArgs& a) {
  const Config* c = config_at(i, a.f16);
  return c && on_sm90() ? c->workspace(a) : 0;
}

bool cutlass_conv_run(int i, const CutlassConvArgs& a, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  const Config* c = config_at(i, a.f16);
  return c && on_sm90() && c->run(a, workspace, workspace_bytes, stream);
}

}  // namespace sg2::dev
