#!/usr/bin/env bash
# The cost-time frontier (issue 73): the 33 sweep slices replayed by backfill and Valley at several
# exchange rates for tasks that did not set reduceCost (the PricingPolicy's
# growth.withoutReduceCost), each a copy of deploy/samples/pricingpolicy-default.yaml with only that
# list changed; then bench/sim/frontier_report.py writes OUT/frontier.md and the chart.
#   bench/sim/frontier.sh [OUT]      OUT defaults to bench/results/frontier (about 15 min here)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/frontier}
mkdir -p "$out" bench/out
# name: the bands as "minPriority=minMarginalSpeedup ..." ("none": no band, every task by the
# reduceCost rule, as before issue 73). The default is "0=0.2 30=0".
settings=("none" "0=0.5 70=0.3" "0=0.25 70=0.1" "0=0.2 30=0" "0=0")
for s in "${settings[@]}"; do
  name=$(echo "$s" | tr ' =' '_-')
  policy=bench/out/frontier-$name.yaml
  python3 - "$s" deploy/samples/pricingpolicy-default.yaml "$policy" <<'PY'
import sys, yaml
setting, src, dst = sys.argv[1:]
doc = yaml.safe_load(open(src))
bands = [] if setting == "none" else [
    {"minPriority": int(p), "minMarginalSpeedup": m} for p, m in (b.split("=") for b in setting.split())]
doc["spec"].setdefault("growth", {})["withoutReduceCost"] = bands
yaml.safe_dump(doc, open(dst, "w"), sort_keys=False)
PY
  echo "frontier: $s" >&2
  SWEEP_PRICING="$policy" SWEEP_POLICIES=backfill,valley SWEEP_NO_REPORT=1 bench/sim/sweep.sh "$out/$name"
  echo "$s" > "$out/$name/setting"
done
python3 bench/sim/frontier_report.py "$out" bench/results/sweep
gnuplot -e "dir='$out'" bench/sim/frontier.gp
