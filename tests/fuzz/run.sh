#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a short while
# (FUZZ_SECONDS, default 20) from the committed seed corpus. A crash fails the run and leaves the
# reproducer in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build-fuzz
seconds=${FUZZ_SECONDS:-20}
mkdir -p "$out/corpus-watch"
clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. \
  tests/fuzz/watch_decoder_fuzz.cc operator/kube/watch_decoder.cc -o "$out/watch_decoder_fuzz"
# New inputs go to the scratch corpus; the committed seeds stay as they are.
rc=0
"$out/watch_decoder_fuzz" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/" \
  "$out/corpus-watch" tests/fuzz/corpus/watch > "$out/watch.log" 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
  tail -n 40 "$out/watch.log"
  echo "fuzz: the watch decoder fuzzer found a problem (exit $rc); reproducer in $out/" >&2
  exit 1
fi
grep -E '^Done|number_of_executed_units' "$out/watch.log"
echo "fuzz: watch decoder ran ${seconds}s without a finding"
