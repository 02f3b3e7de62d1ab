#!/usr/bin/env bash
# What the planner's aging step moves (issue 73): Valley replayed over the sweep's contended slices
# (the three Philly windows at 1.2x the cluster's GPUs; on the ITP slices nothing waits behind
# anything and the step changes no schedule) with aging off and at an hour (valley-sim
# --aging-step-minutes), beside the main sweep's Valley at the operator's default of 10 minutes
# (bench/results/sweep: the same code and inputs); then bench/sim/knobs_report.py writes
# OUT/knobs.md: the scheduler's KPIs, cost and mean JCT per setting. The two settings run side by
# side (about 7 min here).
#   bench/sim/knobs.sh [OUT]      OUT defaults to bench/results/knobs
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/knobs}
mkdir -p "$out"
pids=()
for minutes in ${KNOBS_AGING_MINUTES:-0 60}; do
  SWEEP_POLICIES=valley SWEEP_NO_REPORT=1 SWEEP_ONLY=${KNOBS_SLICES:-'^philly-'} \
    bench/sim/sweep.sh "$out/aging-$minutes" --aging-step-minutes "$minutes" --no-bound &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
python3 bench/sim/knobs_report.py "$out" bench/results/sweep
