#!/usr/bin/env bash
# Installs what is missing, builds sg2 with its tests, and runs every test with ctest.
# GPU tests skip cleanly when no CUDA device is present. Also runs the installed-package example
# and the bounded fuzz runs (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build_dir=${SG2_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j "${SG2_JOBS:-$(nproc)}"
for extra in scripts/test_install.sh scripts/fuzz.sh; do
  if [[ -x "$extra" ]]; then "$extra"; fi
done
echo "sg2: all tests passed"
