#!/usr/bin/env python3
"""The cloud sweep's report (bench/sim/sweep.sh with SWEEP_CLOUD): from OUT/<slice>/sim.json, Valley
against the autoscaled backfill on capacity bought from zero, per slice and as min / median / max, with
how many slices meet issue 72's targets: Valley's platform cost (its nodes' hours at their price) no
more than backfill's, idle node-hours no more than 5% of what it bought, mean JCT of the tasks without
reduceCost no worse than backfill's. Writes OUT/cloud.md, OUT/cloud.json and OUT/bought.dat (node-hours
bought, idle and provisioning per policy, summed over the slices, for bench/sim/bought.gp); prints the
summary."""
import json
import pathlib
import statistics
import sys

POLICIES = ("backfill", "valley")
# figure key, heading, target (a predicate and its wording) or None
FIGURES = [
    ("vsBackfill", "platform cost vs backfill's", (lambda v: v <= 0, "no more than backfill's")),
    ("overBound", "platform cost / LP bound", None),
    ("backfillOverBound", "backfill's platform cost / LP bound", None),
    ("idleShare", "idle node-hours / bought", (lambda v: v <= 0.05, "<= 5%")),
    ("backfillIdleShare", "backfill's idle node-hours / bought", None),
    ("provisioningShare", "provisioning node-hours / bought", None),
    ("soldShare", "GPU-hours sold / bought", None),
    ("backfillSoldShare", "backfill's GPU-hours sold / bought", None),
    ("meanJctNotReduceCostRatio", "mean JCT without reduceCost / backfill's", (lambda v: v <= 1.0, "no worse than backfill")),
    ("meanJctRatio", "mean JCT (all) / backfill's", None),
    ("p95JctRatio", "p95 JCT / backfill's", None),
]
PERCENT = {"vsBackfill", "idleShare", "backfillIdleShare", "provisioningShare", "soldShare", "backfillSoldShare"}


def ratio(a, b):
    return a / b if b else None


def figures(sim):
    pol = {p["policy"]: p for p in sim["policies"]}
    v, b = pol["valley"], pol["backfill"]
    vb, bb = v["bought"], b["bought"]
    bound = sim.get("lowerBound", {}).get("costMicros")
    return {
        "cost": vb["platformCostMicros"] / 1e6, "backfillCost": bb["platformCostMicros"] / 1e6,
        "vsBackfill": vb["platformCostMicros"] / bb["platformCostMicros"] - 1 if bb["platformCostMicros"] else None,
        "overBound": ratio(vb["platformCostMicros"], bound), "backfillOverBound": ratio(bb["platformCostMicros"], bound),
        "idleShare": vb["idleShare"], "backfillIdleShare": bb["idleShare"], "provisioningShare": vb["provisioningShare"],
        "soldShare": ratio(vb["soldGpuHours"], vb["gpuHours"]), "backfillSoldShare": ratio(bb["soldGpuHours"], bb["gpuHours"]),
        "meanJctNotReduceCostRatio": ratio(v["meanJctHoursNotReduceCost"], b["meanJctHoursNotReduceCost"]),
        "meanJctRatio": ratio(v["meanJctHours"], b["meanJctHours"]), "p95JctRatio": ratio(v["p95JctHours"], b["p95JctHours"]),
        "unfinished": v["jobsUnfinished"], "backfillUnfinished": b["jobsUnfinished"],
        "bought": {p: pol[p]["bought"] for p in POLICIES},
    }


def show(key, v):
    if v is None:
        return "n/a"
    return f"{v * 100:.1f}%" if key in PERCENT else f"{v:.2f}"


def main(out):
    out = pathlib.Path(out)
    slices = {}
    for f in sorted(out.glob("*/sim.json")):
        sim = json.loads(f.read_text())
        if not any("bought" in p for p in sim["policies"]):
            continue
        slices[f.parent.name] = figures(sim)
    if not slices:
        sys.exit(f"cloud_report: no cloud runs under {out}")
    lines = [f"Capacity bought from zero (bench/sim/inputs/cloud.yaml), {len(slices)} slices: valley against the autoscaled backfill",
             "", "| figure | min | median | max | target | slices meeting it |", "| --- | ---: | ---: | ---: | --- | ---: |"]
    summary = {}
    for key, heading, target in FIGURES:
        values = [s[key] for s in slices.values() if s[key] is not None]
        if not values:
            continue
        met = sum(1 for v in values if target and target[0](v))
        summary[key] = {"min": min(values), "median": statistics.median(values), "max": max(values),
                        "met": met if target else None, "of": len(values)}
        lines.append(f"| {heading} | {show(key, min(values))} | {show(key, statistics.median(values))} | {show(key, max(values))} | "
                     f"{target[1] if target else ''} | {f'{met} of {len(values)}' if target else ''} |")
    lines += ["", "| slice | valley (USD) | backfill (USD) | vs backfill | / bound | idle | sold / bought | mean JCT not reduceCost / backfill's | unfinished (valley / backfill) |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, s in slices.items():
        lines.append(f"| {name} | {s['cost']:.0f} | {s['backfillCost']:.0f} | {show('vsBackfill', s['vsBackfill'])} | {show('overBound', s['overBound'])} | "
                     f"{show('idleShare', s['idleShare'])} | {show('soldShare', s['soldShare'])} | {show('r', s['meanJctNotReduceCostRatio'])} | "
                     f"{s['unfinished']} / {s['backfillUnfinished']} |")
    totals = {p: {k: sum(s["bought"][p][k] for s in slices.values()) for k in ("nodeHours", "idleNodeHours", "provisioningNodeHours", "soldGpuHours", "gpuHours")}
              for p in POLICIES}
    lines += ["", "Summed over the slices (node-hours):", "", "| policy | bought | idle | provisioning | GPU-hours sold / bought |",
              "| --- | ---: | ---: | ---: | ---: |"]
    with open(out / "bought.dat", "w") as dat:
        dat.write("# policy busyNodeHours idleNodeHours provisioningNodeHours\n")
        for p, t in totals.items():
            busy = t["nodeHours"] - t["idleNodeHours"] - t["provisioningNodeHours"]
            dat.write(f"{p} {busy:.1f} {t['idleNodeHours']:.1f} {t['provisioningNodeHours']:.1f}\n")
            lines.append(f"| {p} | {t['nodeHours']:.0f} | {t['idleNodeHours']:.0f} | {t['provisioningNodeHours']:.0f} | "
                         f"{t['soldGpuHours'] / t['gpuHours'] * 100 if t['gpuHours'] else 0:.1f}% |")
    text = "\n".join(lines) + "\n"
    (out / "cloud.md").write_text(text)
    (out / "cloud.json").write_text(json.dumps({"slices": slices, "summary": summary, "totals": totals}, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/sweep-cloud")
