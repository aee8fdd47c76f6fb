#!/usr/bin/env bash
# Recorded device run (session 7): the final tree's GPU tests, compute-sanitizer memcheck on the kernel and
# stream tests, the engine beside the official code in the same call, then fuzzing on the machine's cores for
# the time left (tools/h200/fuzz_run.sh). Expects .gpucarry/ with bins_new.tar.xz (new/: sg2, libsg2.so.0,
# sg2_png_bench, sg2_gpu_tests built here for sm_90), sg3/ (a NVlabs/stylegan3 checkout) and fuzz.tar.xz.
# Usage: check_run.sh [CALL_SECONDS]   (default 570: the whole call, fuzzing included)
set -u
cd "$(dirname "$0")/../.."
R=$PWD; W=/tmp/w; mkdir -p $W; tar xJf $R/.gpucarry/bins_new.tar.xz -C $W
budget=${1:-570}
N=$W/new; export LD_LIBRARY_PATH=$N; S=$N/sg2
t0=$(date +%s); el() { echo "   [t $(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 120 $N/sg2_gpu_tests --gtest_color=no > $OUT/gpu_tests.log 2>&1; echo "gpu tests rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]|Failure|tests ran' $OUT/gpu_tests.log | head -20; el
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $N/sg2_gpu_tests --gtest_color=no \
  --gtest_filter='GpuStream.*:GpuKernels.*' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|tests ran|PASSED|FAILED" $OUT/memcheck.log | head -5; el
run() { echo "== $1"; shift; "$@" 2>&1 | grep -E "^(auto|fp16|tf32|fp32) |^device" ; }
run "sg2 (this tree), invariance on,off" $S bench --config ffhq1024-f --batch 1,32 --precision auto,fp16 --batch-invariance on,off --iters 20 -q; el
echo "== official (stylegan3 networks_stylegan2, custom ops), same call"
timeout 150 python3 $R/tools/bench_official.py --sg3 $R/.gpucarry/sg3 --configs ffhq1024-f --batches 1,32 --modes auto,fp16 --iters 10 --json $OUT/official.json > $OUT/official.log 2>&1; echo "official rc=$?"
tail -6 $OUT/official.log; el
left=$(( budget - ($(date +%s) - t0) - 30 ))
if (( left > 30 )); then bash $R/tools/h200/fuzz_run.sh $left; fi
echo "total $(( $(date +%s) - t0 )) s"
