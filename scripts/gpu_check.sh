#!/usr/bin/env bash
# The one script to run on a GPU machine: build (CUDA), the GPU tests, compute-sanitizer memcheck
# and racecheck on the kernel tests, and `sg2 bench`; logs go to $OUT and a short table is printed
# last.
#
#   scripts/gpu_check.sh                      # every phase
#   PHASES=build,test scripts/gpu_check.sh    # some phases (build,test,sanitize,bench,profile)
#
# Environment: OUT (logs; default ./gpu_out), SG2_BUILD_DIR (default /tmp/sg2-gpu-build),
# SG2_CUDA_ARCHITECTURES (default 90), SG2_STB_INCLUDE_DIR, BENCH_BATCHES (default 1,8,32,128),
# BENCH_ITERS (default 20), TEST_TIMEOUT / SANITIZE_TIMEOUT / BENCH_TIMEOUT (seconds).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
B=${SG2_BUILD_DIR:-/tmp/sg2-gpu-build}
PHASES=${PHASES:-build,test,sanitize,bench,profile}
mkdir -p "$OUT"
summary=()
has() { [[ ",$PHASES," == *",$1,"* ]]; }
stamp() { date +%s; }
record() { summary+=("$(printf '%-10s %-6s %5ss  %s' "$1" "$2" "$3" "$4")"); }

echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/summary.txt"

if has build; then
  t0=$(stamp)
  args=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DSG2_CUDA_ARCHITECTURES=${SG2_CUDA_ARCHITECTURES:-90}")
  [[ -n "${SG2_STB_INCLUDE_DIR:-}" ]] && args+=("-DSG2_STB_INCLUDE_DIR=$SG2_STB_INCLUDE_DIR")
  if cmake -S . -B "$B" "${args[@]}" >"$OUT/build.log" 2>&1 && cmake --build "$B" -j "$(nproc)" >>"$OUT/build.log" 2>&1; then
    record build ok $(( $(stamp) - t0 )) "$(grep -c -i warning "$OUT/build.log") warnings"
  else
    tail -40 "$OUT/build.log"
    record build FAIL $(( $(stamp) - t0 )) "see build.log"
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
fi

if has test; then
  t0=$(stamp)
  timeout "${TEST_TIMEOUT:-300}" "$B/tests/sg2_gpu_tests" --gtest_color=no >"$OUT/gpu_tests.log" 2>&1
  rc=$?
  res=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')
  record gpu-tests "$([[ $rc == 0 ]] && echo ok || echo FAIL)" $(( $(stamp) - t0 )) "rc=$rc $res"
  grep -E '^\[  FAILED  \]|Failure|Expected|Which is|max \||error' "$OUT/gpu_tests.log" | head -60
  grep -E '^  (conv |fp32 |.*PSNR|compared|digits32)' "$OUT/gpu_tests.log" | head -60
fi

if has sanitize; then
  t0=$(stamp)
  : >"$OUT/sanitizer.log"
  ok=ok
  # my kernels alone (no cuDNN), then the whole executor with the direct conv (no cuDNN inside)
  for tool in memcheck racecheck; do
    timeout "${SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$B/tests/sg2_gpu_tests" --gtest_filter='GpuKernels.*-GpuKernels.CudnnConv*' --gtest_color=no \
      >>"$OUT/sanitizer.log" 2>&1 || ok=FAIL
    echo "== $tool kernels: ok=$ok" >>"$OUT/sanitizer.log"
    SG2_CONV=direct timeout "${SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$B/tests/sg2_gpu_tests" --gtest_filter='GpuGenerator.DumpsMatchCpuDumps' --gtest_color=no \
      >>"$OUT/sanitizer.log" 2>&1 || ok=FAIL
    echo "== $tool generator (direct conv): ok=$ok" >>"$OUT/sanitizer.log"
  done
  record sanitizer "$ok" $(( $(stamp) - t0 )) "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^== ' "$OUT/sanitizer.log" | head -20
fi

if has bench; then
  t0=$(stamp)
  bt=${BENCH_TIMEOUT:-300}
  it=${BENCH_ITERS:-20}
  {
    timeout "$bt" "$B/sg2" bench --config ffhq1024-f --batch "${BENCH_BATCHES:-1,8,32,128}" \
      --precision auto,fp16,tf32,fp32 --iters "$it" --accuracy --verbose
    timeout 120 "$B/sg2" bench --config paper256 --batch 1,32,128 --precision fp16,auto,fp32 --iters "$it"
    timeout 120 "$B/sg2" bench --config paper512 --batch 1,32 --precision auto,fp16 --iters "$it"
    if [[ -f models/digits32/digits32.pkl ]]; then
      timeout 120 "$B/sg2" bench --network models/digits32/digits32.pkl --precision auto,tf32,fp16,fp32 --accuracy-only
    fi
  } >"$OUT/bench.txt" 2>"$OUT/bench_progress.txt"
  record bench "$([[ $? == 0 ]] && echo ok || echo FAIL)" $(( $(stamp) - t0 )) "bench.txt"
fi

if has profile; then
  t0=$(stamp)
  timeout 120 "$B/sg2" bench --config ffhq1024-f --batch 32 --precision fp16,auto --iters 3 --warmup 1 --profile 32 \
    >"$OUT/profile.txt" 2>&1
  record profile "$([[ $? == 0 ]] && echo ok || echo FAIL)" $(( $(stamp) - t0 )) "profile.txt"
  grep -A14 '^profile' "$OUT/profile.txt" | head -34
fi

echo
echo "== bench"
[[ -f "$OUT/bench.txt" ]] && cat "$OUT/bench.txt"
echo
echo "== summary"
printf '%s\n' "${summary[@]}" | tee -a "$OUT/summary.txt"
