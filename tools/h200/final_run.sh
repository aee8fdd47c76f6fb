#!/usr/bin/env bash
# Recorded device run (session 8, run 5): the final tree of issue 15 on the H200 — the GPU tests, compute-sanitizer
# memcheck on the kernel and stream tests, the engine beside the official code, and end to end on an official random
# ffhq1024 ADA pickle (official gen_images.py and sg2 generate in the same call; the NaN/inf check on every image
# that 52eafc1 added is in sg2's numbers). Expects .gpucarry/ with bins.tar.xz (new/: sg2, libsg2.so.0,
# sg2_png_bench, sg2_gpu_tests built here for sm_90 with scripts/deps_for_gpu.sh's static libraries) and sg3/
# (a NVlabs/stylegan3 checkout: dnnlib torch_utils training legacy.py gen_images.py).
set -u
cd "$(dirname "$0")/../.."
R=$PWD; W=/tmp/w; mkdir -p $W; tar xJf $R/.gpucarry/bins.tar.xz -C $W
N=$W/new; export LD_LIBRARY_PATH=$N; S=$N/sg2; D=/tmp/e2e; mkdir -p $D
mkdir -p /work && ln -sfn "$R" /work/main   # the tests' data paths were compiled in as /work/main
t0=$(date +%s); el() { echo "   [t $(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
( python3 $R/tools/e2e_official.py --sg3 $R/.gpucarry/sg3 --out $D/r1024.pkl > $D/p1.log 2>&1 ) &
timeout 120 $N/sg2_gpu_tests --gtest_color=no > $OUT/gpu_tests.log 2>&1; echo "gpu tests rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]' $OUT/gpu_tests.log | head -12; el
timeout 130 compute-sanitizer --tool memcheck --error-exitcode 9 $N/sg2_gpu_tests --gtest_color=no \
  --gtest_filter='GpuStream.*:GpuKernels.*' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | head -4; el
wait; tail -2 $D/p1.log; ls -la $D/r1024.pkl; el
echo "== engine: sg2 (invariance on,off) then the official code, same call"
timeout 90 $S bench --config ffhq1024-f --batch 1,32 --precision auto,fp16 --batch-invariance on,off --iters 20 -q 2>&1 | grep -E "^(auto|fp16) |^device"
timeout 130 python3 $R/tools/bench_official.py --sg3 $R/.gpucarry/sg3 --configs ffhq1024-f --batches 1,32 --modes auto,fp16 --iters 10 --json $OUT/official.json > $OUT/official.log 2>&1; echo "official rc=$?"
tail -6 $OUT/official.log; el
echo "== end to end, the same pickle"
a=$(date +%s.%N); timeout 100 python3 $R/tools/run_official.py $R/.gpucarry/sg3 gen_images.py --network $D/r1024.pkl --seeds 0-31 --outdir $D/off > $D/off.log 2>&1; echo "official rc=$?"; b=$(date +%s.%N)
n=$(ls $D/off/*.png 2>/dev/null | wc -l); echo "OFFICIAL gen_images.py 1024 PNG: $n in $(awk "BEGIN{printf \"%.2f\", $b - $a}") s wall (model load included) = $(awk "BEGIN{printf \"%.2f\", $n / ($b - $a)}") img/s"; el
timeout 60 $S generate --network $D/r1024.pkl --seeds 0-31 --outdir $D/s32 2>&1 | tail -1
timeout 60 $S compare $D/off $D/s32 --max-levels 8 2>&1 | tail -1
for cfg in "default png 1023" "fast png 4095" "default u8npy 4095"; do
  set -- $cfg; rm -rf $D/g
  a=$(date +%s.%N); timeout 60 $S generate --network $D/r1024.pkl --seeds 0-$3 --batch 32 --png-level $1 --format $2 --outdir $D/g 2>&1 | tail -1; b=$(date +%s.%N)
  echo "SG2 1024 --png-level $1 --format $2: $(( $3 + 1 )) in $(awk "BEGIN{printf \"%.2f\", $b - $a}") s wall = $(awk "BEGIN{printf \"%.1f\", ($3 + 1) / ($b - $a)}") img/s"
done; rm -rf $D/g; el
timeout 60 $S bench --end-to-end --network $D/r1024.pkl --seeds 0-2047 --batch 32 --format u8npy -q 2>&1 | tail -4; el
echo "total $(( $(date +%s) - t0 )) s"
