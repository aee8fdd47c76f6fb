#!/usr/bin/env bash
# Recorded device run (session 10, run 1): the merged tree of issues 21-24 on one H200 — build (CUDA for sm_90, the
# tests, sg2 serve), every GPU test, sg2 bench beside the official code, end to end (u8npy at 1024 beside the engine),
# and sg2 serve beside the official one-image-per-request server (tools/h200/serve_run.sh), in one call.
#
#   bash tools/h200/session10_run1.sh          (from the tree's root on the device; $OUT collects the logs)
# carrying .gpucarry/boost.tar.xz (Boost headers for sg2 serve), .gpucarry/sg3 (a NVlabs/stylegan3 checkout:
# dnnlib torch_utils training legacy.py gen_images.py) and .deps/{libarchive,libdeflate,turbojpeg}
# (scripts/deps_for_gpu.sh). Phases run in order and are skipped, saying so, when the time left (TOTAL) is short.
set -u
R=$PWD
OUT=${OUT:-/tmp/out1}
D=/tmp/serve_data
mkdir -p "$OUT" "$D"
t0=$(date +%s)
TOTAL=${TOTAL:-540}
el() { echo "   [t $(($(date +%s) - t0)) s]"; }
left() { echo $((TOTAL - ($(date +%s) - t0))); }
need() { if (($(left) >= $1)); then return 0; fi; echo "SKIPPED (time): $2"; return 1; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p .deps && tar xJf .gpucarry/boost.tar.xz -C .deps

# --- the official pickles (CPU + GPU, in the background) and the build -----------------------------------------------
python3 tools/e2e_official.py --sg3 .gpucarry/sg3 --out $D/r1024.pkl >$D/p1.log 2>&1 &
p1=$!
python3 tools/e2e_official.py --sg3 .gpucarry/sg3 --out $D/r256.pkl --res 256 --cbase 16384 >$D/p2.log 2>&1 &
p2=$!
dl=OFF
for h in /usr/include/curl/curl.h /usr/include/x86_64-linux-gnu/curl/curl.h; do [[ -f $h ]] && dl=ON; done
build() {  # build EXTRA_CMAKE_ARGS...
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 -DSG2_ONEDNN=OFF \
    -DSG2_DOWNLOADS=$dl -DSG2_DEPS_DIR="$R/.deps" "$@" && cmake --build build -j16
}
if ! build >"$OUT/build.log" 2>&1; then
  grep -E "error|Error" "$OUT/build.log" | head -20
  echo "BUILD FAILED with sg2 serve; again without it (-DSG2_SERVE=OFF)"
  build -DSG2_SERVE=OFF >"$OUT/build2.log" 2>&1 || { grep -E "error" "$OUT/build2.log" | head; echo "BUILD FAILED"; exit 1; }
fi
grep -cE "warning" "$OUT/build.log" | sed 's/^/build warning lines: /'
el
S=$R/build/sg2
export LD_LIBRARY_PATH=$R/build

# --- the layout move's identity check (issue 21): the tree before it (907293d, .gpucarry/base.tar.xz), built beside ---
( mkdir -p /tmp/base && tar xJf .gpucarry/base.tar.xz -C /tmp/base && ln -sfn "$R/models" /tmp/base/models &&
  cmake -S /tmp/base -B /tmp/base/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 \
    -DSG2_ONEDNN=OFF -DSG2_BUILD_TESTS=OFF -DSG2_DEPS_DIR="$R/.deps" && cmake --build /tmp/base/build -j6 ) \
  >"$OUT/base_build.log" 2>&1 &
pb=$!

# --- every GPU test -------------------------------------------------------------------------------------------------
if need 150 "GPU tests"; then
  timeout 170 build/tests/sg2_gpu_tests --gtest_color=no >"$OUT/gpu_tests.log" 2>&1
  echo "gpu tests rc=$?"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]' "$OUT/gpu_tests.log" | head -12
  el
fi

# --- the engine beside the official code -----------------------------------------------------------------------------
if need 110 "engine bench"; then
  echo "== engine: sg2 bench (invariance on, off), then the official code, same call"
  timeout 60 $S bench --config ffhq1024-f --batch 1,32 --precision auto,fp16 --batch-invariance on,off --iters 20 -q \
    2>&1 | tail -14
  timeout 80 python3 tools/bench_official.py --sg3 .gpucarry/sg3 --configs ffhq1024-f --batches 1,32 --modes auto,fp16 \
    --iters 10 --json "$OUT/official.json" >"$OUT/official.log" 2>&1
  echo "official rc=$?"
  tail -6 "$OUT/official.log"
  el
fi
wait $p1 $p2
tail -1 $D/p1.log
tail -1 $D/p2.log

# --- end to end: seeds to u8npy files at 1024 ------------------------------------------------------------------------
if need 60 "end to end"; then
  echo "== end to end, the official random ffhq1024 pickle"
  for fmt in u8npy; do
    rm -rf /tmp/g
    a=$(date +%s.%N)
    timeout 40 $S generate --network $D/r1024.pkl --seeds 0-4095 --batch 32 --format $fmt --outdir /tmp/g -q
    b=$(date +%s.%N)
    echo "SG2 1024 --format $fmt: 4096 in $(awk "BEGIN{printf \"%.2f\", $b - $a}") s wall (model load included) = $(awk "BEGIN{printf \"%.1f\", 4096 / ($b - $a)}") img/s"
  done
  rm -rf /tmp/g
  timeout 40 $S bench --end-to-end --network $D/r1024.pkl --seeds 0-4095 --batch 32 --format u8npy 2>&1 | tail -3
  el
fi

# --- identity: the same PNG bytes before and after the layout move, fp32 on the GPU and the CPU ---------------------
wait $pb; echo "base build rc=$?"
if need 60 "identity check" && [[ -x /tmp/base/build/sg2 ]]; then
  echo "== identity: 907293d vs this tree"
  for net in "" "--network $D/r256.pkl"; do
    for dev in "--device cuda --precision fp32" "--device cuda --precision fp32 --batch-invariance off" "--device cpu"; do
      rm -rf /tmp/ia /tmp/ib
      LD_LIBRARY_PATH=/tmp/base/build timeout 30 /tmp/base/build/sg2 generate $net --seeds 0-23 --batch 8 $dev --outdir /tmp/ia -q 2>&1 | tail -1
      timeout 30 $S generate $net --seeds 0-23 --batch 8 $dev --outdir /tmp/ib -q 2>&1 | tail -1
      n=$(ls /tmp/ib | wc -l)
      if diff -r /tmp/ia /tmp/ib >/dev/null; then echo "IDENTICAL ($n files): ${net:-digits32} $dev"; else echo "DIFFER: ${net:-digits32} $dev"; fi
    done
  done
  el
fi

# --- sg2 serve beside the official server ---------------------------------------------------------------------------
if need 120 "serve"; then
  SG2_PREBUILT=1 OUT=$OUT TOTAL=$(($(left) - 10)) bash tools/h200/serve_run.sh "$R" 2>&1 | grep -v '^   \[t '
fi
echo "total $(($(date +%s) - t0)) s"
