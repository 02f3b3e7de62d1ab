#!/usr/bin/env bash
# Runs make targets one after the other, as `make test` lists them, stopping at the first that fails,
# and ends with how long each took: CI keeps only a run's output, and the 45-minute budget of
# `make test` is kept by knowing where its time goes.
#   scripts/steps.sh deps build unit ...
# A step written `name@bg` runs in the background from there on (niced, its output in
# .valley/logs/step-name.log, printed when it ends), beside the steps after it: for work that
# waits on nothing those steps make, started where the machine has cores to spare (the real
# node's Go builds while the kwok suites mostly wait on the API server). The run waits for it at
# the end and fails if it failed; a step that needs its output waits for it itself (locks).
# STEPS_BG_MAKEFLAGS: flags for the background makes, e.g. "-o build": what the steps before a
# background step built, it must not make again while a later step may be making it too (two
# builds in one build directory at once).
set -uo pipefail
cd "$(dirname "$0")/.."
declare -a done_steps=()
declare -A lanes=() lane_start=()
rc=0
mkdir -p .valley/logs

# Free space where the builds, the caches and the real node's containers go: a full disk fails a
# run in ways that look like anything else (the real node's pods never start).
disk_free() { df -h --output=avail "$PWD" "${VALLEY_CACHE:-$HOME/.cache/valley}" /tmp 2>/dev/null | tail -n +2 | tr -s ' \n' ' '; }
echo "==> free disk (checkout, cache, /tmp):$(disk_free)"

finish_lane() {  # name: waits for it, reports it (how long it ran, as it wrote when it ended)
  local name=$1 lane_rc took
  wait "${lanes[$name]}"
  lane_rc=$?
  took=$(cut -d' ' -f2 ".valley/logs/step-$name.end" 2>/dev/null || echo "$((SECONDS - lane_start[$name]))")
  echo "==> background make $name ended (exit $lane_rc) after $took s; its output:"
  sed 's/^/    /' ".valley/logs/step-$name.log"
  done_steps+=("$name(bg) $took")
  unset "lanes[$name]"
  [ $lane_rc -eq 0 ] || { [ $rc -ne 0 ] || rc=$lane_rc; echo "==> background make $name failed (exit $lane_rc)"; }
}

for step in "$@"; do
  if [[ $step == *@bg ]]; then
    name=${step%@bg}
    echo "==> make $name in the background ($(date -u +%H:%M:%S)), output in .valley/logs/step-$name.log"
    lane_start[$name]=$SECONDS
    rm -f ".valley/logs/step-$name.end"
    setsid nice -n 10 bash -c '${MAKE:-make} --no-print-directory ${STEPS_BG_MAKEFLAGS:-} "$1"; rc=$?; echo "$rc $SECONDS" > ".valley/logs/step-$1.end"; exit $rc' \
      _ "$name" > ".valley/logs/step-$name.log" 2>&1 < /dev/null &
    lanes[$name]=$!
    continue
  fi
  start=$SECONDS
  echo "==> make $step ($(date -u +%H:%M:%S))"
  ${MAKE:-make} --no-print-directory "$step"
  rc=$?
  done_steps+=("$step $((SECONDS - start))")
  [ $rc -eq 0 ] || { echo "==> make $step failed (exit $rc)"; break; }
done
for name in "${!lanes[@]}"; do
  [ $rc -eq 0 ] || kill -- -"${lanes[$name]}" 2>/dev/null
  finish_lane "$name"
done
echo "==> seconds per step (background steps overlap the ones after them; total is the wall clock):"
for s in "${done_steps[@]}"; do printf '    %-18s %5d\n' "${s% *}" "${s##* }"; done
printf '    %-18s %5d\n' total "$SECONDS"
echo "==> free disk (checkout, cache, /tmp):$(disk_free)"
exit $rc
