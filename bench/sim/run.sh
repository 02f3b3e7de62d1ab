#!/usr/bin/env bash
# Trace replay: four slices of the Microsoft ITP trace from different clusters (the same hours of each,
# 384-432: not chosen to flatter anyone), on the 256-GPU cluster of bench/sim/inputs with spot
# interruptions and the default PricingPolicy; every policy (naive, backfill, valley-v1, valley),
# the LP lower bound, plots; each slice again without the Pollux profiles' 8-GPU point (an artefact:
# two 4-GPU nodes). Extra valley-sim arguments pass through (e.g. --max-jobs 30).
#   bench/sim/run.sh [OUT] [valley-sim args...]     OUT defaults to bench/results/sim
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/sim}
shift || true
data=bench/data
mkdir -p "$out"
run() {  # name cluster extra-args...
  local name=$1 cluster=$2
  shift 2
  build/bin/valley-sim --label "$name" --trace "$data/elasticflow-itp/cluster$cluster.csv" --from-hour 384 --to-hour 432 \
    --cluster bench/sim/inputs/cluster.yaml --spot bench/sim/inputs/spot.yaml \
    --pricing deploy/samples/pricingpolicy-default.yaml --workload bench/sim/inputs/workload.yaml \
    --profiles "$data/pollux-adaptdl" --out "$out/$name" --scratch "bench/out/sim-lp/$name" "$@"
  gnuplot -e "dir='$out/$name'" bench/sim/plot.gp
}
for c in 07 04 02 08; do
  run "cluster$c" "$c" "$@"
  run "cluster$c-no8" "$c" --profile-drop 8 "$@"
done
# The default case's files at the top, where BENCHMARKS.md links them.
cp "$out/cluster07/"* "$out/"
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = ["| slice | policy | cost (USD) | vs naive | vs backfill | / LP bound (valley's makespan) | mean JCT (h) | mean JCT w/o reduceCost (h) | p95 JCT (h) | GPU-h a100-od / a100-spot / mi250-od | estimate error | in range | range width | durations +-50%: error / in range / width |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
for d in sorted(p for p in out.iterdir() if p.is_dir() and (p / "sim.json").exists()):
    s = json.loads((d / "sim.json").read_text())
    pol = {p["policy"]: p for p in s["policies"]}
    naive, backfill = pol["naive"]["totalCostMicros"], pol["backfill"]["totalCostMicros"]
    for name in ("naive", "backfill", "valley-v1", "valley"):
        p = pol[name]
        g = p["gpuHoursByPool"]
        e, o = p["estimates"], p["estimatesDurationOff"]
        pct = lambda v: f"{v * 100:.1f}%"
        rows.append(f"| {d.name} ({s['slice']['jobs']} jobs) | {name} | {p['totalCost']} | {p['totalCostMicros'] / naive - 1:+.1%} | "
                    f"{p['totalCostMicros'] / backfill - 1:+.1%} | {p.get('costOverBound', 'n/a')} | {p['meanJctHours']} | {p.get('meanJctHoursNotReduceCost', 'n/a')} | {p['p95JctHours']} | "
                    f"{g.get('a100-od', 0):.0f} / {g.get('a100-spot', 0):.0f} / {g.get('mi250-od', 0):.0f} | {pct(e['medianError'])} | "
                    f"{pct(e['insideRange'])} | {pct(e['medianRangeWidth'])} | {pct(o['medianError'])} / {pct(o['insideRange'])} / {pct(o['medianRangeWidth'])} |")
(out / "slices.md").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
PY
echo "sim: wrote $out/<slice>/{sim.json,sim.md,*.png} and $out/slices.md" >&2
