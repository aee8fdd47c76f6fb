#!/usr/bin/env bash
# Recorded device run (issue 24, sg2 serve): build sg2 for sm_90 on the GPU host, make the official random ffhq1024
# and paper256 pickles (tools/e2e_official.py), check that served PNGs are sg2 generate's and sg2 mix's files byte
# for byte (concurrent and sequential requests), then measure sg2 serve and the official one-image-per-request Python
# server (tools/serve_official.py --serve-port) with the same outside client (tools/serve_load.py): 1024 and 256
# JPEG at 64 connections closed loop, one client, and 1024 at a fixed 600 req/s over 64 connections (open loop).
# Phases run by priority and are skipped, saying so, when the time left (TOTAL, default 345 s) is too short.
#
#   mkdir -p /tmp/s/tests && tar xf .gpucarry/serve.tar -C /tmp/s && cp -r models /tmp/s && cp -r tests/data /tmp/s/tests \
#     && tar xJf .gpucarry/boost.tar.xz -C .deps && bash /tmp/s/tools/h200/serve_run.sh "$PWD"
# from the main tree, carrying .gpucarry/{serve.tar,boost.tar.xz,sg3} and .deps/{libarchive,libdeflate,turbojpeg}
# (scripts/deps_for_gpu.sh; the Boost headers travel compressed, since the tree, .deps and all pass 64 MiB).
set -u
S=$(cd "$(dirname "$0")/../.." && pwd)  # the tree to build (sg2 serve's)
R=${1:-$PWD}                            # the tree with .deps/ and .gpucarry/sg3
OUT=${OUT:-/tmp/serve_out}
D=/tmp/serve_data
mkdir -p "$OUT" "$D"
t0=$(date +%s)
TOTAL=${TOTAL:-345}
DUR=${DUR:-30}  # seconds of each measured window under load (the issue's 30 s)
el() { echo "   [t $(($(date +%s) - t0)) s]"; }
left() { echo $((TOTAL - ($(date +%s) - t0))); }
need() { # need SECONDS WHAT: true when that much time is left, else says it skips WHAT
  if (($(left) >= $1)); then return 0; fi
  echo "SKIPPED (time): $2"
  return 1
}
table=()
row() { table+=("$(printf '%-44s %s' "$1" "$2")"); }
LOAD="python3 $S/tools/serve_load.py"
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "cores $(nproc)"

