#!/usr/bin/env bash
# One device call for kernel work (docs/developing.md "Kernel runner"): build (CUDA, sm_90), the GPU
# tests, compute-sanitizer memcheck + racecheck on the kernel tests, the kernel runner on the
# convolutions of ffhq1024-f and paper256, `sg2 bench` (batch invariance on and off, a per-step
# profile) and the official code's figures (tools/bench_official.py) in the same call. Logs go to
# $OUT (at most 8 files); a short table is printed last.
#
#   PHASES=build,test,sanitize,runner,bench,profile,official dev/gpu_run.sh
#
# Environment: OUT (default ./gpu_out), B (build folder, default build), PHASES (default: all but
# official), SG3 (a NVlabs/stylegan3 checkout for the official phase), TEST_FILTER (gtest filter),
# RUNNER (the runner's invocations, ';'-separated argument lists), BENCH (sg2 bench invocations,
# ';'-separated), BASE (a second build folder to bench beside this one, e.g. the previous tree).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
B=${B:-build}
PH=${PHASES:-build,test,sanitize,runner,bench,profile}
mkdir -p "$OUT"
t0=$(date +%s)
el() { echo "   [t $(($(date +%s) - t0)) s]"; }
has() { [[ ",$PH," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
if has official; then  # the official code's custom CUDA ops compile on the CPU while sg2 builds (a tiny first run)
  (timeout 300 python3 tools/bench_official.py --sg3 "${SG3:?SG3 must name a stylegan3 checkout}" --configs paper256 \
    --batches 1 --modes fp16 --iters 1 >/tmp/official_warmup.log 2>&1) &
  warm_pid=$!
fi

if has build; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 -DSG2_ONEDNN=OFF \
    >"$OUT/build.log" 2>&1 &&
    cmake --build "$B" -j "$(nproc)" --target sg2_cli sg2_gpu_tests sg2_kernel_bench >>"$OUT/build.log" 2>&1
  rc=$?
  echo "build rc=$rc: $(grep -c -i -E 'warning|\(C75[0-9][0-9]\)' "$OUT/build.log") warning or wgmma-notice lines"
  grep -i -E 'warning|\(C75[0-9][0-9]\)|error' "$OUT/build.log" | head -20
  ((rc == 0)) || exit 1
  el
fi

if has probe; then  # the newest kernels' tests first, briefly: a hang or a failure shows at once
  timeout 60 "$B/tests/sg2_gpu_tests" --gtest_color=no --gtest_filter="${PROBE_FILTER:-GpuKernels.Transposed*}" \
    >"$OUT/probe.log" 2>&1
  rc=$?
  echo "probe rc=$rc"
  grep -E '^\[  (PASSED|FAILED) +\]|^\[  FAILED  \]|Failure$|Expected|Which is|max \|' "$OUT/probe.log" | head -20
  if ((rc == 124 || rc == 137)); then
    echo "the probe timed out (last test: $(grep -E '^\[ RUN' "$OUT/probe.log" | tail -1)); stopping"
    exit 1
  fi
  el
fi

if has test; then
  timeout "${TEST_TIMEOUT:-240}" "$B/tests/sg2_gpu_tests" --gtest_color=no --gtest_filter="${TEST_FILTER:-*}" \
    >"$OUT/gpu_tests.log" 2>&1
  rc=$?
  echo "gpu tests rc=$rc"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]|Failure$' "$OUT/gpu_tests.log" | head -30
  grep -E '^  (transposed|tensor-core|batch invariance|conv |.*PSNR|.*as on sm_86)' "$OUT/gpu_tests.log" | head -30
  el
  if ((rc == 124 || rc == 137)); then  # a hang: the later phases would hang too
    echo "the GPU tests timed out (last test: $(grep -E '^\[ RUN' "$OUT/gpu_tests.log" | tail -1)); stopping"
    exit 1
  fi
fi

if has sanitize; then
  : >"$OUT/sanitizer.log"
  filt=${SAN_FILTER:-GpuKernels.Transposed*:GpuKernels.TensorCore*:GpuKernels.FusedConv*}
  for tool in memcheck racecheck; do
    timeout "${SAN_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/tests/sg2_gpu_tests" \
      --gtest_color=no --gtest_filter="$filt" >>"$OUT/sanitizer.log" 2>&1
    echo "$tool rc=$?"
  done
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|hazard' "$OUT/sanitizer.log" | sort | uniq -c | head -12
  el
fi

if has runner; then
  : >"$OUT/runner.txt"
  IFS=';' read -r -a runs <<<"${RUNNER:---config ffhq1024-f --layer all --precision fp16 --batch 32,1}"
  for r in "${runs[@]}"; do
    read -r -a args <<<"$r"
    echo "== sg2_kernel_bench $r" >>"$OUT/runner.txt"
    timeout "${RUNNER_TIMEOUT:-150}" "$B/sg2_kernel_bench" "${args[@]}" >>"$OUT/runner.txt" 2>&1
    echo "runner rc=$? ($r)"
  done
  el
fi

if has bench; then
  : >"$OUT/bench.txt"
  IFS=';' read -r -a benches <<<"${BENCH:---config ffhq1024-f --batch 1,32 --precision auto,fp16,tf32,fp32 --batch-invariance on,off --iters 20}"
  for bb in "${benches[@]}"; do
    read -r -a args <<<"$bb"
    for build in "$B" ${BASE:-}; do
      echo "== $build/sg2 bench $bb" >>"$OUT/bench.txt"
      timeout "${BENCH_TIMEOUT:-120}" "$build/sg2" bench "${args[@]}" -q >>"$OUT/bench.txt" 2>&1
      echo "bench rc=$? ($build: $bb)"
    done
  done
  el
fi

if has profile; then
  : >"$OUT/profile.txt"
  for pb in ${PROFILES:-fp16:32 auto:32}; do
    for build in "$B" ${BASE:-}; do
      echo "== $build ${pb}" >>"$OUT/profile.txt"
      timeout 60 "$build/sg2" bench --config ffhq1024-f --batch "${pb#*:}" --precision "${pb%%:*}" --iters 2 --warmup 1 \
        --profile "${pb#*:}" --verbose >>"$OUT/profile.txt" 2>&1
    done
  done
  el
fi

if has official; then
  wait "$warm_pid"
  timeout "${OFFICIAL_TIMEOUT:-200}" python3 tools/bench_official.py --sg3 "${SG3:?SG3 must name a stylegan3 checkout}" \
    ${OFFICIAL_ARGS:---configs ffhq1024-f --batches 1,32 --modes auto,fp16 --iters 10} --json "$OUT/official.json" \
    >"$OUT/official.log" 2>&1
  echo "official rc=$?"
  tail -8 "$OUT/official.log"
  el
fi

echo
echo "== summary"
[[ -f "$OUT/bench.txt" ]] && grep -E '^==|^(auto|fp16|tf32|fp32) ' "$OUT/bench.txt"
[[ -f "$OUT/runner.txt" ]] && grep -E '^==|^  (b[0-9]+\.|total)' "$OUT/runner.txt" | cut -c1-130
echo "total $(($(date +%s) - t0)) s"
