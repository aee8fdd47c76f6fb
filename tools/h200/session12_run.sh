#!/usr/bin/env bash
# Recorded device run (session 12, issue 22): this tree and a baseline (this tree with the files of
# .gpucarry/base laid over it: the kernels before the change) built for sm_90 side by side, the GPU tests
# (the changed kernels' first), compute-sanitizer memcheck and racecheck on them, then `sg2 bench` of both
# builds alternated in one call (ffhq1024-f and paper256, auto and fp16), the per-step profile of both, the
# official code (tools/bench_official.py) when SG3 names a stylegan3 checkout, then the sanitizers and the
# multi-GPU serve test (phases in the order that matters most when time runs short: the sanitizers before
# the official code and the end-to-end run).
#   bash tools/h200/session12_run.sh    carrying .gpucarry, prepared here (ignored by git; 4.3 MB):
#     scripts/deps_for_gpu.sh; mkdir -p .gpucarry/deps; cp -r .deps/{libarchive,libdeflate,turbojpeg,VERSIONS} .gpucarry/deps/
#     tar cJf .gpucarry/boost.tar.xz -C .deps boost          (sg2 serve's headers, for the serve phase)
#     scripts/fetch_cutlass.sh; tar cJf .gpucarry/cutlass.tar.xz -C .deps cutlass   (the kernels phase's CUTLASS candidates)
#     .gpucarry/sg3: dnnlib torch_utils training legacy.py of NVlabs/stylegan3 (the official phase)
#     .gpucarry/base/<path>: the files of the baseline (e.g. git show REV:kernels/x.cu > .gpucarry/base/kernels/x.cu)
#     .gpucarry/ov/<name>/<path>: a variant's files (OVERLAYS), e.g. git diff --name-only main BRANCH -- kernels engine
#       tests dev, each written by git show BRANCH:<path>
# Environment: OUT (logs), PHASES (build,test,bench,kernels,profile,ncu,official,e2e,sanitize,serve), KBENCH, TEST_FILTER,
# SAN_FILTER, SAN_TOOLS, SAN_TIMEOUT (seconds per tool, default 120), OFFICIAL_ARGS (';'-separated tools/bench_official.py argument lists), SAN_BIN (the test binary the sanitizers run, default this tree's), PROBE_FILTER, BASE_TEST_FILTER (the baseline's GPU tests too), SG3, BENCH (';'-separated sg2
# bench argument lists, both builds), BENCH_NEW (this
# tree only), ROUNDS, NO_BASE, NCU_KERNELS, PROFILES, OVERLAYS (names of .gpucarry/ov/<name> variants, built, tested with
# OV_TEST_FILTER and benched beside the baseline), E2E_SEEDS (the e2e phase's seed range, default 0-4095), E2E_TARGETS
# (its output folders, default the disk then /dev/shm), OV_TEST_TIMEOUT (seconds per overlay's tests; one that fails is
# not benched).
set -u
OUT=${OUT:-/tmp/s12_out}
PH=${PHASES:-build,test,sanitize,bench,profile}
SG3=${SG3:-$PWD/.gpucarry/sg3}  # the official phases' stylegan3 checkout
has() { [[ ",$PH," == *",$1,"* ]]; }
mkdir -p "$OUT"
t0=$(date +%s)
el() { echo "   [t $(($(date +%s) - t0)) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cfg=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DSG2_CUDA=ON -DSG2_CUDA_ARCHITECTURES=90 -DSG2_ONEDNN=OFF -DSG2_SERVE=OFF -DSG2_WERROR=ON
  -DSG2_DEPS_DIR="$PWD/.gpucarry/deps")
serve_cfg=()
cutlass_cfg=()
if has kernels && [[ -f .gpucarry/cutlass.tar.xz ]]; then  # the kernel runner's CUTLASS candidates (dev/cutlass)
  tar xJf .gpucarry/cutlass.tar.xz -C .gpucarry/deps && cutlass_cfg=(-DSG2_CUTLASS_DIR="$PWD/.gpucarry/deps/cutlass")
