#!/usr/bin/env bash
# Configures and builds sg2 into build/ (Release). Extra arguments go to cmake's configure step.
# Environment:
#   SG2_CUDA=ON|OFF       the CUDA backend (default: ON when nvcc is found, as CMake decides);
#                         passed explicitly, so a build directory never keeps a stale choice
#   SG2_CUDA_ARCHITECTURES GPU architectures; an explicit value always wins. Default: with a GPU
#                         that nvidia-smi lists, CMakeLists.txt's choice (each listed GPU's compute
#                         capability); in CI (CI set) "86-real;90"; on a machine with the CUDA
#                         toolkit but no GPU one architecture, "90" (with its sm_90a kernel), so a
#                         build there compiles the kernels once instead of four times (for every
#                         supported GPU: SG2_CUDA_ARCHITECTURES="80-real;86-real;89-real;90")
#   SG2_TESTS=ON|OFF      the GoogleTest suites (default ON; scripts/demo.sh builds without them)
#   SG2_CMAKE_ARGS        extra configure arguments, e.g. SG2_CMAKE_ARGS=-DSG2_ONEDNN=OFF
#   SG2_BUILD_DIR (default build), SG2_JOBS (default: number of cores).
#   SG2_WERROR=ON|OFF     warnings as errors (default ON when CI is set): -Werror for C++ and nvcc's
#                         -Werror all-warnings; and the build fails when its log holds a warning or
#                         a ptxas performance notice about wgmma (serialized MMAs, compiler-inserted
#                         waits: "(C75..)"), which are not warnings to nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SG2_BUILD_DIR:-build}
args=(-DCMAKE_BUILD_TYPE=Release)
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
cuda=${SG2_CUDA:-}
if [[ -z "$cuda" ]]; then
  cuda=OFF
  if command -v nvcc >/dev/null || [[ -n "${CUDACXX:-}" ]] || [[ -x /usr/local/cuda/bin/nvcc ]]; then cuda=ON; fi
fi
args+=("-DSG2_CUDA=$cuda" "-DSG2_BUILD_TESTS=${SG2_TESTS:-ON}")
werror=${SG2_WERROR:-}
if [[ -z "$werror" ]]; then werror=OFF; [[ -n "${CI:-}" ]] && werror=ON; fi
args+=("-DSG2_WERROR=$werror")
gpu_listed() { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }
if [[ -n "${SG2_CUDA_ARCHITECTURES:-}" ]]; then
  args+=("-DSG2_CUDA_ARCHITECTURES=${SG2_CUDA_ARCHITECTURES}")
elif [[ -n "${CI:-}" ]]; then
  args+=("-DSG2_CUDA_ARCHITECTURES=86-real;90")   # CI: two architectures (multi-arch code paths) within 2 cores and 90 minutes
elif [[ "$cuda" == "ON" ]] && ! gpu_listed; then
  args+=("-DSG2_CUDA_ARCHITECTURES=90")   # no GPU to fit: one architecture, not four (a quarter of the kernel build)
  echo "sg2 build: no GPU found (nvidia-smi): CUDA code for sm_90 only; SG2_CUDA_ARCHITECTURES=\"80-real;86-real;89-real;90\" builds for every supported GPU"
fi
if [[ -f "$build_dir/CMakeCache.txt" ]] && ! grep -q "CMAKE_GENERATOR:INTERNAL=Ninja" "$build_dir/CMakeCache.txt" \
   && command -v ninja >/dev/null; then
  rm -rf "$build_dir"   # generator changed
fi
read -r -a extra <<<"${SG2_CMAKE_ARGS:-}"
cmake -S . -B "$build_dir" "${args[@]}" "${extra[@]}" "$@"
if [[ "$werror" != ON ]]; then
  cmake --build "$build_dir" -j "${SG2_JOBS:-$(nproc)}"
  exit
fi
log="$build_dir/build.log"
set +e
cmake --build "$build_dir" -j "${SG2_JOBS:-$(nproc)}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if ((rc != 0)); then exit "$rc"; fi
if grep -n -i -E 'warning|\(C75[0-9][0-9]\)' "$log"; then
  echo "scripts/build.sh: the build printed warnings or wgmma performance notices (above; SG2_WERROR=ON)" >&2
  exit 1
fi
