#!/usr/bin/env bash
# The README's first command: installs what is missing (scripts/setup.sh), builds sg2
# (scripts/build.sh), then generates ten handwritten "7"s from the bundled digits32 model into out/
# (seed0000.png ... seed0009.png and grid.png). Extra arguments go to `sg2 generate`.
# Environment: SG2_BUILD_DIR (default build), SG2_JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build_dir=${SG2_BUILD_DIR:-build}
"$build_dir/sg2" generate --seeds 0-9 --class 7 --grid 10x1 --outdir out "$@"
echo "sg2 demo: open out/grid.png (ten 7s, seeds 0-9); try --class 3, --trunc 0.7, or sg2 --help"