fi
if has serve; then  # sg2 serve too: Boost's headers travel as .gpucarry/boost.tar.xz (the tree's limit)
  tar xJf .gpucarry/boost.tar.xz -C .gpucarry/deps && serve_cfg=(-DSG2_SERVE=ON)
fi
if has official; then  # the official custom ops compile on the CPU while sg2 builds
  (timeout 300 python3 tools/bench_official.py --sg3 "$SG3" --configs paper256 --batches 1 --modes fp16 --iters 1 \
    >/tmp/official_warmup.log 2>&1) &
  warm_pid=$!
fi
if has e2e; then  # the official random ffhq1024-f ADA pickle (tools/e2e_official.py) written while sg2 builds
  mkdir -p /tmp/e2e && (timeout 300 python3 tools/e2e_official.py --sg3 "$SG3" --out /tmp/e2e/r1024.pkl \
    >/tmp/e2e/pickle.log 2>&1) &
  e2e_pid=$!
fi
if has build; then
  rm -rf /tmp/base && mkdir -p /tmp/base && cp -r CMakeLists.txt api apps cmake dev engine formats include kernels models \
    readers tests tools util /tmp/base/ && cp -r .gpucarry/base/. /tmp/base/
  (cmake -S . -B build "${cfg[@]}" "${serve_cfg[@]}" "${cutlass_cfg[@]}" >"$OUT/build.log" 2>&1 &&
    cmake --build build -j16 --target sg2_cli sg2_gpu_tests $(has kernels && echo sg2_kernel_bench) >>"$OUT/build.log" 2>&1) || {
    grep -E "error|warning" "$OUT/build.log" | head -20
    echo BUILD FAILED
    exit 1
  }
  echo "built: $(grep -c -i -E 'warning' "$OUT/build.log") warning lines"
  el
  # the baseline compiles while the tests run (NO_BASE=1: none)
  [[ -n "${NO_BASE:-}" ]] || (cd /tmp/base && cmake -S . -B build "${cfg[@]}"  >"$OUT/base_build.log" 2>&1 &&
    cmake --build build -j12 --target sg2_cli ${BASE_TEST_FILTER:+sg2_gpu_tests} >>"$OUT/base_build.log" 2>&1) &
  [[ -n "${NO_BASE:-}" ]] || base_pid=$!
  # OVERLAYS: more variants, each this tree with .gpucarry/ov/<name> laid over it (e.g. a branch's
  # changed files), built beside the baseline, tested (OV_TEST_FILTER) and benched like it
  ov_pids=()
  for ov in ${OVERLAYS:-}; do
    rm -rf "/tmp/ov_$ov" && mkdir -p "/tmp/ov_$ov" && cp -r CMakeLists.txt api apps cmake dev engine formats include \
      kernels models readers tests tools util "/tmp/ov_$ov/" && cp -r ".gpucarry/ov/$ov/." "/tmp/ov_$ov/"
    (cd "/tmp/ov_$ov" && cmake -S . -B build "${cfg[@]}" >"/tmp/ov_${ov}_build.log" 2>&1 &&
      cmake --build build -j8 --target sg2_cli ${OV_TEST_FILTER:+sg2_gpu_tests} >>"/tmp/ov_${ov}_build.log" 2>&1) &
    ov_pids+=($!)
  done
fi
export LD_LIBRARY_PATH=$PWD/build
if has test; then
  timeout 60 build/tests/sg2_gpu_tests --gtest_color=no --gtest_filter="${PROBE_FILTER:-GpuKernels.Upconv*}" \
    >"$OUT/probe.log" 2>&1
  echo "probe rc=$?"
  grep -E '^\[  (PASSED|FAILED) +\]|Failure$|max \||Which is|Expected' "$OUT/probe.log" | head -20
  timeout "${TEST_TIMEOUT:-240}" build/tests/sg2_gpu_tests --gtest_color=no --gtest_filter="${TEST_FILTER:-*}" \
    >"$OUT/gpu_tests.log" 2>&1
  rc=$?
  echo "gpu tests rc=$rc"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^\[  FAILED  \]' "$OUT/gpu_tests.log" | head -30
  el
