#!/usr/bin/env bash
# Trace replay: the default case of bench/sim (ITP cluster07, hours 384-432: 1,028 jobs; 256 GPUs
# in three pools; spot interruptions; the default PricingPolicy), every policy, the LP lower bound,
# and plots. Extra valley-sim arguments pass through (e.g. --max-jobs 30 for a smoke run).
#   bench/sim/run.sh [OUT] [valley-sim args...]     OUT defaults to bench/results/sim
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/sim}
shift || true
traces=${VALLEY_TRACES:-../shared/data/traces}
[ -d "$traces" ] || { echo "sim: no traces at $traces (set VALLEY_TRACES)" >&2; exit 1; }
mkdir -p "$out"
build/bin/valley-sim --trace "$traces/elasticflow-itp/raw/cluster07.csv" --from-hour 384 --to-hour 432 \
  --cluster bench/sim/inputs/cluster.yaml --spot bench/sim/inputs/spot.yaml \
  --pricing deploy/samples/pricingpolicy-default.yaml --workload bench/sim/inputs/workload.yaml \
  --profiles "$traces/pollux-adaptdl/simulator/traces" --out "$out" --scratch bench/out/sim-lp "$@"
gnuplot -e "dir='$out'" bench/sim/plot.gp
echo "sim: wrote $out/sim.json, $out/sim.md, $out/cost.png, $out/jct.png, $out/allocation.png" >&2
