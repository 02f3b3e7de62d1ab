#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc) with clang, ASan and UBSan, and runs each for
# FUZZ_SECONDS (default 15) from its committed seed corpus (tests/fuzz/corpus/<name>/). New inputs go
# to a scratch corpus in build-fuzz/, so the committed seeds change only by hand. A finding fails the
# run and leaves its reproducer in build-fuzz/<name>/; replay it with
#   build-fuzz/bin/<name>_fuzz build-fuzz/<name>/crash-...
# FUZZ_TARGETS="spec strings" runs only those; FUZZ_JOBS=1 runs one target at a time (default: one per core).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build-fuzz
seconds=${FUZZ_SECONDS:-15}
jobs=${FUZZ_JOBS:-$(nproc)}  # each fuzzer runs on one core
all=$(sed -nE 's/^set\(VALLEY_FUZZERS (.*)\)$/\1/p' tests/fuzz/fuzzers.cmake)
targets=${FUZZ_TARGETS:-$all}

if [ ! -f "$out/build.ninja" ]; then
  CXX=clang++ cmake -S . -B "$out" -G Ninja -DVALLEY_FUZZ=ON -DVALLEY_E2E=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$out" -j "$(nproc)" --target fuzzers >/dev/null

run_one() {
  local name=$1 rc=0
  mkdir -p "$out/$name/corpus"
  "$out/bin/${name}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/$name/" "$out/$name/corpus" "tests/fuzz/corpus/$name" >"$out/$name/log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    grep -A30 -m1 -E 'ERROR: |fuzz property violated|runtime error|deadly signal' "$out/$name/log" | head -40 >&2
    echo "fuzz: $name found a problem (exit $rc); reproducer in $out/$name/, log $out/$name/log" >&2
    return 1
  fi
  local execs cov
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$out/$name/log")
  cov=$(grep -oE 'cov: [0-9]+' "$out/$name/log" | tail -1)
  echo "fuzz: $name ran ${seconds}s, ${execs:-0} inputs, $cov, no finding"
}

failed=0
running=0
for name in $targets; do
  if [ "$jobs" -gt 1 ]; then
    run_one "$name" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n || failed=1; running=$((running - 1)); fi
  else
    run_one "$name" || failed=1
  fi
done
while [ "$running" -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
exit $failed
