#!/usr/bin/env bash
# Recorded device run (session 11, issue 22): build the GPU tests and the CLI for sm_90, Nsight Compute on the
# fp16 batch-32 top blocks' FIR epilogue and fused conv1 (what limits them), then compute-sanitizer racecheck on
# each tensor-core convolution test to its end, the tests run side by side (one process each).
#   bash tools/h200/session11_kernels.sh      ($OUT collects the logs; TOTAL seconds in all, default 330), carrying
# .deps/{libarchive,libdeflate,turbojpeg} (scripts/deps_for_gpu.sh)
set -u
OUT=${OUT:-/tmp/k_out}
mkdir -p "$OUT"
t0=$(date +%s)
TOTAL=${TOTAL:-330}
left() { echo $((TOTAL - ($(date +%s) - t0))); }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 -DSG2_ONEDNN=OFF \
  -DSG2_SERVE=OFF -DSG2_DEPS_DIR="$PWD/.deps" >"$OUT/build.log" 2>&1 && cmake --build build -j16 --target sg2_cli sg2_gpu_tests >>"$OUT/build.log" 2>&1 ||
  { grep -E "error" "$OUT/build.log" | head; echo BUILD FAILED; exit 1; }
echo "built in $(($(date +%s) - t0)) s"
export LD_LIBRARY_PATH=$PWD/build
# Nsight Compute: the largest launches of each kernel in one eager fp16 generate at batch 32
timeout 150 ncu --kernel-name regex:'upconv_epilogue|fused_conv|tc_tconv' --launch-count 30 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  build/sg2 bench --config ffhq1024-f --batch 32 --precision fp16 --iters 1 --warmup 0 --profile 32 -q >"$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"
python3 - "$OUT/ncu.txt" <<'PY'
import re, sys
rows, cur = [], None
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'\s+(\S+?)(<.*>)?\(.*\)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)', line)
    if m:
        cur = {'kernel': m.group(1)}; rows.append(cur); continue
    if cur is None: continue
    for key, pat in (('ms', r'^\s+Duration\s+(\S+)\s+(\S+)'), ('dram%', r'^\s+DRAM Throughput\s+\S+\s+(\S+)'),
                     ('mem%', r'^\s+Memory Throughput\s+\S+\s+(\S+)'), ('sm%', r'^\s+Compute \(SM\) Throughput\s+\S+\s+(\S+)'),
                     ('occ%', r'^\s+Achieved Occupancy\s+\S+\s+(\S+)'), ('regs', r'^\s+Registers Per Thread\s+\S+\s+(\S+)')):
        mm = re.match(pat, line)
        if mm and key not in cur:
            cur[key] = mm.group(1) if key != 'ms' else f"{mm.group(2)} {mm.group(1)}"
for r in rows:
    print('  '.join(f'{k}={v}' for k, v in r.items()))
PY
grep -E "^\s+(Stall|Warp Cycles Per Issued|Issue Slot|One or More Eligible)" "$OUT/ncu.txt" | head -20
# racecheck: each tensor-core test in its own process, side by side, to its end
pids=()
for t in TensorCoreConvMatchesReference TensorCoreConvIsBatchInvariant TensorCoreWgmmaActivationBoxes \
  TensorCoreConvLaunchChoicesKeepTheBits Tf32x3ConvIsAsAccurateAsFma TransposedTensorCoreConvIsBatchInvariant \
  TransposedTensorCoreConvTiles FusedConvF16MatchesReference; do
  (timeout $(($(left) - 15)) compute-sanitizer --tool racecheck --error-exitcode 9 build/tests/sg2_gpu_tests \
    --gtest_color=no --gtest_filter="GpuKernels.$t" >"$OUT/race_$t.log" 2>&1; echo "racecheck $t rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/race_$t.log") $(grep -E '^\[  (PASSED|FAILED)' "$OUT/race_$t.log" | head -1) $(grep -oE '\([0-9]+ ms\)' "$OUT/race_$t.log" | tail -1)") &
  pids+=($!)
done
wait "${pids[@]}"
echo "total $(($(date +%s) - t0)) s"
