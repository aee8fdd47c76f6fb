// sg2 kernel runner: CUTLASS sm90 fprop configurations, fp16 operands and output, fp32 sums
// (cutlass_conv.h). The TF32 ones are in cutlass_conv_tf32.cu (one translation unit each: CUTLASS's
// templates take minutes to compile, and the build runs them in parallel).
#include "dev/cutlass/cutlass_conv_sm90.cuh"

namespace sg2::dev::cutlass_sm90 {

namespace {
using H = cutlass::half_t;
using F16_128x128 = Fprop<H, Shape<_128, _128, Shape<_64>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F16_128x64 = Fprop<H, Shape<_128, _64, Shape<_64>>, Shape<_1, _1, _1>, Ws, EpiWs>;
using F16_128x128_c2 = Fprop<H, Shape<_128, _128, Shape<_64>>, Shape<_2, _1, _1>, Ws, EpiWs>;
using F16_64x128 = Fprop<H, Shape<_64, _128, Shape<_64>>, Shape<_1, _1, _1>, Ws, EpiWs>;
const Config kF16[] = {config<F16_128x128>("128x128x64"), config<F16_128x64>("128x64x64"),
                       config<F16_128x128_c2>("128x128x64 cluster 2x1"), config<F16_64x128>("64x128x64")};
}  // namespace

const Config* f16_configs(int* count) {
  *count = int(sizeof kF16 / sizeof kF16[0]);
  return kF16;
}

}  // namespace sg2::dev::cutlass_sm90
