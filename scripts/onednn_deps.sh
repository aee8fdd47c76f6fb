#!/usr/bin/env bash
# Copies this machine's oneDNN (Debian's libdnnl-dev: headers and libdnnl.so.*) into .deps/onednn/, where
# CMake looks first. For a machine that cannot install packages (e.g. a GPU host without libdnnl-dev):
# run this where the package is installed (scripts/setup.sh installs it), carry .deps/ along (it is
# ignored by git; about 40 MB), and build there as usual. The binaries find the library through their
# RPATH. Alternative: configure with -DSG2_ONEDNN=OFF (the CPU backend then runs the slow reference ops).
set -euo pipefail
cd "$(dirname "$0")/.."
lib=$(find /usr/lib /usr/lib64 -name 'libdnnl.so.*' -type f 2>/dev/null | head -n1 || true)
if [[ -z "$lib" || ! -f /usr/include/dnnl.hpp ]]; then
  echo "sg2 onednn_deps: oneDNN not installed here (apt-get install libdnnl-dev, or scripts/setup.sh)" >&2
  exit 1
fi
dst=.deps/onednn
rm -rf "$dst"
mkdir -p "$dst/include" "$dst/lib"
cp -a /usr/include/dnnl*.h /usr/include/dnnl*.hpp "$dst/include/"
[[ -d /usr/include/oneapi ]] && cp -a /usr/include/oneapi "$dst/include/"
cp -a "$(dirname "$lib")"/libdnnl.so* "$dst/lib/"
echo "sg2 onednn_deps: $(basename "$lib") and its headers copied into $dst ($(du -sh "$dst" | cut -f1))"
