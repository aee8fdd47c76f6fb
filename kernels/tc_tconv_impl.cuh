// sg2 CUDA kernels: what the two implementations of the transposed convolution share
// (kernels/tc_tconv.h): the tile grid of a launch, its work items, and the Hopper launcher.
// Internal: include from kernels/tc_tconv.cu and kernels/tc_tconv_sm90.cu only.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/tc_tconv.h"

namespace sg2::cuda {

/// The tile grid of one launch (host-computed by tc_tconv_geom; the kernels' view of tc_tconv_tile).
struct TconvGeom {
  int th, tw;            // cells per tile: rows, columns
  int tiles_x, tiles_y;  // tiles per image
  int ct;                // channel tiles (Cout / bnc)
  int items;             // N * tiles_y * tiles_x * ct
  int nchunks;           // Cin / input channels per chunk
  int halo_bytes;        // (th + 1) (tw + 1) x the chunk's bytes per pixel
};

/// The grid of a launch whose chunks carry `chunk_bytes` bytes of input channels per pixel.
TconvGeom tc_tconv_geom(const TcTconvArgs& a, int chunk_bytes);

/// One work item: image n, the tile whose first cell is (i0, j0), channel tile ct; items run
/// channel tile fastest, then tile columns, rows and images.
struct TconvItem {
  int n, i0, j0, ct;
};
__device__ __forceinline__ TconvItem tconv_item(const TconvGeom& g, int item) {
  TconvItem it;
  it.ct = item % g.ct;
  int t = item / g.ct;
  const int tx = t % g.tiles_x;
  t /= g.tiles_x;
  const int ty = t % g.tiles_y;
  it.n = t / g.tiles_y;
  it.i0 = ty * g.th;
  it.j0 = tx * g.tw;
  return it;
}

/// The Hopper implementation (kernels/tc_tconv_sm90.cu) over the grid g (chunks of 128 bytes);
/// tc_tconv has checked the arguments.
void tc_tconv_wgmma(const TcTconvArgs& a, const TconvGeom& g, cudaStream_t stream);

}  // namespace sg2::cuda
