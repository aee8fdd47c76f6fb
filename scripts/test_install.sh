#!/usr/bin/env bash
# Checks the installed package as a user meets it (called by scripts/test.sh after ctest):
#   1. cmake --install into a temporary prefix;
#   2. apps/examples (find_package(sg2 REQUIRED)) configured and built against it with
#      -DCMAKE_PREFIX_PATH, then run from another directory: embed (C++ API), stream (streaming API) and embed_c (C ABI) must
#      find the bundled model under <prefix>/share/sg2/models and write four, 100 and three PNGs;
#   3. the installed `sg2` CLI generates from its bundled model;
#   4. a C program compiled against the installed sg2_c.h and libsg2;
#   and LICENSE and NOTICE are installed in <prefix>/share/doc/sg2.
# Environment: SG2_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build_dir=${SG2_BUILD_DIR:-build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sg2-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

echo "sg2 install test: cmake --install $build_dir --prefix $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$tmp/install.log"
for f in LICENSE NOTICE; do
  cmp "$src/$f" "$prefix/share/doc/sg2/$f" || { echo "install: $f is not installed in share/doc/sg2" >&2; exit 1; }
done
gen=()
if command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S "$src/apps/examples" -B "$tmp/examples" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" \
  || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/examples" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }

mkdir -p "$tmp/run" "$tmp/embed-out"
cd "$tmp/run"
env -u SG2_MODEL "$tmp/examples/embed" "$tmp/embed-out" | tee "$tmp/embed.txt"
[[ $(grep -c '^wrote ' "$tmp/embed.txt") == 4 ]] || { echo "embed: expected 4 images" >&2; exit 1; }
for s in 0 1 2 3; do [[ -s "$tmp/embed-out/embed_seed$s.png" ]] || { echo "embed: missing embed_seed$s.png" >&2; exit 1; }; done
env -u SG2_MODEL "$tmp/examples/stream" "$tmp/embed-out" "" cpu | tee "$tmp/stream.txt"
grep -q '^wrote 100 images' "$tmp/stream.txt" || { echo "stream: expected 100 images" >&2; exit 1; }
[[ $(ls "$tmp/embed-out"/stream_seed*.png | wc -l) == 100 ]] || { echo "stream: expected 100 PNG files" >&2; exit 1; }
cmp "$tmp/embed-out/stream_seed0042.png" <(env -u SG2_MODEL "$prefix/bin/sg2" generate --seeds 42 --class 7 --device cpu \
  --outdir "$tmp/stream-cli" -q && cat "$tmp/stream-cli/seed0042.png") || { echo "stream: seed 42 differs from sg2 generate's" >&2; exit 1; }
env -u SG2_MODEL "$tmp/examples/embed_c" "$tmp/embed-out" | tee "$tmp/embed_c.txt"
[[ $(grep -c '^wrote ' "$tmp/embed_c.txt") == 3 ]] || { echo "embed_c: expected 3 images" >&2; exit 1; }
for s in 0 1 2; do [[ -s "$tmp/embed-out/embed_c_seed$s.png" ]] || { echo "embed_c: missing embed_c_seed$s.png" >&2; exit 1; }; done

env -u SG2_MODEL "$prefix/bin/sg2" generate --seeds 0-2 --class 5 --grid 3x1 --outdir "$tmp/cli-out"
for f in seed0000.png seed0001.png seed0002.png grid.png; do
  [[ -s "$tmp/cli-out/$f" ]] || { echo "installed sg2: missing $f" >&2; exit 1; }
done

cat >"$tmp/c_abi.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <sg2/sg2_c.h>
int main(void) {
  sg2_generator* g = NULL;
  if (sg2_generator_open("/nonexistent.pkl", NULL, &g) == SG2_OK || g != NULL || strlen(sg2_last_error()) == 0) return 1;
  printf("sg2 %s via the C ABI: %s\n", sg2_version(), sg2_last_error());
  return 0;
}
C
libdir=$(dirname "$(find "$prefix" -name 'libsg2.so' | head -n1)")
c_compiler=(cc)
if ! command -v cc >/dev/null; then c_compiler=(c++ -x c); fi   # g++ alone can compile C too
"${c_compiler[@]}" -std=c99 -Wall -Werror -I"$prefix/include" "$tmp/c_abi.c" -L"$libdir" -Wl,-rpath,"$libdir" -lsg2 -o "$tmp/c_abi"
"$tmp/c_abi"
echo "sg2 install test: passed (find_package examples in C++ and C, installed CLI, C ABI)"
