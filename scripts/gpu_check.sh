#!/usr/bin/env bash
# The one script to run on a GPU machine: build (CUDA), the GPU tests, `sg2 bench` with a per-step
# profile, and compute-sanitizer memcheck + racecheck; logs go to $OUT and a short table is printed
# last. Phases stop at a deadline so that the summary always comes back.
#
#   scripts/gpu_check.sh                          # every phase
#   PHASES=build,test scripts/gpu_check.sh        # some phases: build,test,bench,variants,profile,ncu,sanitize
#
# Environment: OUT (logs; default ./gpu_out), SG2_BUILD_DIR (default /tmp/sg2-gpu-build), SG2_ONEDNN (default: ON
# when oneDNN is installed or carried in .deps/onednn, see scripts/onednn_deps.sh; else OFF),
# SG2_DOWNLOADS (default: ON when libcurl's headers are installed, else OFF: --network URL then needs a cached
# file), SG2_CUDA_ARCHITECTURES (default 90), BENCH_BATCHES (default 1,8,32,128),
# BENCH_ITERS (default 20), TOTAL (seconds for everything; default 560), TEST_FILTER (gtest filter).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
B=${SG2_BUILD_DIR:-/tmp/sg2-gpu-build}
PHASES=${PHASES:-build,test,bench,variants,profile,sanitize}
START=$(date +%s)
DEADLINE=$((START + ${TOTAL:-560}))
mkdir -p "$OUT"
summary=()
has() { [[ ",$PHASES," == *",$1,"* ]]; }
now() { date +%s; }
left() { local l=$((DEADLINE - $(now))); ((l < 5)) && l=5; echo "$l"; }
cap() { local l; l=$(left); ((l < $1)) && echo "$l" || echo "$1"; }  # min(default, time left)
record() { summary+=("$(printf '%-10s %-5s %4ss  %s' "$1" "$2" "$3" "$4")"); }

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/summary.txt"

if has build; then
  t0=$(now)
  args=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DSG2_CUDA_ARCHITECTURES=${SG2_CUDA_ARCHITECTURES:-90}")
  # the CPU backend's oneDNN: the package, or a carried copy (scripts/onednn_deps.sh); else the reference ops
  if [[ -z "${SG2_ONEDNN:-}" ]]; then
    if [[ -f .deps/onednn/include/dnnl.hpp || -f /usr/include/dnnl.hpp ]]; then SG2_ONEDNN=ON; else SG2_ONEDNN=OFF; fi
  fi
  args+=("-DSG2_ONEDNN=$SG2_ONEDNN")
  # --network URL downloads need libcurl's headers, which the GPU host may lack (it cannot install packages)
  if [[ -z "${SG2_DOWNLOADS:-}" ]]; then
    if [[ -f /usr/include/curl/curl.h || -f /usr/include/x86_64-linux-gnu/curl/curl.h ]]; then SG2_DOWNLOADS=ON; else SG2_DOWNLOADS=OFF; fi
  fi
  args+=("-DSG2_DOWNLOADS=$SG2_DOWNLOADS")
  if cmake -S . -B "$B" "${args[@]}" >"$OUT/build.log" 2>&1 && cmake --build "$B" -j "$(nproc)" >>"$OUT/build.log" 2>&1; then
    record build ok $(($(now) - t0)) "$(grep -c -i 'warning' "$OUT/build.log") warning lines"
  else
    grep -E 'error|Error' "$OUT/build.log" | head -40
    record build FAIL $(($(now) - t0)) "see build.log"
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
fi

if has test; then
  t0=$(now)
  timeout "$(cap 240)" "$B/tests/sg2_gpu_tests" --gtest_color=no --gtest_filter="${TEST_FILTER:-*}" >"$OUT/gpu_tests.log" 2>&1
  rc=$?
  res=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$OUT/gpu_tests.log" | tr -s ' ' | tr '\n' ' ')
  record gpu-tests "$([[ $rc == 0 ]] && echo ok || echo FAIL)" $(($(now) - t0)) "rc=$rc $res"
  echo "== gpu test failures"
  grep -E '^\[  FAILED  \]|Failure$|max \||Skipped|error:|what\(\)' "$OUT/gpu_tests.log" | head -50
  echo "== gpu test notes"
  grep -E '^  (conv |fp32 |compared|digits32|.*PSNR)' "$OUT/gpu_tests.log" | head -40
  grep -E '^\[       OK \]|^\[  FAILED  \]' "$OUT/gpu_tests.log" | sed 's/^/  /' | head -30
fi

