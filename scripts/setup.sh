#!/usr/bin/env bash
# Installs what sg2's build needs on Debian 12 / Ubuntu, only what is missing (idempotent).
# Usage: scripts/setup.sh            (called by scripts/demo.sh and scripts/test.sh)
set -euo pipefail

# libpng-dev: PNG reading (compare, streamed grids); zlib1g-dev: PNG compression (levels 0-9, PIL's
# settings) and the tests' independent CRC checks; libdeflate-dev: PNG compression (fast, smallest)
# and CRC-32; libarchive-dev: zip output (--outdir NAME.zip); libcurl4-openssl-dev: --network URL
# downloads (CMake option SG2_DOWNLOADS); libdnnl-dev: the CPU backend's convolutions (oneDNN);
# openmpi-bin: the tests of sharded runs under mpirun; clang-format: the formatting test
# (scripts/format.sh --check); libboost-dev (Boost.Beast, Asio: HTTP) and libturbojpeg0-dev (JPEG):
# sg2 serve; chromium: the explorer page's browser test (tests/serve); curl: the docs' examples;
# python3-numpy: numpy.load reads the latent archives (tests/check_latents_npz.py).
packages=(cmake g++ ninja-build pkg-config python3 python3-numpy libcxxopts-dev nlohmann-json3-dev libgtest-dev
          libpng-dev libcurl4-openssl-dev libdeflate-dev libarchive-dev zlib1g-dev libdnnl-dev openmpi-bin clang-format
          libboost-dev libturbojpeg0-dev chromium curl)
optional=()  # installed when the distribution has them
if [[ "${SG2_WITH_FUZZ:-1}" == "1" ]]; then
  packages+=(clang)
  optional+=(libclang-rt-14-dev)  # libFuzzer's runtime on Debian 12 (part of clang elsewhere)
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
missing_optional=()
for p in "${optional[@]}"; do installed "$p" || missing_optional+=("$p"); done

if (( ${#missing[@]} + ${#missing_optional[@]} )); then
  echo "sg2 setup: installing ${missing[*]} ${missing_optional[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then sudo_cmd=(sudo); else
      echo "sg2 setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  for p in "${missing_optional[@]}"; do
    if apt-cache show "$p" >/dev/null 2>&1; then missing+=("$p"); fi
  done
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "sg2 setup: all build dependencies are installed"
fi

# atheris (PyPI, pip): the coverage-guided fuzzer of tools/merge_dataset_zips.py's parser
# (tests/fuzz/fuzz_merge_zips.py). Optional: scripts/fuzz.sh skips that one target, saying so, where
# pip cannot install it (no pip, or a system Python that refuses pip installs).
if [[ "${SG2_WITH_FUZZ:-1}" == "1" ]] && command -v python3 >/dev/null && ! python3 -c 'import atheris' 2>/dev/null; then
  echo "sg2 setup: installing atheris for python3 (pip)"
  python3 -m pip install --disable-pip-version-check -q atheris ||
    echo "sg2 setup: note: pip could not install atheris; scripts/fuzz.sh will skip fuzz_merge_zips" >&2
fi

# The CUDA toolkit is optional; when it sits in /usr/local/cuda but not on PATH, use it.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "sg2 setup: using the CUDA toolkit in /usr/local/cuda"
fi
