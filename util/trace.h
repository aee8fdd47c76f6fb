// sg2 util: the start-up trace. With SG2_TRACE=1 in the environment, each step a run takes before
// its first image (reading the checkpoint, the CUDA context, the libraries, the weights' upload, the
// kernels' choice, the graph capture) prints one line on stderr: "sg2 trace: <seconds since the
// process started, wall clock> <step>". Without it, trace_step costs one branch.
#pragma once

namespace sg2::detail {

/// True when SG2_TRACE is set to 1 (read once).
bool trace_enabled();

/// Prints "sg2 trace: %8.3f s  <what>" on stderr when trace_enabled(); `what` is the caller's text
/// (a literal or sg2's own words, never text from a file).
void trace_step(const char* what);

}  // namespace sg2::detail
