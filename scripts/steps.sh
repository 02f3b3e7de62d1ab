#!/usr/bin/env bash
# Runs make targets one after the other, as `make test` lists them, stopping at the first that fails,
# and ends with how long each took: CI keeps only a run's output, and the 45-minute budget of
# `make test` is kept by knowing where its time goes.
#   scripts/steps.sh deps build unit ...
set -uo pipefail
cd "$(dirname "$0")/.."
declare -a done_steps=()
rc=0
for step in "$@"; do
  start=$SECONDS
  echo "==> make $step ($(date -u +%H:%M:%S))"
  ${MAKE:-make} --no-print-directory "$step"
  rc=$?
  done_steps+=("$step $((SECONDS - start))")
  [ $rc -eq 0 ] || { echo "==> make $step failed (exit $rc)"; break; }
done
echo "==> seconds per step:"
total=0
for s in "${done_steps[@]}"; do
  printf '    %-14s %5d\n' "${s% *}" "${s##* }"
  total=$((total + ${s##* }))
done
printf '    %-14s %5d\n' total "$total"
exit $rc
