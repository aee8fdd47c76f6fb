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
# DIR/turbojpeg/{include/turbojpeg.h, lib/libturbojpeg.a}            libturbojpeg0-dev (sg2 serve's JPEG)
# DIR/boost/include/boost/...                                          libboost-dev: the headers sg2 serve includes
#                                                                      (the compiler's list of them, plus the whole
#                                                                      asio, beast, config and predef folders)
# DIR/VERSIONS                                                         the Debian package versions copied
# The target machine needs zlib's development files (zlib.h, libz.so) for libarchive and the PNG
# encoder's levels 0-9: Ubuntu has them.
# Each .a of libsg2.so is checked to be position-independent (the linker builds a shared object from it).
# libturbojpeg.a goes into the sg2 executable only (its thread-local error string uses the local-exec
# model, which an executable may use and a shared object may not): it is checked by linking a
# position-independent executable with it. The Boost copy is checked to be complete: the serve sources,
# preprocessed with DIR/boost/include first, must find no Boost header outside it.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps}
pkgs=(libdeflate-dev libarchive-dev nettle-dev libturbojpeg0-dev libboost1.74-dev)
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

# sg2 serve: TurboJPEG (static, into the executable) and the Boost headers it includes.
mkdir -p "$dest/turbojpeg/include" "$dest/turbojpeg/lib"
cp "$(file_of libturbojpeg0-dev turbojpeg.h)" "$dest/turbojpeg/include/"
cp "$(file_of libturbojpeg0-dev libturbojpeg.a)" "$dest/turbojpeg/lib/"
probe=$(mktemp -d)
cat >"$probe/tj.cpp" <<'CPP'
#include <turbojpeg.h>
int main() { tjhandle h = tjInitCompress(); return h ? tjDestroy(h) : 1; }
CPP
if ! c++ -fPIE -pie -I "$dest/turbojpeg/include" -o "$probe/tj" "$probe/tj.cpp" "$dest/turbojpeg/lib/libturbojpeg.a" \
     2>"$probe/err" || ! "$probe/tj"; then
  echo "deps_for_gpu: libturbojpeg.a does not link into a position-independent executable: $(head -3 "$probe/err")" >&2
  exit 1
fi
serve_sources=(apps/serve.cpp apps/serve/*.cpp)
boost_headers() {  # the Boost headers the serve sources include, with extra include folders first
  for f in "${serve_sources[@]}"; do
    c++ -std=c++17 -DBOOST_ASIO_NO_DEPRECATED -M -MG "$@" -I apps -I include "$f"
  done | tr ' \\' '\n\n' | grep -E '/boost/' | sort -u
}
rm -rf "$dest/boost"
mkdir -p "$dest/boost/include"
boost_headers | grep '^/usr/include/boost/' | sed 's|^/usr/include/||' >"$probe/list"
for d in asio beast config predef; do (cd /usr/include && find "boost/$d" -type f) >>"$probe/list"; done
boost_dest=$(cd "$dest/boost/include" && pwd)
sort -u "$probe/list" | (cd /usr/include && xargs cp --parents -t "$boost_dest")
if boost_headers -I "$dest/boost/include" | grep -q '^/usr/include/boost/'; then
  echo "deps_for_gpu: the Boost copy misses headers: $(boost_headers -I "$dest/boost/include" | grep -m3 '^/usr/include/boost/')" >&2
  exit 1
fi
rm -rf "$probe"
{
  echo "# Debian packages copied by scripts/deps_for_gpu.sh on $(date -u +%Y-%m-%d)"
  for p in "${pkgs[@]}"; do dpkg-query -W -f='${Package} ${Version}\n' "$p"; done
} >"$dest/VERSIONS"
echo "deps_for_gpu: copied into $dest ($(du -sh "$dest" | cut -f1)):"
sed 's/^/  /' "$dest/VERSIONS"
