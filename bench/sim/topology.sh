#!/usr/bin/env bash
# What topology awareness is worth: the four ITP slices of bench/sim/run.sh (hours 384-432), backfill
# and Valley, each unaware (no topology levels) and aware (racks of 4 nodes are a level; every
# multi-worker job prefers one rack, as Kueue's TAS places it for the peers). Every job runs at the
# throughput Pollux measured for its placement (bench/sim/main.cc). Then the same on a thin network
# (each node or rack beyond the fewest multiplies a job's throughput by 0.7: NVLink inside nodes,
# little between them), Valley with its progress learned by placement shape and by size only
# (--shape-learning). Writes OUT/<slice>/sim.json, OUT/thin-{on,off}/<slice>/sim.json and
# OUT/topology.md.
#   bench/sim/topology.sh [OUT] [valley-sim args...]     OUT defaults to bench/results/topology
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/topology}
shift || true
data=bench/data
mkdir -p "$out"
for c in 07 04 02 08; do
  build/bin/valley-sim --label "cluster$c" --trace "$data/elasticflow-itp/cluster$c.csv" --from-hour 384 --to-hour 432 \
    --cluster bench/sim/inputs/cluster.yaml --spot bench/sim/inputs/spot.yaml \
    --pricing deploy/samples/pricingpolicy-default.yaml --workload bench/sim/inputs/workload.yaml \
    --profiles "$data/pollux-adaptdl" --out "$out/cluster$c" --no-bound --policy backfill,valley --topology unaware,aware \
    --placement-speed measured "$@" > /dev/null
  rm -f "$out/cluster$c/"*.dat
  for shapes in on off; do
    policies=backfill,valley
    [ "$shapes" = on ] || policies=valley
    build/bin/valley-sim --label "cluster$c" --trace "$data/elasticflow-itp/cluster$c.csv" --from-hour 384 --to-hour 432 \
      --cluster bench/sim/inputs/cluster.yaml --spot bench/sim/inputs/spot.yaml \
      --pricing deploy/samples/pricingpolicy-default.yaml --workload bench/sim/inputs/workload.yaml \
      --profiles "$data/pollux-adaptdl" --out "$out/thin-$shapes/cluster$c" --no-bound --policy "$policies" --topology unaware,aware \
      --placement-speed 0.7 --shape-learning "$shapes" "$@" > /dev/null
    rm -f "$out/thin-$shapes/cluster$c/"*.dat
  done
done
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = ["| slice | policy | cost (USD) | mean JCT (h) | p95 JCT (h) | multi-GPU starts | on more nodes than the fewest | 3+ nodes more | in more racks than the fewest | aware vs unaware: cost / mean JCT |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
for d in sorted(p for p in out.iterdir() if p.is_dir() and (p / "sim.json").exists()):
    s = json.loads((d / "sim.json").read_text())
    pol = {p["policy"]: p for p in s["policies"]}
    for name in ("backfill", "backfill+topology", "valley", "valley+topology"):
        p = pol[name]
        pl = p["placements"]
        delta = ""
        if name.endswith("+topology"):
            base = pol[name.split("+")[0]]
            delta = f"{p['totalCostMicros'] / base['totalCostMicros'] - 1:+.1%} / {p['meanJctHours'] / base['meanJctHours'] - 1:+.1%}"
        rows.append(f"| {d.name} ({s['slice']['jobs']} jobs) | {name} | {p['totalCost']} | {p['meanJctHours']} | {p['p95JctHours']} | "
                    f"{pl['multiGpu']} | {pl['spreadShare']:.1%} | {pl['spreadThreeOrMoreNodesWider'] / max(1, pl['multiGpu']):.1%} | "
                    f"{pl['rackSpreadShare']:.1%} | {delta} |")
rows += ["", "On a thin network (each node or rack beyond the fewest: x0.7), Valley learning by placement shape and by size only:", "",
         "| slice | policy | cost (USD) | mean JCT (h) | p95 JCT (h) | multi-GPU starts | on more nodes than the fewest | shapes vs size only: cost / mean JCT |",
         "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
for d in sorted(p for p in (out / "thin-on").iterdir() if (p / "sim.json").exists()):
    on = {p["policy"]: p for p in json.loads((d / "sim.json").read_text())["policies"]}
    off = {p["policy"]: p for p in json.loads((out / "thin-off" / d.name / "sim.json").read_text())["policies"]}
    jobs = json.loads((d / "sim.json").read_text())["slice"]["jobs"]
    for name in ("backfill", "backfill+topology", "valley", "valley+topology"):
        runs = [("", on[name])] if name.startswith("backfill") else [(" (size only)", off[name]), (" (shapes)", on[name])]
        for label, p in runs:
            pl = p["placements"]
            delta = ""
            if label == " (shapes)":
                delta = f"{p['totalCostMicros'] / off[name]['totalCostMicros'] - 1:+.1%} / {p['meanJctHours'] / off[name]['meanJctHours'] - 1:+.1%}"
            rows.append(f"| {d.name} ({jobs} jobs) | {name}{label} | {p['totalCost']} | {p['meanJctHours']} | {p['p95JctHours']} | "
                        f"{pl['multiGpu']} | {pl['spreadShare']:.1%} | {delta} |")
(out / "topology.md").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
PY
