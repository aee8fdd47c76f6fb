#!/usr/bin/env bash
# Issue 25's target: N images at 256x256 (the official random paper256 pickle, tools/e2e_official.py) with their
# latent archive in a dataset zip, in one `sg2 generate` run, timed (wall, peak RSS by /usr/bin/time -v), beside
# stylegan3-editing's one-image loop on the official code (tools/interfacegan_official.py) measured on a slice and
# extrapolated linearly to N (the loop does the same work per image, so its time is linear in N; its warm-up is
# left out of the slice, so the extrapolation favours it).
#
#   tools/h200/latents_500k.sh [N=500000] [SLICE=2000] [PSI=0.7]
# Environment: SG2 (the sg2 binary; default build/sg2), SG3 (a NVlabs/stylegan3 checkout; default .gpucarry/sg3),
# D (work folder; default /tmp/latents500k), BATCH (sg2 --batch; default: sg2's own choice).
# Disk: about N x (a 256x256 PNG + 29 KiB of latents) — ~45 KiB x N for a random pickle's noisy images is measured
# first on 1,000 images, and the run stops before it starts when the folder's file system cannot hold it.
set -u
cd "$(dirname "$0")/../.."
R=$PWD
N=${1:-500000}; SLICE=${2:-2000}; PSI=${3:-0.7}
SG2=${SG2:-$R/build/sg2}; SG3=${SG3:-$R/.gpucarry/sg3}; D=${D:-/tmp/latents500k}; BATCH=${BATCH:-}
mkdir -p "$D"
[[ -x $SG2 ]] || { echo "no sg2 binary at $SG2 (set SG2=...)"; exit 1; }
[[ -d $SG3 ]] || { echo "no stylegan3 checkout at $SG3 (set SG3=...)"; exit 1; }
batch=(); [[ -n $BATCH ]] && batch=(--batch "$BATCH")
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1
echo "sg2: $($SG2 --version)  N=$N slice=$SLICE psi=$PSI  folder $D"

# 1. the official random paper256 pickle (res 256, channel_base 16384, map 8)
[[ -s $D/r256.pkl ]] || python3 "$R/tools/e2e_official.py" --sg3 "$SG3" --out "$D/r256.pkl" --res 256 --cbase 16384 || exit 1

# 2. bytes per image on 1,000 images (PNG + archive rows), then the disk check
rm -rf "$D/probe.zip" "$D/probe.npz"
"$SG2" generate --network "$D/r256.pkl" --seeds 0-999 --trunc "$PSI" "${batch[@]}" --outdir "$D/probe.zip" \
  --save-latents "$D/probe.npz" --quiet || exit 1
per=$(( ( $(stat -c %s "$D/probe.zip") + $(stat -c %s "$D/probe.npz") ) / 1000 ))
need=$(( per * N * 11 / 10 )); free=$(( $(df -B1 --output=avail "$D" | tail -1) ))
echo "probe: $per bytes per image (PNG + latents); $N images need ~$(( need >> 30 )) GiB, $(( free >> 30 )) GiB free"
rm -f "$D/probe.zip" "$D/probe.npz"
(( need < free )) || { echo "not enough disk for N=$N in $D: take a larger machine or a smaller N"; exit 1; }

# 3. sg2: images + dataset.json + latents (seeds, z, w) in one run
rm -f "$D/fakes.zip" "$D/fakes.npz"
# /usr/bin/time -v where it is installed, else the same two lines from Python's getrusage of the child
timed() {
  if [[ -x /usr/bin/time ]]; then /usr/bin/time -v "$@"; return; fi
  python3 -c 'import resource, subprocess, sys, time
t = time.time(); rc = subprocess.call(sys.argv[1:]); dt = time.time() - t
sys.stderr.write("\tElapsed (wall clock) time (h:mm:ss or m:ss): %d:%05.2f\n" % (dt // 60, dt % 60))
sys.stderr.write("\tMaximum resident set size (kbytes): %d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$@"
}
timed "$SG2" generate --network "$D/r256.pkl" --seeds 0-$(( N - 1 )) --trunc "$PSI" "${batch[@]}" \
  --outdir "$D/fakes.zip" --save-latents "$D/fakes.npz" > "$D/sg2.log" 2> "$D/sg2.time"
rc=$?; tail -1 "$D/sg2.log"
wall=$(grep "Elapsed (wall clock)" "$D/sg2.time" | awk '{print $NF}'); rss=$(grep "Maximum resident" "$D/sg2.time" | awk '{print $NF}')
echo "SG2 rc=$rc: $N images + latents at 256 in $wall wall, peak RSS $(( rss / 1024 )) MiB;" \
  "zip $(( $(stat -c %s "$D/fakes.zip" 2>/dev/null || echo 0) >> 20 )) MiB, npz $(( $(stat -c %s "$D/fakes.npz" 2>/dev/null || echo 0) >> 20 )) MiB"
(( rc == 0 )) || { tail -5 "$D/sg2.time"; exit 1; }

# 4. the archive against numpy and the official mapping: shapes, seeds, and the first rows' w
python3 - "$D/fakes.npz" "$D/r256.pkl" "$SG3" "$PSI" <<'PY'
import sys, zipfile, numpy as np
npz, pkl, sg3, psi = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
zf = zipfile.ZipFile(npz)
print('members:', [(i.filename, i.file_size) for i in zf.infolist()])
def head(name, rows):  # the first rows of a member without reading it all (np.lib.format on the open member)
    with zf.open(name + '.npy') as f:
        ver = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if ver == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fo, dt = read(f)
        n = int(np.prod(shape[1:])) * rows
        return shape, np.frombuffer(f.read(n * dt.itemsize), dtype=dt).reshape((rows,) + tuple(shape[1:]))
shape, seeds = head('seeds', 8); _, z = head('z', 8); wshape, w = head('w', 8)
print('seeds', shape, seeds.tolist(), 'w', wshape)
ok = all(np.array_equal(z[i], np.random.RandomState(int(s)).randn(512).astype(np.float32)) for i, s in enumerate(seeds))
sys.path.insert(0, sg3)
import torch, dnnlib, legacy
with dnnlib.util.open_url(pkl) as f: G = legacy.load_network_pkl(f)['G_ema'].cuda()
ref = G.mapping(torch.from_numpy(z).cuda(), None, truncation_psi=psi).cpu().numpy()
print(f'z == numpy RandomState: {ok}; w vs official mapping (GPU, TF32 off by default): max |diff| {np.abs(ref - w).max():.3g}')
PY

# 5. the stylegan3-editing loop on the official code, on the slice, extrapolated
python3 "$R/tools/interfacegan_official.py" --sg3 "$SG3" --network "$D/r256.pkl" --seeds "$SLICE" --psi "$PSI" \
  --out "$D/official" > "$D/official.log" 2>&1
rc=$?; line=$(grep OFFICIAL-LOOP "$D/official.log"); echo "$line (rc=$rc)"
if [[ -n $line ]]; then
  s=$(echo "$line" | awk '{print $5}')
  awk -v s="$s" -v n="$N" -v k="$SLICE" 'BEGIN{t = s * n / k; printf "OFFICIAL extrapolated to %d images: %.0f s = %.1f h (slice of %d measured)\n", n, t, t / 3600, k}'
else
  tail -20 "$D/official.log"
fi
