#!/usr/bin/env bash
# The README's first command: installs what is missing (scripts/setup.sh), builds sg2 (scripts/build.sh)
# without the test suites, then generates ten handwritten "6"s from the bundled digits32 model into out/
# (seed0000.png ... seed0009.png and grid.png). Extra arguments go to `sg2 generate`.
# The build fits the machine: with an NVIDIA GPU (nvidia-smi lists one) and the CUDA toolkit, the CUDA
# backend for that GPU's architecture; otherwise the CPU backend alone (SG2_CUDA=ON builds CUDA anyway).
# Environment: SG2_CUDA, SG2_CUDA_ARCHITECTURES, SG2_BUILD_DIR (default build), SG2_JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [[ -z "${SG2_CUDA:-}" ]]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "sg2 demo: $(nvidia-smi -L | head -n1) found: building with the CUDA backend when the toolkit is there"
  else
    export SG2_CUDA=OFF
    echo "sg2 demo: no NVIDIA GPU found: building the CPU backend only (SG2_CUDA=ON ./scripts/demo.sh builds CUDA too)"
  fi
fi
SG2_TESTS=${SG2_TESTS:-OFF} scripts/build.sh
build_dir=${SG2_BUILD_DIR:-build}
"$build_dir/sg2" generate --seeds 0-9 --class 6 --grid 10x1 --outdir out "$@"
echo "sg2 demo: open out/grid.png (ten 6s, seeds 0-9); try --class 3, --trunc 0.7, or sg2 --help"
