#!/usr/bin/env bash
# Runs make targets one after the other, as `make test` lists them, stopping at the first that fails,
# and ends with how long each took: CI keeps only a run's output, and the 45-minute budget of
# `make test` is kept by knowing where its time goes.
#   scripts/steps.sh deps build unit ...
# A step written `name@bg` or `name@idle` runs in the background from there on (its output in
# .valley/logs/step-name.log, printed when it ends), beside the steps after it, for work that waits
# on nothing those steps make. @bg shares the CPU evenly with the steps in front: work they will
# need (the Go builds the cluster suites run), whose waits on the network and single-threaded links
# the compiles in front fill. @idle gets only the CPU the steps in front leave idle (a niced
# session): work nothing in front waits for (the unit tests, the previous release's operator),
# kept from slowing a cluster suite that mostly waits on the API server. The run waits for both
# at the end and fails if one failed; a step that needs their output waits for it itself (locks).
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
  if [[ $step == *@bg || $step == *@idle ]]; then
    name=${step%@*}
    kind=${step##*@}
    echo "==> make $name in the background ($kind, $(date -u +%H:%M:%S)), output in .valley/logs/step-$name.log"
    lane_start[$name]=$SECONDS
    rm -f ".valley/logs/step-$name.end"
    # setsid: a session of its own, so a failed run can stop it whole. Where the kernel shares the
    # CPU between sessions (sched_autogroup, the default of most distributions) a process's nice
    # counts only within its session: an @idle session is niced as a whole, a @bg one keeps its
    # even share (with nice alone, where sessions are not grouped, it would get almost none).
    nice_level=0
    [ "$kind" = idle ] && nice_level=19
    setsid nice -n "$nice_level" bash -c '{ echo "$2" > /proc/self/autogroup; } 2>/dev/null
      ${MAKE:-make} --no-print-directory ${STEPS_BG_MAKEFLAGS:-} "$1"; rc=$?; echo "$rc $SECONDS" > ".valley/logs/step-$1.end"; exit $rc' \
      _ "$name" "$nice_level" > ".valley/logs/step-$name.log" 2>&1 < /dev/null &
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
