#!/usr/bin/env python3
"""bench/results/README.md from what the benchmarks wrote there: one row per <name>.json, then the
control-plane, trace-replay, tenants and topology tables. Run by `make bench` (bench/run.sh); alone after one
benchmark was rerun.  usage: results_readme.py [RESULTS]"""
import json, sys, pathlib
d = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
rows = []
for f in sorted(d.glob("*.json")):
    data = json.loads(f.read_text())
    name = data.pop("benchmark", f.stem)
    rows.append((name, ", ".join(f"{k} = {v}" for k, v in data.items())))
lines = ["# Benchmark results", "", "Written by `make bench` on the project machine (2 cores); see BENCHMARKS.md.", "",
         "| benchmark | figures |", "| --- | --- |"] + [f"| {n} | {v} |" for n, v in rows]
for title, table in (("Control plane (bench/controlplane)", d / "controlplane" / "controlplane.md"),
                     ("Trace replay (bench/sim)", d / "sim" / "sim.md"),
                     ("Tenants (bench/sim/tenants.sh)", d / "tenants" / "tenants.md"),
                     ("Topology (bench/sim/topology.sh)", d / "topology" / "topology.md"),
                     ("Live economics (bench/live, make bench-live)", d / "live" / "live.md")):
    if table.exists():
        lines += ["", "## " + title, "", table.read_text().rstrip()]
(d / "README.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
