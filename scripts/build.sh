#!/usr/bin/env bash
# Configures and builds sg2 into build/ (Release). Extra arguments go to cmake's configure step.
# Environment: SG2_CMAKE_ARGS (extra configure arguments), SG2_CUDA_ARCHITECTURES (default: CMakeLists.txt's list; 90 when CI is set),
#              SG2_BUILD_DIR (default build), SG2_JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SG2_BUILD_DIR:-build}
args=(-DCMAKE_BUILD_TYPE=Release)
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
if [[ -n "${SG2_CUDA_ARCHITECTURES:-}" ]]; then
  args+=("-DSG2_CUDA_ARCHITECTURES=${SG2_CUDA_ARCHITECTURES}")
elif [[ -n "${CI:-}" ]]; then
  args+=("-DSG2_CUDA_ARCHITECTURES=86-real;90")   # CI: two architectures (multi-arch code paths) within 2 cores and 90 minutes
fi
if [[ -f "$build_dir/CMakeCache.txt" ]] && ! grep -q "CMAKE_GENERATOR:INTERNAL=Ninja" "$build_dir/CMakeCache.txt" \
   && command -v ninja >/dev/null; then
  rm -rf "$build_dir"   # generator changed
fi
# SG2_CMAKE_ARGS: extra configure arguments, e.g. SG2_CMAKE_ARGS=-DSG2_CUDA=OFF ./scripts/demo.sh
read -r -a extra <<<"${SG2_CMAKE_ARGS:-}"
cmake -S . -B "$build_dir" "${args[@]}" "${extra[@]}" "$@"
cmake --build "$build_dir" -j "${SG2_JOBS:-$(nproc)}"
