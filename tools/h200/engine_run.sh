#!/usr/bin/env bash
# Recorded device run (docs/performance.md §5). Expects .gpucarry/ with bins.tar.xz (new/: sg2, libsg2.so.0,
# sg2_png_bench, sg2_gpu_tests built here for sm_90; baseline/: a38d28c) and sg3/ (a NVlabs/stylegan3 checkout).
# GPU run 3c: GPU tests + memcheck of this build, the engine side by side (this build on/off, baseline
# a38d28c, official), cuda:0 vs cuda:0,0, and PIL reference PNGs (gen_images.py's save call) of sg2's
# pixels from the official random 1024/256 pickles, returned for encoder work on the CPU machine.
set -u
cd "$(dirname "$0")/../.."
R=$PWD; W=/tmp/w; mkdir -p $W; tar xJf $R/.gpucarry/bins.tar.xz -C $W; cp -r $R/.gpucarry/sg3 $W/
mkdir -p /work && ln -sfn "$R" /work/main
N=$W/new; export LD_LIBRARY_PATH=$N; S=$N/sg2; D=/tmp/e2e; mkdir -p $D
t0=$(date +%s); el() { echo "   [t $(( $(date +%s) - t0 )) s]"; }
( python3 $R/tools/e2e_official.py --sg3 $W/sg3 --out $D/r1024.pkl > $D/p1.log 2>&1 ) &
( python3 $R/tools/e2e_official.py --sg3 $W/sg3 --out $D/r256.pkl --res 256 --cbase 16384 > $D/p2.log 2>&1 ) &
timeout 220 $N/sg2_gpu_tests --gtest_color=no > $OUT/gpu_tests.log 2>&1; echo "gpu tests rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]|Failure' $OUT/gpu_tests.log | head -20; el
wait
echo "== cuda:0 vs cuda:0,0 (two workers on one GPU): byte-identical files?"
$S generate --network $D/r1024.pkl --seeds 0-95 --batch 8 --device cuda:0 --outdir $D/d1 --png-level 1 -q; $S generate --network $D/r1024.pkl --seeds 0-95 --batch 8 --device cuda:0,0 --png-level 1 --outdir $D/d2 2>&1 | tail -1
diff -r -q $D/d1 $D/d2 >/dev/null && echo "IDENTICAL ($(ls $D/d1 | wc -l) files)" || echo "DIFFER"; rm -rf $D/d1 $D/d2; el
echo "== PIL reference PNGs"
$S generate --network $D/r1024.pkl --seeds 0-15 --format u8npy --outdir $D/u1 -q; $S generate --network $D/r256.pkl --seeds 0-63 --format u8npy --outdir $D/u2 -q
python3 - $D/u1 $OUT/ref1024 $D/u2 $OUT/ref256 <<'PY'
import sys, os, time, numpy as np, PIL.Image
for src, dst in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    os.makedirs(dst, exist_ok=True); t = 0; n = 0
    for f in sorted(os.listdir(src)):
        a = np.load(os.path.join(src, f)); s = time.perf_counter()
        PIL.Image.fromarray(a, 'RGB').save(os.path.join(dst, f[:-4] + '.png')); t += time.perf_counter() - s; n += 1
    print(f'PIL save (gen_images.py call), 1 thread: {n} images {a.shape}: {1e3 * t / n:.1f} ms/img')
PY
el
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $N/sg2_gpu_tests --gtest_filter='GpuStream.*:GpuKernels.ToUint8*' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY" $OUT/memcheck.log | head -3; el
run() { echo "== $1"; shift; "$@" 2>&1 | grep -E "^(auto|fp16|tf32|fp32) |^device" ; }
run "this build, invariance on,off" $S bench --config ffhq1024-f --batch 1,32 --precision auto,fp16,tf32,fp32 --batch-invariance on,off --iters 20 -q; el
run "baseline a38d28c" env LD_LIBRARY_PATH=$W/baseline $W/baseline/sg2 bench --config ffhq1024-f --batch 1,32 --precision auto,fp16,tf32,fp32 --iters 20 -q; el
echo "== official (stylegan3 networks_stylegan2, custom ops), same run"
timeout 150 python3 $R/tools/bench_official.py --sg3 $W/sg3 --configs ffhq1024-f --batches 1,32 --modes auto,fp16,fp32 --iters 10 --json $OUT/official.json > $OUT/official.log 2>&1; echo "official rc=$?"
tail -10 $OUT/official.log
echo "total $(( $(date +%s) - t0 )) s"
