#!/usr/bin/env bash
# Formats the tree's C, C++ and CUDA sources with clang-format and the repository's .clang-format.
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   list the files that are not formatted; exit 1 when there are any
# Environment: CLANG_FORMAT (default clang-format). Test data under tests/data is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "format: $cf not found (Debian: apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.h' '*.hpp' '*.c' '*.cpp' '*.cu' '*.cuh' | grep -v '^tests/data/')
if [[ "${1:-}" == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
  if (( ${#bad[@]} )); then
    printf 'format: not clang-formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files are clang-formatted ($("$cf" --version | head -1))"
else
  "$cf" -i "${files[@]}"
fi
