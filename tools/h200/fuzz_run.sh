#!/usr/bin/env bash
# Recorded device run (issue 15 item 11): sg2's libFuzzer targets on the device machine's CPU cores, to add
# CPU-hours to the campaign that runs on the 2-core development machine (docs/performance-notes.md, "Fuzzing").
# Expects .gpucarry/fuzz.tar.xz with bin/ (the five fuzzers, built by scripts/fuzz.sh with the static .deps
# copies of libdeflate and libarchive, so that they need only libpng and zlib there) and corpus/<target>/.
# Usage: fuzz_run.sh SECONDS [JOBS_PER_TARGET...]   (default jobs: pickle 3, zip 3, checkpoint 4, model_file 3, npy 2)
# Writes $OUT/fuzz_back.tar.xz: the inputs each target added to its corpus, every artifact (crash, leak, timeout,
# oom input), the fuzzers' logs, and cpu.tsv (target, wall s, user s, sys s, exit status; user and sys of the
# fuzzer and all its workers, from bash's `times`). Prints the table last.
set -u
cd "$(dirname "$0")/../.."
R=$PWD
secs=${1:-300}
shift || true
targets=(fuzz_pickle fuzz_zip fuzz_checkpoint fuzz_model_file fuzz_npy)
jobs=(${@:-3 3 4 3 2})
F=/tmp/fz
rm -rf $F && mkdir -p $F && tar xJf $R/.gpucarry/fuzz.tar.xz -C $F || exit 1
cd $F
mkdir -p back/logs back/artifacts back/new
max_len() {
  case $1 in
    fuzz_zip) echo 700000 ;;
    fuzz_npy) echo 100000 ;;
    *) echo 200000 ;;
  esac
}
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  mkdir -p corpus/$t back/artifacts/$t back/new/$t
  ls corpus/$t > back/before_$t.txt
  (
    SECONDS=0
    bin/$t -fork="${jobs[$i]}" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$secs" \
      -max_len="$(max_len $t)" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
      -artifact_prefix=back/artifacts/$t/ corpus/$t > back/logs/$t.log 2>&1
    rc=$?
    wall=$SECONDS
    # `times` (a builtin, no fork) in this subshell: its second line is the user and system time of the
    # subshell's children, i.e. the fuzzer and all its workers
    times > back/times_$t.txt
    read -r u s < <(tail -n 1 back/times_$t.txt | sed -E 's/([0-9]+)m([0-9.]+)s/\1 \2/g' |
      awk '{printf "%.1f %.1f\n", $1 * 60 + $2, $3 * 60 + $4}')
    printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$wall" "$u" "$s" "$rc" > back/cpu_$t.tsv
  ) &
done
wait
cat back/cpu_*.tsv > back/cpu.tsv
for t in "${targets[@]}"; do
  comm -13 <(sort back/before_$t.txt) <(ls corpus/$t | sort) | while read -r f; do cp "corpus/$t/$f" back/new/$t/; done
done
tar -cf - -C back cpu.tsv logs artifacts new | xz -T0 -6 > $OUT/fuzz_back.tar.xz
echo "== fuzzing on $(nproc) cores, $secs s per target"
printf '%-18s %8s %8s %8s %6s %6s %9s\n' target wall_s user_s sys_s rc new artifacts
while IFS=$'\t' read -r t w u s rc; do
  printf '%-18s %8s %8s %8s %6s %6s %9s\n' "$t" "$w" "$u" "$s" "$rc" "$(ls back/new/$t | wc -l)" \
    "$(find back/artifacts/$t -type f | wc -l)"
done < back/cpu.tsv
awk -F'\t' '{c += $3 + $4} END {printf "CPU-hours this run: %.3f\n", c / 3600}' back/cpu.tsv
