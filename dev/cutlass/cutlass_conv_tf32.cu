// sg2 kernel runner: CUTLASS sm90 fprop configurations, fp32 operands multiplied as TF32, fp32 sums
// and output (cutlass_conv.h), and the configuration table shared with cutlass_conv_f16.cu.
#include <cuda_runtime_api.h>

#include "dev/cutlass/cutlass_conv_sm90.cuh"

namespace sg2::dev {

namespace cutlass_sm90 {
using F32_128x128 = Fprop<float, Shape<_128, _128, Shape<_32>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F32_128x64 = Fprop<float, Shape<_128, _64, Shape<_32>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F32_128x128_c2 = Fprop<float, Shape<_128, _128, Shape<_32>>, Shape<_2, _1, _1>, Ws, EpiWs>;
}  // namespace cutlass_sm90

size_t cutlass_conv_workspace_f16(int i, const CutlassConvArgs& a);
bool cutlass_conv_run_f16(int i, const CutlassConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream);

namespace {
const char* const kF16Names[] = {"128x128x64", "128x64x64", "128x128x64 cluster 2x1", "64x128x64"};
const char* const kF32Names[] = {"128x128x32", "128x64x32", "128x128x32 cluster 2x1"};

bool on_sm90() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major == 9;
}
}  // namespace

int cutlass_conv_count(bool f16) { return f16 ? 4 : 3; }

std::string cutlass_conv_name(int i, bool f16) {
  return std::string("cutlass sm90 fprop ") + (f16 ? "f16 " : "tf32 ") + (f16 ? kF16Names[i] : kF32Names[i]);
}

size_t cutlass_conv_workspace(int i, const CutlassConvArgs& a) {
  using namespace cutlass_sm90;
  if (!on_sm90()) return 0;
  if (a.f16) return cutlass_conv_workspace_f16(i, a);
  switch (i) {
    case 0:
      return F32_128x128::workspace(a);
    case 1:
      return F32_128x64::workspace(a);
    case 2:
      return F32_128x128_c2::workspace(a);
    default:
      return 0;
  }
}

bool cutlass_conv_run(int i, const CutlassConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) {
  using namespace cutlass_sm90;
  if (!on_sm90()) return false;
  if (a.f16) return cutlass_conv_run_f16(i, a, ws, ws_bytes, stream);
  switch (i) {
    case 0:
      return F32_128x128::run(a, ws, ws_bytes, stream);
    case 1:
      return F32_128x64::run(a, ws, ws_bytes, stream);
    case 2:
      return F32_128x128_c2::run(a, ws, ws_bytes, stream);
    default:
      return false;
  }
}

}  // namespace sg2::dev
