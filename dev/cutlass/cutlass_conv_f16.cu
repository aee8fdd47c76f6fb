// sg2 kernel runner: CUTLASS sm90 fprop configurations, fp16 operands and output, fp32 sums
// (cutlass_conv.h). The TF32 ones are in cutlass_conv_tf32.cu (one translation unit each: CUTLASS's
// templates take minutes to compile, and the build runs them in parallel).
#include "dev/cutlass/cutlass_conv_sm90.cuh"

namespace sg2::dev {

namespace cutlass_sm90 {
using H = cutlass::half_t;
using F16_128x128 = Fprop<H, Shape<_128, _128, Shape<_64>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F16_128x64 = Fprop<H, Shape<_128, _64, Shape<_64>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F16_128x128_c2 = Fprop<H, Shape<_128, _128, Shape<_64>>, Shape<_2, _1, _1>, Ws, EpiWs>;
using F16_64x128 = Fprop<H, Shape<_64, _128, Shape<_64>>, Shape<_1, _1, _1>, Ws, EpiWs>;
}  // namespace cutlass_sm90

size_t cutlass_conv_workspace_f16(int i, const CutlassConvArgs& a) {
  using namespace cutlass_sm90;
  switch (i) {
    case 0:
      return F16_128x128::workspace(a);
    case 1:
      return F16_128x64::workspace(a);
    case 2:
      return F16_128x128_c2::workspace(a);
    case 3:
      return F16_64x128::workspace(a);
    default:
      return 0;
  }
}

bool cutlass_conv_run_f16(int i, const CutlassConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) {
  using namespace cutlass_sm90;
  switch (i) {
    case 0:
      return F16_128x128::run(a, ws, ws_bytes, stream);
    case 1:
      return F16_128x64::run(a, ws, ws_bytes, stream);
    case 2:
      return F16_128x128_c2::run(a, ws, ws_bytes, stream);
    case 3:
      return F16_64x128::run(a, ws, ws_bytes, stream);
    default:
      return false;
  }
}

}  // namespace sg2::dev