fi
[[ -n "${base_pid:-}" ]] && { wait "$base_pid"; echo "baseline build rc=$?"; }
if [[ -n "${BASE_TEST_FILTER:-}" && -x /tmp/base/build/tests/sg2_gpu_tests ]]; then  # the baseline's own tests
  LD_LIBRARY_PATH=/tmp/base/build timeout 120 /tmp/base/build/tests/sg2_gpu_tests --gtest_color=no \
    --gtest_filter="$BASE_TEST_FILTER" >"$OUT/base_tests.log" 2>&1
  echo "baseline tests rc=$?"
  grep -E '^\[  (PASSED|FAILED) +\]|^\[  FAILED  \]' "$OUT/base_tests.log" | head -10
fi
builds=(build)
[[ -x /tmp/base/build/sg2 ]] && builds+=(/tmp/base/build)
ovs=(${OVERLAYS:-})
for i in "${!ovs[@]}"; do
  ov=${ovs[$i]}
  wait "${ov_pids[$i]}"
  echo "overlay $ov build rc=$?"
  grep -E "error" "/tmp/ov_${ov}_build.log" | head -5
  ov_ok=1
  if [[ -n "${OV_TEST_FILTER:-}" && -x "/tmp/ov_$ov/build/tests/sg2_gpu_tests" ]]; then
    LD_LIBRARY_PATH="/tmp/ov_$ov/build" timeout "${OV_TEST_TIMEOUT:-${TEST_TIMEOUT:-240}}" \
      "/tmp/ov_$ov/build/tests/sg2_gpu_tests" --gtest_color=no --gtest_filter="$OV_TEST_FILTER" \
      >"/tmp/ov_${ov}_tests.log" 2>&1
    rc=$?
    echo "overlay $ov tests rc=$rc"
    [[ $rc -eq 0 ]] || ov_ok=0  # a variant that fails its tests (or hangs) is not benched
    grep -E '^\[  (PASSED|FAILED) +\]|^\[  FAILED  \]|Failure$|exception|wgmma tiles' "/tmp/ov_${ov}_tests.log" | head -12
    cp "/tmp/ov_${ov}_tests.log" "$OUT/" 2>/dev/null
  fi
  [[ $ov_ok -eq 1 && -x "/tmp/ov_$ov/build/sg2" ]] && builds+=("/tmp/ov_$ov/build")
done
if has bench; then
  : >"$OUT/bench.txt"
  IFS=';' read -r -a benches <<<"${BENCH:---config ffhq1024-f --batch 1,32 --precision auto,fp16 --iters 20;--config paper256 --batch 1,128 --precision auto,fp16 --iters 20}"
  for round in $(seq "${ROUNDS:-2}"); do
    for bb in "${benches[@]}"; do
      read -r -a args <<<"$bb"
      for b in "${builds[@]}"; do
        echo "== round $round $b: sg2 bench $bb" >>"$OUT/bench.txt"
        LD_LIBRARY_PATH=$b timeout 150 "$b/sg2" bench "${args[@]}" -q >>"$OUT/bench.txt" 2>&1
      done
    done
  done
  # BENCH_NEW: ';'-separated argument lists run on this tree's build only (e.g. --batch-invariance on,off)
  if [[ -n "${BENCH_NEW:-}" ]]; then
    IFS=';' read -r -a nbs <<<"$BENCH_NEW"
    for bb in "${nbs[@]}"; do
      read -r -a args <<<"$bb"
      echo "== this tree: sg2 bench $bb" >>"$OUT/bench.txt"
      timeout 200 build/sg2 bench "${args[@]}" -q >>"$OUT/bench.txt" 2>&1
    done
  fi
  el
fi
if has kernels; then  # the kernel runner (dev/kernel_bench.cpp) on this tree: KBENCH, ';'-separated argument lists
  : >"$OUT/kernels.txt"
  IFS=';' read -r -a kbs <<<"${KBENCH:---config ffhq1024-f --layer all --precision fp16 --batch 32 --quiet}"
  for kb in "${kbs[@]}"; do
    read -r -a args <<<"$kb"
    echo "== sg2_kernel_bench $kb" >>"$OUT/kernels.txt"
    timeout 200 build/sg2_kernel_bench "${args[@]}" >>"$OUT/kernels.txt" 2>&1
    echo "kernel runner rc=$? ($kb)"
  done
  el
