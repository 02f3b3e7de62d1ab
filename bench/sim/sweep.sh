#!/usr/bin/env bash
# The economics sweep: many slices, not four. Every ITP cluster (ten) at three windows, plus three
# Philly windows, each replayed by naive, backfill, valley-v2 and valley on the 256-GPU cluster of
# bench/sim/inputs with spot interruptions and the default PricingPolicy, against the LP bound; then
# bench/sim/sweep_report.py prints each figure's distribution (min / median / max) over the slices.
#
# Windows are fixed by a rule, before any result was seen: from 20%, 50% and 80% of each cluster's
# span of submissions, 48 hours long or until 100 jobs have arrived (arrivals are bursty: a 48-hour
# window of cluster05 can hold one job, and cluster10 has 260 jobs in two months). Philly: the tenants benchmark's three busy windows, sampled
# to a GPU demand of 1.2x the cluster (--load), without tenants.
#   bench/sim/sweep.sh [OUT] [valley-sim args...]     OUT defaults to bench/results/sweep
# (SWEEP_REPORT_ONLY=1 only rewrites OUT/sweep.md from the runs there; SWEEP_SLICES=N runs the first N; SWEEP_ONLY=REGEX
# the slices whose names match;
# SWEEP_PRICING another PricingPolicy, SWEEP_POLICIES other policies: bench/sim/frontier.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/sweep}
shift || true
mkdir -p "$out" bench/out
data=bench/data
policies=${SWEEP_POLICIES:-naive,backfill,valley-v2,valley}
# SWEEP_CLOUD: a cloud model (bench/sim/inputs/cloud.yaml): the pools are NodePools bought from zero
# (make bench-sweep's second half), replayed by the autoscaled backfill and valley.
cloud=()
if [ -n "${SWEEP_CLOUD:-}" ]; then
  policies=backfill,valley
  cloud=(--cloud "$SWEEP_CLOUD")
fi
# SWEEP_CLUSTER / SWEEP_SPOT: another cluster (make bench-sweep-shared: cluster-shared.yaml, where jobs
# that allow it share time-sliced GPUs by Gavel's pair rates).
common=(--cluster "${SWEEP_CLUSTER:-bench/sim/inputs/cluster.yaml}" --spot "${SWEEP_SPOT:-bench/sim/inputs/spot.yaml}"
        --pricing "${SWEEP_PRICING:-deploy/samples/pricingpolicy-default.yaml}" --pairs "$data/gavel/pairs.csv"
        --workload bench/sim/inputs/workload.yaml --profiles "$data/pollux-adaptdl" --policy "$policies" ${cloud[@]+"${cloud[@]}"})

# name trace from-hour to-hour [extra args], one slice a line.
slices() {
  python3 - "$data/elasticflow-itp" <<'PY'
import csv, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("cluster*.csv")):
    t = sorted(float(r["submission_time"]) / 3600 for r in csv.DictReader(f.open()))
    for frac in (0.2, 0.5, 0.8):
        # From the point `frac` of the span of submissions: 48 hours, or until 100 jobs have arrived
        # (moved earlier when fewer than 100 arrive after it).
        i = min(next(k for k, x in enumerate(t) if x >= t[0] + frac * (t[-1] - t[0])), max(0, len(t) - 100))
        start = int(t[i])
        end = max(start + 48, int(t[min(i + 99, len(t) - 1)]) + 1)
        print(f"itp-{f.stem[len('cluster'):]}-{int(frac * 100)} {f} {start} {end}")
PY
  for from in 720 1104 1536; do echo "philly-$from bench/out/philly.csv $from $((from + 48)) --load 1.2"; done
}

if [ -z "${SWEEP_REPORT_ONLY:-}" ]; then
  gzip -dc "$data/pollux-adaptdl/philly.csv.gz" > bench/out/philly.csv
  n=0
  while read -r name trace from to extra; do
    n=$((n + 1))
    [ -n "${SWEEP_SLICES:-}" ] && [ "$n" -gt "$SWEEP_SLICES" ] && break
    [ -n "${SWEEP_ONLY:-}" ] && ! [[ $name =~ $SWEEP_ONLY ]] && continue
    # shellcheck disable=SC2086
    build/bin/valley-sim --label "$name" --trace "$trace" --from-hour "$from" --to-hour "$to" $extra "${common[@]}" \
      --out "$out/$name" --scratch "bench/out/sim-lp/$name" "$@" > /dev/null 2> "bench/out/sweep-$name.log" ||
      { echo "sweep: $name failed:" >&2; cat "bench/out/sweep-$name.log" >&2; exit 1; }
    echo "sweep: $name ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["slice"]["jobs"])' "$out/$name/sim.json") jobs) done" >&2
  done < <(slices)
fi
if [ -n "${SWEEP_CLOUD:-}" ]; then
  python3 bench/sim/cloud_report.py "$out"
  gnuplot -e "dir='$out'" bench/sim/bought.gp
  exit 0
fi
[ -n "${SWEEP_NO_REPORT:-}" ] && exit 0
python3 bench/sim/sweep_report.py "$out"
gnuplot -e "dir='$out'" bench/sim/money.gp