if has bench; then
  t0=$(now)
  it=${BENCH_ITERS:-20}
  : >"$OUT/bench.txt"
  timeout "$(cap 240)" "$B/sg2" bench --config ffhq1024-f --batch "${BENCH_BATCHES:-1,8,32,128}" \
    --precision auto,fp16,tf32,fp32 --iters "$it" --accuracy --verbose >>"$OUT/bench.txt" 2>"$OUT/bench_progress.txt"
  rc1=$?
  timeout "$(cap 90)" "$B/sg2" bench --config paper256 --batch 1,32,128 --precision fp16,auto,fp32 --iters "$it" \
    >>"$OUT/bench.txt" 2>>"$OUT/bench_progress.txt"
  rc2=$?
  timeout "$(cap 60)" "$B/sg2" bench --config paper512 --batch 1,32 --precision auto,fp16 --iters "$it" \
    >>"$OUT/bench.txt" 2>>"$OUT/bench_progress.txt"
  rc3=$?
  timeout "$(cap 60)" "$B/sg2" bench --network models/digits32/digits32.pkl --precision auto,tf32,fp16,fp32 \
    --accuracy-only >>"$OUT/bench.txt" 2>>"$OUT/bench_progress.txt"
  rc4=$?
  record bench "$([[ $rc1$rc2$rc3 == 000 ]] && echo ok || echo FAIL)" $(($(now) - t0)) "rc $rc1 $rc2 $rc3 digits32 $rc4"
fi

if has variants; then
  # the kernel runner: every candidate of every convolution of ffhq1024-f, timed against the choice
  t0=$(now)
  timeout "$(cap 150)" "$B/sg2_kernel_bench" --config ffhq1024-f --layer all --precision fp16,tf32 --batch 32,1 \
    >"$OUT/variants.txt" 2>&1
  record variants "$([[ $? == 0 ]] && echo ok || echo FAIL)" $(($(now) - t0)) "variants.txt (sg2_kernel_bench)"
fi

if has profile; then
  t0=$(now)
  : >"$OUT/profile.txt"
  for pb in fp16:32 fp16:1 auto:32 auto:1 tf32:32 fp32:32; do
    timeout "$(cap 60)" "$B/sg2" bench --config ffhq1024-f --batch "${pb#*:}" --precision "${pb%%:*}" --iters 2 \
      --warmup 1 --profile "${pb#*:}" >>"$OUT/profile.txt" 2>&1
  done
  record profile "$([[ $? == 0 ]] && echo ok || echo FAIL)" $(($(now) - t0)) "profile.txt"
fi

if has ncu; then
  # Nsight Compute on the epilogue kernels of one eager fp16 forward (NCU_BATCH, default 8)
  t0=$(now)
  timeout "$(cap 150)" ncu --kernel-name "regex:${NCU_KERNELS:-epilogue}" --launch-count "${NCU_COUNT:-40}" \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats --section ComputeWorkloadAnalysis --section InstructionStats "$B/sg2" bench --config ffhq1024-f --batch "${NCU_BATCH:-8}" \
    --precision "${NCU_PRECISION:-fp16}" --iters 1 --warmup 0 --profile "${NCU_BATCH:-8}" >"$OUT/ncu.txt" 2>&1
  record ncu "$([[ $? == 0 ]] && echo ok || echo FAIL)" $(($(now) - t0)) "ncu.txt"
  grep -E '^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued' \
    "$OUT/ncu.txt" | tail -80
fi

if has sanitize; then
  t0=$(now)
  : >"$OUT/sanitizer.log"
  ok=ok
  # the kernels alone (no cuDNN: racecheck reports hazards inside cuDNN's own sm90 TF32 kernels),
  # then the whole executor (batch-invariant: sg2's own kernels only, no cuDNN inside)
  for tool in memcheck racecheck; do
    timeout "$(cap 90)" compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/tests/sg2_gpu_tests" \
      --gtest_filter='GpuKernels.*-GpuKernels.CudnnConv*:GpuKernels.Tf32x3ConvIsAsAccurateAsFma' --gtest_color=no \
      >>"$OUT/sanitizer.log" 2>&1
    rc=$?
    echo "== $tool kernels: rc=$rc" >>"$OUT/sanitizer.log"
    [[ $rc != 0 ]] && ok=FAIL
    timeout "$(cap 90)" compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/tests/sg2_gpu_tests" \
      --gtest_filter='GpuGenerator.DumpsMatchCpuDumps' --gtest_color=no >>"$OUT/sanitizer.log" 2>&1
    rc=$?
    echo "== $tool generator: rc=$rc" >>"$OUT/sanitizer.log"
    [[ $rc != 0 ]] && ok=FAIL
  done
  record sanitizer "$ok" $(($(now) - t0)) "$(grep -E '^== ' "$OUT/sanitizer.log" | sed 's/== //' | tr '\n' ';')"
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^== |Invalid|Race' "$OUT/sanitizer.log" | sort | uniq -c | head -20
fi

echo
echo "== bench progress (stderr)"
[[ -f "$OUT/bench_progress.txt" ]] && grep -v '^    b' "$OUT/bench_progress.txt" | head -60
echo "== profile"
[[ -f "$OUT/profile.txt" ]] && grep -A10 '^profile' "$OUT/profile.txt"
echo "== variants"
[[ -f "$OUT/variants.txt" ]] && grep -E '^(==|fp|auto|tf|  [a-z0-9]+ +PSNR)' "$OUT/variants.txt"
echo "== bench"
[[ -f "$OUT/bench.txt" ]] && cat "$OUT/bench.txt"
echo
echo "== summary ($(($(now) - START)) s)"
printf '%s\n' "${summary[@]}" | tee -a "$OUT/summary.txt"
