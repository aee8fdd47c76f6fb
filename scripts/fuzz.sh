#!/usr/bin/env bash
# Builds sg2's libFuzzer targets (tests/fuzz) with clang into build-fuzz/ (CPU only; tests and
# apps off) and runs each for a bounded time, seeded from the test checkpoints and fixtures, then
# tools/merge_dataset_zips.py's parser under atheris (tests/fuzz/fuzz_merge_zips.py, seeded with the
# parts it generates and the sg2-written archives in tests/data/merge):
#   fuzz_pickle 15 s, fuzz_zip 10 s, fuzz_checkpoint 14 s, fuzz_model_file 7 s, fuzz_npy 4 s,
#   fuzz_latents 6 s, fuzz_merge_zips 4 s (one minute in all by default).
# atheris (PyPI) is installed with pip for python3 when missing (scripts/setup.sh does too); only when
# that fails is fuzz_merge_zips skipped, saying so.
# Exits non-zero when any fuzzer finds a crash, a sanitizer report, a leak or a hang; the input
# that triggered it is saved under build-fuzz/artifacts/. The grown corpus stays in
# build-fuzz/corpus/ for the next run.
# Environment: SG2_FUZZ_SECONDS (total seconds, default 60; a target whose share rounds down to 0 s
#              is skipped, not run unbounded: 0 builds the fuzzers and seeds only), SG2_FUZZ_DIR (default build-fuzz),
#              SG2_JOBS (build jobs, default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${SG2_FUZZ_DIR:-build-fuzz}
total=${SG2_FUZZ_SECONDS:-60}
if ! command -v clang++ >/dev/null; then
  echo "sg2 fuzz: clang++ not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DSG2_CUDA=OFF -DSG2_ONEDNN=OFF
      -DSG2_BUILD_TESTS=OFF -DSG2_BUILD_APPS=OFF -DSG2_FUZZ=ON -DSG2_DOWNLOADS=OFF)  # nothing fuzzed needs libcurl
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
echo "sg2 fuzz: building the fuzzers in $dir"
cmake -S . -B "$dir" "${args[@]}" >/dev/null
targets=(fuzz_pickle fuzz_zip fuzz_checkpoint fuzz_model_file fuzz_npy fuzz_latents)
cmake --build "$dir" -j "${SG2_JOBS:-$(nproc)}" --target "${targets[@]}" make_model_seed >/dev/null

data=tests/data
seeds() {  # seeds <target> <files...>: a fresh read-only seed directory
  local s="$dir/seeds/$1"
  shift
  rm -rf "$s" && mkdir -p "$s"
  for f in "$@"; do [[ -f "$f" ]] && cp "$f" "$s/"; done
}
seeds fuzz_pickle "$data"/checkpoints/pickles/*.pkl "$data"/checkpoints/unsupported_*.pkl \
  "$data"/checkpoints/tf_orig16_gray.pkl "$data"/checkpoints/ada_fp16_16.pkl \
  "$data"/official_extra/sg3_skip16_filter/network-snapshot.pkl
seeds fuzz_zip "$data"/checkpoints/*.pt "$data"/fixtures/rosinality64/checkpoint.pt
seeds fuzz_checkpoint "$data"/checkpoints/*.pkl "$data"/checkpoints/*.pt \
  "$data"/official_extra/sg3_skip16_filter/network-snapshot.pkl
seeds fuzz_model_file
"$dir/tests/fuzz/make_model_seed" "$dir/seeds/fuzz_model_file"
seeds fuzz_npy "$data"/fixtures/tiny32/z_s0.npy "$data"/checkpoints/rosinality16_train_w_avg.npy \
  "$data"/official_extra/ada_resnet32_rgba_cond/c_s0.npy models/digits32/goldens/ws_s0_c0_psi1.npy
seeds fuzz_latents "$data"/latents/*.pt "$data"/latents/*.pkl "$data"/checkpoints/users/*.npz \
  "$data"/checkpoints/users/projected_w_as.npy "$data"/checkpoints/users/g_ema_module_legacy.pt

# The merge tool's target: atheris for the python3 on PATH, installed when missing.
atheris_ok() { command -v python3 >/dev/null && python3 -c 'import atheris' >/dev/null 2>&1; }
if command -v python3 >/dev/null && ! atheris_ok; then
  echo "sg2 fuzz: installing atheris (pip) for fuzz_merge_zips"
  python3 -m pip install --disable-pip-version-check -q atheris >"$dir/atheris-install.log" 2>&1 || true
fi
if atheris_ok; then
  rm -rf "$dir/seeds/fuzz_merge_zips"
  python3 tests/fuzz/fuzz_merge_zips.py --make-seeds "$dir/seeds/fuzz_merge_zips"
fi

status=0
run() {  # run <target> <seconds> <max_len> [command...]: the command defaults to the built target
  local name=$1 secs=$2 max_len=$3
  shift 3
  local cmd=("$@")
  if (( ${#cmd[@]} == 0 )); then cmd=("$dir/tests/fuzz/$name"); fi
  mkdir -p "$dir/corpus/$name" "$dir/artifacts"
  if (( secs <= 0 )); then  # libFuzzer reads -max_total_time=0 as "no limit"
    echo "sg2 fuzz: $name skipped (its share of SG2_FUZZ_SECONDS=$total is 0 s)"
    return
  fi
  echo "sg2 fuzz: $name for ${secs} s"
  if ! "${cmd[@]}" -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=2048 -timeout=30 \
       -print_final_stats=1 -artifact_prefix="$dir/artifacts/$name-" "$dir/corpus/$name" "$dir/seeds/$name" \
       >"$dir/$name.log" 2>&1; then
    echo "sg2 fuzz: $name FOUND A PROBLEM (log: $dir/$name.log)" >&2
    tail -n 40 "$dir/$name.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$dir/$name.log" | sed "s/^/  /"
  fi
}
run fuzz_pickle $(( total * 15 / 60 )) 200000
run fuzz_zip $(( total * 10 / 60 )) 700000
run fuzz_checkpoint $(( total * 14 / 60 )) 200000
run fuzz_model_file $(( total * 7 / 60 )) 200000
run fuzz_npy $(( total * 4 / 60 )) 100000
run fuzz_latents $(( total * 6 / 60 )) 100000
if atheris_ok; then
  run fuzz_merge_zips $(( total * 4 / 60 )) 65536 python3 tests/fuzz/fuzz_merge_zips.py
else
  echo "sg2 fuzz: fuzz_merge_zips skipped: atheris is not installed for python3 and pip could not install it" \
       "(see $dir/atheris-install.log)"
fi
if (( status == 0 )); then echo "sg2 fuzz: no crashes"; fi
exit $status