fi
if has profile; then
  : >"$OUT/profile.txt"
  for pb in ${PROFILES:-fp16:32 auto:32}; do  # [config:]precision:batch (config ffhq1024-f when left out)
    IFS=: read -r -a f <<<"$pb"
    [[ ${#f[@]} -eq 2 ]] && f=(ffhq1024-f "${f[@]}")
    for b in "${builds[@]}"; do
      echo "== $b ${pb}" >>"$OUT/profile.txt"
      LD_LIBRARY_PATH=$b timeout 60 "$b/sg2" bench --config "${f[0]}" --batch "${f[2]}" --precision "${f[1]}" --iters 2 \
        --warmup 1 --profile "${f[2]}" >>"$OUT/profile.txt" 2>&1
    done
  done
  grep -E '^==|epilogue' "$OUT/profile.txt" | grep -E '^==|b(1024|512|256|128)\.conv0' | head -24
  el
fi
if has ncu; then  # where the fused conv1 and the FIR epilogue spend their instructions (fp16, batch 32, eager)
  for k in ${NCU_KERNELS:-fused_conv_f16_kernel:0:2:1 upconv_epilogue_sep_kernel:7:1:7}; do  # name:skip:count:source launch
    IFS=: read -r name skip count src <<<"$k"
    timeout 120 ncu -k "regex:$name" --launch-skip "$skip" --launch-count "$count" --section SpeedOfLight \
      --section Occupancy --section WarpStateStats --section InstructionStats --section SourceCounters \
      build/sg2 bench --config ffhq1024-f --batch 32 --precision fp16 --iters 1 --warmup 0 --profile 32 -q \
      >"$OUT/ncu_$name.txt" 2>&1
    echo "ncu $name rc=$?"
    grep -E "^\s+(Duration|DRAM Throughput|Compute \(SM\) Throughput|Executed Ipc Active|Achieved Occupancy|Registers Per|Executed Instructions  )" "$OUT/ncu_$name.txt" | head -14
    timeout 90 ncu -k "regex:$name" --launch-skip "$src" --launch-count 1 --section SourceCounters --page source \
      --print-source sass --csv build/sg2 bench --config ffhq1024-f --batch 32 --precision fp16 --iters 1 --warmup 0 \
      --profile 32 -q >"$OUT/sass_$name.csv" 2>&1
    echo "ncu source $name rc=$? $(wc -c <"$OUT/sass_$name.csv") bytes"
  done
  el
fi
if has sanitize; then
  : >"$OUT/sanitizer.log"
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    LD_LIBRARY_PATH=$(dirname "$(dirname "${SAN_BIN:-build/tests/sg2_gpu_tests}")") timeout "${SAN_TIMEOUT:-120}" compute-sanitizer \
      --tool "$tool" --error-exitcode 9 "${SAN_BIN:-build/tests/sg2_gpu_tests}" --gtest_color=no \
      --gtest_filter="${SAN_FILTER:-GpuKernels.Upconv*}" >>"$OUT/sanitizer.log" 2>&1
    echo "$tool rc=$?"
  done
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/sanitizer.log" | sort | uniq -c | head
  el
fi
if has official; then
  wait "$warm_pid"
  # OFFICIAL_ARGS: ';'-separated argument lists (e.g. each configuration with its own batch sizes)
  IFS=';' read -r -a offs <<<"${OFFICIAL_ARGS:---configs ffhq1024-f --batches 1,32 --modes auto,fp16 --iters 10}"
  for i in "${!offs[@]}"; do
    # shellcheck disable=SC2086  # each list is split into its arguments
    timeout 240 python3 tools/bench_official.py --sg3 "$SG3" ${offs[$i]} \
      --json "$OUT/official$i.json" >"$OUT/official$i.log" 2>&1
    echo "official (${offs[$i]}) rc=$?"
    tail -6 "$OUT/official$i.log"
  done
  el
fi
if has e2e; then  # end to end on the official pickle: the whole command's wall clock, model loading included
  wait "$e2e_pid"
  tail -1 /tmp/e2e/pickle.log
  sd=${E2E_SEEDS:-0-4095}
  n=$(( ${sd#*-} - ${sd%-*} + 1 ))
  # the SM clock and power while generating (is a long run held back by the power limit?)
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 250 >"$OUT/e2e_clocks.txt" 2>&1 &
  smi_pid=$!
  for target in ${E2E_TARGETS:-/tmp/e2e/g /dev/shm/g}; do  # the disk, then memory (what the disk costs); each build alternately
    for fmt in u8npy u8npy; do
      for bd in "${builds[@]}"; do
        rm -rf "$target"
        a=$(date +%s.%N)
        LD_LIBRARY_PATH=$bd timeout 120 "$bd/sg2" generate --network /tmp/e2e/r1024.pkl --seeds "$sd" --batch 32 \
          --format "$fmt" --outdir "$target" 2>&1 | tail -1
        b=$(date +%s.%N)
        echo "E2E [$bd] sg2 generate --format $fmt into $target: $n in $(awk "BEGIN{printf \"%.2f\", $b - $a}") s wall =" \
          "$(awk "BEGIN{printf \"%.1f\", $n / ($b - $a)}") img/s"
      done
    done
    rm -rf "$target"
  done
  kill "$smi_pid" 2>/dev/null
  echo "E2E SM clock / power while generating: $(awk -F', ' '{c[$1]++; p += $2; n++} END {for (k in c) printf "%s x%d; ",
    k, c[k]; if (n) printf "mean power %.0f W over %d samples", p / n, n}' "$OUT/e2e_clocks.txt")"
  for cmd in "inspect /tmp/e2e/r1024.pkl" "generate --network /tmp/e2e/r1024.pkl --seeds 0 --format u8npy --outdir /dev/shm/one"; do
    a=$(date +%s.%N)  # what a run costs besides its images: reading the pickle; loading, starting, one image
    timeout 60 build/sg2 $cmd >/dev/null 2>&1
    b=$(date +%s.%N)
    echo "E2E sg2 ${cmd%% *} (one image or none): $(awk "BEGIN{printf \"%.2f\", $b - $a}") s"
  done
  rm -rf /dev/shm/one
  a=$(date +%s.%N); timeout 20 build/sg2 --version >/dev/null 2>&1; b=$(date +%s.%N)
  echo "E2E sg2 --version (the libraries' loading): $(awk "BEGIN{printf \"%.3f\", $b - $a}") s"
  for i in 1 2; do  # where the fixed start goes (util/trace.h)
    SG2_TRACE=1 timeout 60 build/sg2 generate --network /tmp/e2e/r1024.pkl --seeds 0-31 --batch 32 --format u8npy \
      --outdir /dev/shm/one 2>&1 | grep -E 'trace|img/s'
    rm -rf /dev/shm/one
  done
  for bd in "${builds[@]}"; do
    echo "E2E [$bd] sg2 bench --end-to-end:"
    LD_LIBRARY_PATH=$bd timeout 120 "$bd/sg2" bench --end-to-end --network /tmp/e2e/r1024.pkl --seeds "$sd" --batch 32 \
      --format u8npy 2>&1 | tail -4
  done
  el
fi
if has serve; then  # sg2 serve with two workers on one GPU (tests/serve/test_serve_gpu.py, ctest Serve.MultiGpu)
  SG2_REQUIRE_GPU=1 timeout 150 python3 tests/serve/test_serve_gpu.py build/sg2 >"$OUT/serve_gpu.log" 2>&1
  echo "serve multi-GPU test rc=$?"
  tail -5 "$OUT/serve_gpu.log"
  el
fi
echo "== summary"
[[ -f "$OUT/bench.txt" ]] && grep -E '^==|^(auto|fp16|tf32|fp32) +(on|off)' "$OUT/bench.txt"
echo "total $(($(date +%s) - t0)) s"
