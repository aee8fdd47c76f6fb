#!/usr/bin/env bash
# Recorded device run (docs/performance.md §5). Expects .gpucarry/ with bins.tar.xz (new/: sg2, libsg2.so.0,
# sg2_png_bench, sg2_gpu_tests built here for sm_90; baseline/: a38d28c) and sg3/ (a NVlabs/stylegan3 checkout).
# GPU run 3d (issue 12, new PNG encoder: PIL's filters + zlib level 6 = default, libdeflate fast):
# official gen_images.py and sg2 on the same official random 1024 pickle in the same run.
set -u
cd "$(dirname "$0")/../.."
R=$PWD; W=/tmp/w; mkdir -p $W; tar xJf $R/.gpucarry/bins.tar.xz -C $W new; cp -r $R/.gpucarry/sg3 $W/
N=$W/new; export LD_LIBRARY_PATH=$N; S=$N/sg2; D=/tmp/e2e; mkdir -p $D
t0=$(date +%s); el() { echo "   [t $(( $(date +%s) - t0 )) s]"; }
( python3 $R/tools/e2e_official.py --sg3 $W/sg3 --out $D/r1024.pkl > $D/p1.log 2>&1 ) &
( python3 $R/tools/e2e_official.py --sg3 $W/sg3 --out $D/r256.pkl --res 256 --cbase 16384 > $D/p2.log 2>&1 ) &
wait; el
mkdir -p /work && ln -sfn "$R" /work/main
timeout 120 $N/sg2_gpu_tests --gtest_color=no > $OUT/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED)" $OUT/gpu_tests.log | head -3; el
timeout 150 python3 $R/tools/run_official.py $W/sg3 gen_images.py --network $D/r1024.pkl --seeds 0-1 --outdir $D/offwarm > $D/offwarm.log 2>&1; echo "warm rc=$?"; el
a=$(date +%s.%N); timeout 100 python3 $R/tools/run_official.py $W/sg3 gen_images.py --network $D/r1024.pkl --seeds 0-63 --outdir $D/off > $D/off.log 2>&1; echo "official rc=$?"
b=$(date +%s.%N); n=$(ls $D/off/*.png | wc -l); echo "OFFICIAL gen_images.py: $n PNG in $(awk "BEGIN{printf \"%.2f\", $b - $a}") s = $(awk "BEGIN{printf \"%.2f\", $n / ($b - $a)}") img/s, $(du -sb $D/off | cut -f1) bytes"; el
echo "== sg2 generate seeds 0-63 default level vs official: sizes, pixels, IDAT streams"
$S generate --network $D/r1024.pkl --seeds 0-63 --outdir $D/s64 2>&1 | tail -1
python3 - $D/off $D/s64 <<'PY'
import sys, os, struct, numpy as np
from PIL import Image
def idat(p):
    d = open(p, 'rb').read(); i = 8; out = b''
    while i < len(d):
        n, = struct.unpack('>I', d[i:i+4]); out += d[i+8:i+8+n] if d[i+4:i+8] == b'IDAT' else b''; i += 12 + n
    return out
a, b = sys.argv[1], sys.argv[2]; fs = sorted(os.listdir(a)); same_px = 0; worst = 0; sa = sb = 0; same_stream = 0
for f in fs:
    x = np.asarray(Image.open(os.path.join(a, f))).astype(int); y = np.asarray(Image.open(os.path.join(b, f))).astype(int)
    d = np.abs(x - y).max(); worst = max(worst, d); same_px += d == 0
    sa += os.path.getsize(os.path.join(a, f)); sb += os.path.getsize(os.path.join(b, f))
    # sg2's pixels re-saved by PIL: is PIL's stream for sg2's pixels sg2's stream?
    Image.fromarray(y.astype(np.uint8), 'RGB').save('/tmp/e2e/re.png'); same_stream += idat('/tmp/e2e/re.png') == idat(os.path.join(b, f))
print(f'{len(fs)} files: pixels identical {same_px}, max |diff| {worst}; bytes sg2/official {sb}/{sa} = {100*(sb/sa-1):+.3f} %; PIL stream of sg2 pixels == sg2 stream: {same_stream}/{len(fs)}')
PY
el
echo "== sg2_png_bench vs the official PNGs, 16 threads"
timeout 100 $N/sg2_png_bench $D/off --levels 1,4,5,6,9,fast,smallest --threads 16 --limit 64 --time-images 4 --reps 1 2>&1 | tail -9; el
for cfg in "default png" "fast png" "default u8npy"; do
  set -- $cfg; rm -rf $D/g
  a=$(date +%s.%N); $S generate --network $D/r1024.pkl --seeds 0-2047 --batch 32 --png-level $1 --format $2 --outdir $D/g 2>&1 | tail -1; b=$(date +%s.%N)
  echo "SG2 1024 --png-level $1 --format $2: 2048 in $(awk "BEGIN{printf \"%.2f\", $b - $a}") s wall (with load) = $(awk "BEGIN{printf \"%.1f\", 2048 / ($b - $a)}") img/s, $(du -sm $D/g | cut -f1) MB"
done; rm -rf $D/g; el
echo "== bench --end-to-end (1024: default, fast, u8npy; 256: default, fast)"
for f in "--png-level default" "--png-level fast" "--format u8npy"; do
  $S bench --end-to-end --network $D/r1024.pkl --seeds 0-1023 --batch 32 $f -q 2>&1 | tail -4; done; el
for f in "--png-level default" "--png-level fast"; do
  $S bench --end-to-end --network $D/r256.pkl --seeds 0-9999 $f -q 2>&1 | tail -4; done; el
rm -rf $D/p; a=$(date +%s.%N); $S generate --network $D/r256.pkl --seeds 0-9999 --outdir $D/p 2>&1 | tail -1; b=$(date +%s.%N)
echo "SG2 256 default: 10000 in $(awk "BEGIN{printf \"%.2f\", $b - $a}") s wall = $(awk "BEGIN{printf \"%.1f\", 10000 / ($b - $a)}") img/s, $(du -sm $D/p | cut -f1) MB"; rm -rf $D/p; el
echo "total $(( $(date +%s) - t0 )) s"
