// sg2 kernel runner: one CUTLASS 3.x sm90 fprop configuration (cutlass_conv.h), instantiated by
// cutlass_conv_f16.cu and cutlass_conv_tf32.cu. The mainloop is CUTLASS's TMA im2col + wgmma
// warp-specialized implicit GEMM (conv/collective/sm90_implicit_gemm_gmma_ss_warpspecialized.hpp), the
// epilogue a plain store of the fp32 sums (alpha 1, no source tensor), the tile scheduler the sm90
// conv kernel's non-persistent one (no split-K or stream-K: every output's sum runs over K in one
// order at every batch).
#pragma once

// CUTLASS's conv collectives use cutlass::KernelHardwareInfo without including its header: it comes
// first (its own block, so that include sorting keeps it there)
#include <cutlass/cutlass.h>
#include <cutlass/kernel_hardware_info.hpp>

#include <cute/tensor.hpp>
#include <cutlass/conv/collective/collective_builder.hpp>
#include <cutlass/conv/convnd_problem_shape.hpp>
#include <cutlass/conv/device/conv_universal_adapter.hpp>
#include <cutlass/conv/dispatch_policy.hpp>
#include <cutlass/conv/kernel/conv_universal.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>

#include "dev/cutlass/cutlass_conv.h"
#include "sg2/error.h"

namespace sg2::dev::cutlass_sm90 {

using namespace cute;

template <class Element, class Tile, class Cluster, class Schedule, class EpiSchedule>
struct Fprop {
  using ElementOut = Element;
  static constexpr int kAlign = 128 / cutlass::sizeof_bits<Element>::value;
  using Layout = cutlass::layout::TensorNHWC;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, Layout, kAlign, ElementOut, Layout, kAlign,
      EpiSchedule>::CollectiveOp;
  using Mainloop = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop, Element, Layout, kAlign,
      Element, Layout, kAlign, float, Tile, Cluster,
      cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      Schedule>::CollectiveOp;
  using Problem =
      cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, Mainloop::DispatchPolicy::NumSpatialDimensions>;
  using Kernel = cutlass::conv::kernel::ConvUniversal<Problem, Mainloop, Epilogue>;
  using Op = cutlass::conv::device::ConvUniversalAdapter<Kernel>;

  static typename Op::Arguments arguments(const CutlassConvArgs& a) {
    const int OH = a.H + 2 * a.pad - a.k + 1, OW = a.W + 2 * a.pad - a.k + 1;
    (void)OH;
    (void)OW;
    Problem problem(cutlass::conv::Mode::kCrossCorrelation, {a.N, a.H, a.W, a.Cin}, {a.Cout, a.k, a.k, a.Cin},
                    {a.pad, a.pad}, {a.pad, a.pad}, {1, 1}, {1, 1}, 1);
    typename Kernel::StrideD stride_d;
    cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideD{})>{},
                   [&](auto i) { cute::get<0, i>(stride_d) = problem.stride_C[Problem::RankT - 2 - i]; });
    typename Op::Arguments args{problem,
                                {static_cast<const Element*>(a.x), static_cast<const Element*>(a.w)},
                                {{1.0f, 0.0f}, nullptr, stride_d, static_cast<ElementOut*>(a.y), stride_d}};
    return args;
  }
  static size_t workspace(const CutlassConvArgs& a) {
    const auto args = arguments(a);
    if (Op::can_implement(args) != cutlass::Status::kSuccess) return 0;
    return Op::get_workspace_size(args) + 1;  // +1: "can run" even when it needs none
  }
  static bool run(const CutlassConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) {
    const auto args = arguments(a);
    if (Op::can_implement(args) != cutlass::Status::kSuccess) return false;
    if (Op::get_workspace_size(args) > ws_bytes)
      fail(ErrorKind::internal, "cutlass conv: workspace of ", Op::get_workspace_size(args), " bytes, ", ws_bytes,
           " given");
    Op op;
    if (op.initialize(args, ws, stream) != cutlass::Status::kSuccess) return false;
    const cutlass::Status st = op.run(stream);
    if (st != cutlass::Status::kSuccess)
      fail(ErrorKind::internal, "cutlass conv: launch failed (", cutlassGetStatusString(st), "; ",
           cudaGetErrorString(cudaGetLastError()), ")");
    return true;
  }
};

/// One configuration of the table the runner walks: its name and its entry points.
struct Config {
  const char* name;
  size_t (*workspace)(const CutlassConvArgs&);
  bool (*run)(const CutlassConvArgs&, void*, size_t, cudaStream_t);
};
template <class Op>
constexpr Config config(const char* name) {
  return {name, &Op::workspace, &Op::run};
}
/// The fp16 table (cutlass_conv_f16.cu); its size in *count.
const Config* f16_configs(int* count);

// CUTLASS's sm90 conv has the one schedule (a TMA producer warp and one consumer warpgroup per
// tile, not persistent: the cooperative and ping-pong schedules are GEMM-only there)
using Ws = cutlass::conv::KernelImplicitTmaWarpSpecializedSm90;
using EpiWs = cutlass::epilogue::TmaWarpSpecialized;

}  // namespace sg2::dev::cutlass_sm90
