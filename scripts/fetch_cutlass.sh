#!/usr/bin/env bash
# Fetches NVIDIA CUTLASS's headers from PyPI (the `nvidia-cutlass` wheel, pinned by version and
# SHA-256) into a folder (default .deps/cutlass, ignored by git) for the kernel runner's CUTLASS
# candidates (dev/cutlass, issue 22 item 5): configure with -DSG2_CUTLASS_DIR=.deps/cutlass and an
# architecture list naming 90. Only the headers are kept (include/ and tools/util/include/, about
# 27 MB, 1 MB as .tar.xz for the GPU host). The library itself never includes CUTLASS.
#
#   scripts/fetch_cutlass.sh [DIR]
#   tar cJf .gpucarry/cutlass.tar.xz -C .deps cutlass     # for tools/h200/session12_run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps/cutlass}
version=4.2.0.0
sha=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
wheel=nvidia_cutlass-$version-py3-none-any.whl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --no-deps --only-binary=:all: -d "$tmp" "nvidia-cutlass==$version" >"$tmp/pip.log" 2>&1 ||
  { tail -3 "$tmp/pip.log" >&2; echo "fetch_cutlass: pip download of nvidia-cutlass==$version failed" >&2; exit 1; }
echo "$sha  $tmp/$wheel" | sha256sum -c --quiet - ||
  { echo "fetch_cutlass: $wheel does not have the pinned SHA-256" >&2; exit 1; }
python3 - "$tmp/$wheel" "$tmp/x" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for n in z.namelist():
        if n.startswith(('cutlass_library/source/include/', 'cutlass_library/source/tools/util/include/')):
            z.extract(n, sys.argv[2])
PY
rm -rf "$dest" && mkdir -p "$dest"
cp -r "$tmp/x/cutlass_library/source/include" "$dest/"
mkdir -p "$dest/tools/util" && cp -r "$tmp/x/cutlass_library/source/tools/util/include" "$dest/tools/util/"
echo "$version $sha" >"$dest/VERSION"
echo "fetch_cutlass: CUTLASS $version headers in $dest"
