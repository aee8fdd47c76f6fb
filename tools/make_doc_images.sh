#!/usr/bin/env bash
# Remakes the pictures of README.md and docs/ (docs/images/*.png) from the bundled digits32 model on the
# CPU: each is an sg2 grid enlarged 3x, nearest neighbour (tools/enlarge_png.py), since a 32x32 digit is
# too small to see on a page.
#   tools/make_doc_images.sh [SG2]     (SG2: the sg2 binary; default build/sg2)
# Writes its intermediate files under out/doc_images/.
set -euo pipefail
cd "$(dirname "$0")/.."
sg2=${1:-build/sg2}
tmp=out/doc_images
rm -rf "$tmp"
for k in 0 2 3 5 6; do  # class6.png: the demo's picture (scripts/demo.sh); the others: README's class table
  "$sg2" generate --seeds 0-9 --class "$k" --grid 10x1 --device cpu -q --outdir "$tmp/class$k"
  python3 tools/enlarge_png.py "$tmp/class$k/grid.png" "docs/images/class$k.png" --factor 3
done
"$sg2" generate --seeds 0-29 --class 4 --trunc 0.7 --grid 10x3 --device cpu -q --outdir "$tmp/grid"
python3 tools/enlarge_png.py "$tmp/grid/grid.png" docs/images/grid.png --factor 3
"$sg2" mix --rows 1,2,3 --cols 4,5,6,7 --class 3 --device cpu -q --outdir "$tmp/mix"
python3 tools/enlarge_png.py "$tmp/mix/grid.png" docs/images/mix.png --factor 3
echo "tools/make_doc_images.sh: docs/images/class{0,2,3,5,6}.png, grid.png and mix.png remade"
