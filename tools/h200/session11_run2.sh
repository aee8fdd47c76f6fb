#!/usr/bin/env bash
# Recorded device run (session 11, run 2): the merged tree of issue 25 (latent archives, edits, blending, non-square
# networks) on one H200 — build (CUDA sm_90, the tests), the new GPU tests first and then every GPU test,
# compute-sanitizer memcheck on the new kernels' tests, and the cost of --edit and --save-latents (--save-styles) at
# 1024 beside plain generate (the official random ffhq1024 pickle, tools/e2e_official.py), alternated, best of 2.
#   TOTAL=540 bash tools/h200/session11_run2.sh    ($OUT collects the logs), carrying .gpucarry/sg3 and
# .deps/{libarchive,libdeflate,turbojpeg} (scripts/deps_for_gpu.sh)
set -u
R=$PWD
OUT=${OUT:-/tmp/out2}
D=/tmp/r2
mkdir -p "$OUT" "$D"
t0=$(date +%s)
TOTAL=${TOTAL:-540}
el() { echo "   [t $(($(date +%s) - t0)) s]"; }
left() { echo $((TOTAL - ($(date +%s) - t0))); }
need() { if (($(left) >= $1)); then return 0; fi; echo "SKIPPED (time): $2"; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 tools/e2e_official.py --sg3 .gpucarry/sg3 --out $D/r1024.pkl >$D/p1.log 2>&1 &
p1=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 -DSG2_ONEDNN=OFF \
  -DSG2_SERVE=OFF -DSG2_DEPS_DIR="$R/.deps" >"$OUT/build.log" 2>&1 &&
  cmake --build build -j16 --target sg2_cli sg2_gpu_tests >>"$OUT/build.log" 2>&1 ||
  { grep -E "error" "$OUT/build.log" | head -20; echo BUILD FAILED; exit 1; }
echo "build: $(grep -ciE 'warning' "$OUT/build.log") warning lines"
el
export LD_LIBRARY_PATH=$R/build
T=build/tests/sg2_gpu_tests
NEW='GpuNonSquare.*:GpuArchives.*:GpuEdit.*'
timeout 120 $T --gtest_color=no --gtest_filter="$NEW" >"$OUT/gpu_new.log" 2>&1
echo "new GPU tests rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]|Failure$|Expected|Which is|max' "$OUT/gpu_new.log" | head -30
el
if need 200 "every GPU test"; then
  timeout 190 $T --gtest_color=no --gtest_filter="-$NEW" >"$OUT/gpu_all.log" 2>&1
  echo "the other GPU tests rc=$?"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]' "$OUT/gpu_all.log" | head -20
  el
fi
if need 120 "memcheck"; then
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $T --gtest_color=no \
    --gtest_filter='GpuArchives.*:GpuNonSquare.TheUint8PipeHasTheImageShape:GpuNonSquare.StyleGanHumanGoldens' \
    >"$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log")"
  el
fi
wait $p1
tail -1 $D/p1.log
if need 90 "edit / latents cost"; then
  python3 -c "import numpy as np; np.save('$D/d.npy', (np.random.RandomState(1).randn(1, 512) * 0.2).astype(np.float32))"
  S=build/sg2
  run() {  # run LABEL ARGS...: one generate of 4096 seeds at 1024, u8npy into memory, img/s of the images phase
    local label=$1; shift
    rm -rf /dev/shm/g /dev/shm/l.npz
    local line; line=$(timeout 60 $S generate --network $D/r1024.pkl --seeds 0-4095 --batch 32 --format u8npy \
      --outdir /dev/shm/g "$@" 2>&1 | tail -1)
    echo "$label: $line"
  }
  for k in 1 2; do
    run "plain" 
    run "--edit d.npy:1.5" --edit $D/d.npy:1.5
    run "--save-latents" --save-latents /dev/shm/l.npz
    run "--save-latents --save-styles --edit" --save-latents /dev/shm/l.npz --save-styles --edit $D/d.npy:1.5
  done | tee "$OUT/cost.txt"
  rm -rf /dev/shm/g /dev/shm/l.npz
  el
fi
echo "total $(($(date +%s) - t0)) s"