# --- build (16 cores) beside the two pickles (SG2_PREBUILT=1: $S/build is built already; pickles already in $D stay)
if [[ -z "${SG2_PREBUILT:-}" ]]; then
  (cmake -S "$S" -B "$S/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 \
    -DSG2_ONEDNN=OFF -DSG2_BUILD_TESTS=OFF -DSG2_DEPS_DIR="$R/.deps" && cmake --build "$S/build" -j16) >"$OUT/build.log" 2>&1 &
  build=$!
fi
p1=
p2=
[[ -s $D/r1024.pkl ]] || { python3 "$S/tools/e2e_official.py" --sg3 "$R/.gpucarry/sg3" --out $D/r1024.pkl >$D/p1.log 2>&1 & p1=$!; }
[[ -s $D/r256.pkl ]] || { python3 "$S/tools/e2e_official.py" --sg3 "$R/.gpucarry/sg3" --out $D/r256.pkl --res 256 --cbase 16384 >$D/p2.log 2>&1 & p2=$!; }
[[ -n $p1$p2 ]] && wait $p1 $p2
tail -1 $D/p1.log 2>/dev/null
tail -1 $D/p2.log 2>/dev/null
if [[ -z "${SG2_PREBUILT:-}" ]]; then
  if ! wait $build; then
    grep -E "error|Error" "$OUT/build.log" | head -30
    echo "BUILD FAILED"
    exit 1
  fi
  grep -E "sg2: (Boost|TurboJPEG)" "$OUT/build.log"
  echo "built"
fi
el
SG2=$S/build/sg2
export LD_LIBRARY_PATH=$S/build

# start_server LOG CMD...: starts it in the background, waits for its listening line; sets SRV_PID and SRV_URL
start_server() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  SRV_PID=$!
  SRV_URL=
  for _ in $(seq 1 1200); do
    SRV_URL=$(grep -o -m1 'listening on http://[0-9.]*:[0-9]*' "$log" | sed 's/listening on //')
    [[ -n "$SRV_URL" ]] && return 0
    kill -0 $SRV_PID 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start: $(tail -5 "$log")"
  return 1
}
stop_server() {
  kill -TERM "$SRV_PID" 2>/dev/null
  wait "$SRV_PID"
  echo "server exit status $? (after SIGTERM)"
}
measure() { # measure LABEL ARGS...: one serve_load run, its summary line and a table row
  local label=$1
  shift
  local j=$OUT/load_$(echo "$label" | tr -c 'A-Za-z0-9' '_').json
  timeout 120 $LOAD "$SRV_URL" --server-pid "$SRV_PID" --label "$label" --json "$j" "$@"
  if [[ -f "$j" ]]; then
    row "$label" "$(python3 -c "import json,sys; f=json.load(open(sys.argv[1])); st=' '.join(f\"{k[7:-7]} {v:.2f}\" for k, v in f.items() if k.startswith('server_') and k.endswith('_p50_ms')); print(f\"{f['img_per_s']:8.1f} img/s  p50 {f['p50_ms']:8.2f} ms  p99 {f['p99_ms']:8.2f} ms  batch {f['mean_batch']:5.2f}  CPU {f.get('server_cpu_cores', 0):5.2f} cores  ok {f['ok']}/{f['requests']}\" + (f'  server p50 {st} ms' if st else ''))" "$j")"
  fi
}

# --- sg2 serve, 1024: identity, then load -------------------------------------------------------------------------
if need 120 "sg2 serve 1024"; then
  echo "== sg2 serve, official random ffhq1024 pickle, cuda:0, precision auto"
  timeout 60 $SG2 generate --network $D/r1024.pkl --seeds 0-15 --outdir $D/gen -q
  timeout 60 $SG2 mix --network $D/r1024.pkl --rows 1,2 --cols 3 --styles 0-5 --trunc 0.7 --outdir $D/mix -q
  if start_server $OUT/serve1024.log $SG2 serve --network $D/r1024.pkl --port 0; then
    grep -v '"GET' $OUT/serve1024.log | head -3
    el
    timeout 90 python3 - "$SRV_URL" $D <<'PY'
import concurrent.futures, sys, urllib.request
url, d = sys.argv[1], sys.argv[2]
def get(q):
    with urllib.request.urlopen(f'{url}/v1/generate?{q}', timeout=60) as r:
        return r.read(), r.headers.get('X-Sg2-Batch')
def ref(name):
    return open(f'{d}/{name}', 'rb').read()
cases = [(f'seed={s}', f'gen/seed{s:04d}.png') for s in range(16)]
cases += [(f'row-seed={r}&col-seed={c}&styles=0-5&trunc=0.7', f'mix/{r}-{c}.png') for r, c in ((1, 3), (2, 3), (3, 3))]
seq = sum(get(q)[0] == ref(f) for q, f in cases)
with concurrent.futures.ThreadPoolExecutor(len(cases)) as ex:
    got = list(ex.map(lambda c: get(c[0]), cases))
conc = sum(g[0] == ref(f) for g, (q, f) in zip(got, cases))
print(f'IDENTITY 1024 PNG: sequential {seq}/{len(cases)}, concurrent {conc}/{len(cases)} byte-identical to sg2 '
      f'generate / sg2 mix files; concurrent batches {sorted(int(g[1]) for g in got)}')
