#!/usr/bin/env bash
# Copies the static, position-independent libraries of the output path, with their headers, from this
# Debian 12 machine into a folder (default .deps/, ignored by git) for a machine that builds sg2 but
# cannot install packages (the GPU host: Ubuntu 24.04). CMake links them statically from there when
# present (cmake/output_deps.cmake; -DSG2_DEPS_DIR=DIR for another folder), so the built libsg2.so
# needs neither libdeflate.so nor libarchive.so at run time; their symbols stay hidden in it.
#
#   scripts/deps_for_gpu.sh [DIR]      # then carry DIR with the tree (the device tool's `carry`)
#
# DIR/libdeflate/{include/libdeflate.h, lib/libdeflate.a}              libdeflate-dev (PNG fast/smallest, CRC)
# DIR/libarchive/{include/archive.h, include/archive_entry.h,
#                 lib/libarchive.a, lib/libnettle.a}                   libarchive-dev, nettle-dev (zip output)
# DIR/VERSIONS                                                         the Debian package versions copied
# The target machine needs zlib's development files (zlib.h, libz.so) for libarchive and the PNG
# encoder's levels 0-9: Ubuntu has them.
# Each .a is checked to be position-independent (the linker builds a shared object from it), since it
# goes into libsg2.so.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps}
pkgs=(libdeflate-dev libarchive-dev nettle-dev)
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "deps_for_gpu: $p is not installed (apt-get install ${pkgs[*]})" >&2
    exit 1
  fi
done

# The one file of package $1 whose path ends in $2.
file_of() {
  local f
  f=$(dpkg -L "$1" | grep -E "/$2\$" | head -1)
  if [[ -z "$f" || ! -f "$f" ]]; then echo "deps_for_gpu: $1 has no $2" >&2; exit 1; fi
  echo "$f"
}

# Refuses an archive that cannot go into a shared library (not position-independent): the check is
# the linker's, on the whole archive (undefined symbols are allowed in a shared object).
check_pic() {
  local so err
  so=$(mktemp --suffix=.so) err=$(mktemp)
  if ! c++ -shared -o "$so" -Wl,--whole-archive "$1" -Wl,--no-whole-archive 2>"$err"; then
    echo "deps_for_gpu: $1 is not position-independent: $(grep -m1 -o 'relocation R_X86_64_[A-Z0-9]*[^;]*' "$err")" >&2
    rm -f "$so" "$err"
    exit 1
  fi
  rm -f "$so" "$err"
}

mkdir -p "$dest/libdeflate/include" "$dest/libdeflate/lib" "$dest/libarchive/include" "$dest/libarchive/lib"
cp "$(file_of libdeflate-dev libdeflate.h)" "$dest/libdeflate/include/"
cp "$(file_of libdeflate-dev libdeflate.a)" "$dest/libdeflate/lib/"
cp "$(file_of libarchive-dev archive.h)" "$(file_of libarchive-dev archive_entry.h)" "$dest/libarchive/include/"
cp "$(file_of libarchive-dev libarchive.a)" "$dest/libarchive/lib/"
cp "$(file_of nettle-dev libnettle.a)" "$dest/libarchive/lib/"
for a in "$dest"/libdeflate/lib/*.a "$dest"/libarchive/lib/*.a; do check_pic "$a"; done
{
  echo "# Debian packages copied by scripts/deps_for_gpu.sh on $(date -u +%Y-%m-%d)"
  for p in "${pkgs[@]}"; do dpkg-query -W -f='${Package} ${Version}\n' "$p"; done
} >"$dest/VERSIONS"
echo "deps_for_gpu: copied into $dest ($(du -sh "$dest" | cut -f1)):"
sed 's/^/  /' "$dest/VERSIONS"
