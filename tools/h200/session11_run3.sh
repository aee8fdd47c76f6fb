#!/usr/bin/env bash
# Recorded device run (session 11, run 3): the GPU archive test again (its fixed comparison), then issue 25's
# 500,000-image target (tools/h200/latents_500k.sh: a dataset zip with its latent archive at 256, beside the
# stylegan3-editing loop on the official code, measured on a slice and extrapolated). A 20,000-image run first
# predicts the big run's time; when it would not fit in TOTAL, the largest N that fits runs instead (said so).
#   TOTAL=560 bash tools/h200/session11_run3.sh    carrying .gpucarry/sg3 and .deps/{libarchive,libdeflate,turbojpeg}
set -u
R=$PWD
OUT=${OUT:-/tmp/out3}
mkdir -p "$OUT"
t0=$(date +%s)
TOTAL=${TOTAL:-560}
left() { echo $((TOTAL - ($(date +%s) - t0))); }
D=/tmp/latents500k
mkdir -p $D
python3 tools/e2e_official.py --sg3 .gpucarry/sg3 --out $D/r256.pkl --res 256 --cbase 16384 >$D/p.log 2>&1 &
p=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 -DSG2_ONEDNN=OFF \
  -DSG2_SERVE=OFF -DSG2_DEPS_DIR="$R/.deps" >"$OUT/build.log" 2>&1 &&
  cmake --build build -j16 --target sg2_cli sg2_gpu_tests >>"$OUT/build.log" 2>&1 ||
  { grep -E "error" "$OUT/build.log" | head -20; echo BUILD FAILED; exit 1; }
export LD_LIBRARY_PATH=$R/build
timeout 60 build/tests/sg2_gpu_tests --gtest_color=no --gtest_filter='GpuArchives.*:GpuEdit.*' >"$OUT/gpu.log" 2>&1
echo "GpuArchives.*, GpuEdit.* rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/gpu.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is" "$OUT/gpu.log" | head -6
wait $p
tail -1 $D/p.log
rm -rf /tmp/probe20k.zip /tmp/probe20k.npz
a=$(date +%s.%N)
build/sg2 generate --network $D/r256.pkl --seeds 0-19999 --trunc 0.7 --outdir /tmp/probe20k.zip --save-latents /tmp/probe20k.npz -q
b=$(date +%s.%N)
rm -rf /tmp/probe20k.zip /tmp/probe20k.npz
t20=$(awk "BEGIN{print $b - $a}")
echo "20,000 images + latents in $t20 s (model load included)"
# budget: the big run, the 1,000-image probe (~8 s) and the official slice (~60 s)
avail=$(($(left) - 110))
N=$(awk -v t="$t20" -v a="$avail" 'BEGIN{n = int(a / t * 20000 * 0.9 / 10000) * 10000; if (n > 500000) n = 500000; print n}')
echo "predicted for 500,000: $(awk -v t="$t20" 'BEGIN{printf "%.0f", t * 25}') s; $avail s available: N = $N"
SG2=$R/build/sg2 SG3=$R/.gpucarry/sg3 D=$D timeout $(($(left) - 5)) bash tools/h200/latents_500k.sh "$N" 1000 0.7 2>&1 | tee "$OUT/latents.log"
echo "total $(($(date +%s) - t0)) s"