PY
    el
    measure "sg2 1024 jpeg, 1 client" --query format=jpeg --connections 1 --duration 10
    # curl as the one client (keep-alive, 200 requests): its own time per transfer
    urls=()
    for s in $(seq 5000 5199); do urls+=(-o /dev/null "$SRV_URL/v1/generate?seed=$s&format=jpeg"); done
    timeout 60 curl -s -w '%{time_total}\n' "${urls[@]}" >$OUT/curl1024.txt
    row "curl 1024 jpeg, 1 client, 200 requests" "$(sort -n $OUT/curl1024.txt | awk '{a[NR]=$1} END {printf "p50 %.2f ms  p90 %.2f ms  min %.2f ms", a[int(NR*0.5)]*1000, a[int(NR*0.9)]*1000, a[1]*1000}')"
    measure "sg2 1024 jpeg, 64 conns closed" --query format=jpeg --connections 64 --duration $DUR
    need 40 "sg2 1024 open loop" && measure "sg2 1024 jpeg, 600 req/s open, 64 conns" --query format=jpeg \
      --connections 64 --rate 600 --duration $DUR
    need 30 "sg2 1024 png fast" && measure "sg2 1024 png fast, 64 conns closed" --query png-level=fast \
      --connections 64 --duration 6
    timeout 10 curl -s "$SRV_URL/metrics" >$OUT/metrics1024.txt
    grep -E '^sg2_(batch_size_(sum|count)|images_total|gpu_memory_bytes|batch_failures_total)' $OUT/metrics1024.txt
    stop_server
  fi
  el
fi
if need 60 "sg2 1024 one client, --jpeg-threads 1"; then
  if start_server $OUT/serve1024_jt1.log $SG2 serve --network $D/r1024.pkl --port 0 -q --jpeg-threads 1; then
    measure "sg2 1024 jpeg, 1 client, --jpeg-threads 1" --query format=jpeg --connections 1 --duration 10
    stop_server
  fi
  el
fi

# --- the official one-image-per-request server, 1024 -------------------------------------------------------------
if need 75 "official server 1024"; then
  echo "== official generator behind a one-image-per-request Python server (tools/serve_official.py), 1024"
  if start_server $OUT/official1024.log python3 "$S/tools/serve_official.py" --sg3 "$R/.gpucarry/sg3" \
    --network $D/r1024.pkl --format jpeg --serve-port 0; then
    el
    measure "official 1024 jpeg, 64 conns closed" --connections 64 --duration $DUR --warmup 2
    need 25 "official 1024 one client" && measure "official 1024 jpeg, 1 client" --connections 1 --duration 5
    stop_server
  fi
  el
fi

# --- 256 ------------------------------------------------------------------------------------------------------------
if need 50 "sg2 serve 256"; then
  echo "== sg2 serve, official random paper256 pickle (res 256, cbase 16384)"
  if start_server $OUT/serve256.log $SG2 serve --network $D/r256.pkl --port 0 -q; then
    measure "sg2 256 jpeg, 64 conns closed" --query format=jpeg --connections 64 --duration $DUR
    need 20 "sg2 256 one client" && measure "sg2 256 jpeg, 1 client" --query format=jpeg --connections 1 --duration 5
    stop_server
  fi
  el
fi
if need 45 "official server 256"; then
  if start_server $OUT/official256.log python3 "$S/tools/serve_official.py" --sg3 "$R/.gpucarry/sg3" \
    --network $D/r256.pkl --format jpeg --serve-port 0; then
    measure "official 256 jpeg, 64 conns closed" --connections 64 --duration $DUR --warmup 2
    stop_server
  fi
  el
fi

echo "== summary (serve_load.py: images served in the measured window; latency from send, or from the scheduled"
echo "   send in the open loop; batch: mean X-Sg2-Batch; CPU: the server process's cores over the window)"
printf '%s\n' "${table[@]}"
echo "total $(($(date +%s) - t0)) s"
