#!/usr/bin/env python3
"""The sweep's report: from OUT/<slice>/sim.json (bench/sim/sweep.sh), each figure of Valley (today's
and valley-v2) against backfill and the LP bound, per slice and as min / median / max over the slices,
with how many slices meet issue 41's targets, and where each policy's money goes (valley-sim's
moneySplit summed over the slices), and the scheduler's KPIs of every policy (starvation, priority
inversions, occupancy, fairness: valley-sim's kpis). Writes OUT/sweep.md, OUT/sweep.json and OUT/money.dat; prints the
summary.

Room taken = (backfill - valley) / (backfill - bound), the bound over valley's makespan (for valley-v2
too: a bound over its own makespan would differ when it finishes later); n/a where backfill is within
1% of the bound (no room to take)."""
import json
import pathlib
import statistics
import sys

VALLEYS = ("valley-v2", "valley")
# figure key, heading, target (a predicate and its wording) or None
FIGURES = [
    ("vsBackfill", "cost vs backfill", (lambda v: v <= 0, "never more expensive than backfill")),
    ("roomTaken", "share of backfill-to-bound room taken", (lambda v: v >= 0.5, ">= 50%")),
    ("overBound", "cost / bound", None),
    ("backfillOverBound", "backfill cost / bound", None),
    ("meanJctRatio", "mean JCT / backfill's", (lambda v: v <= 1.0, "no worse than backfill")),
    ("meanJctNotReduceCostRatio", "mean JCT without reduceCost / backfill's", (lambda v: v <= 1.0, "no worse than backfill")),
    ("p95JctRatio", "p95 JCT / backfill's", (lambda v: v <= 1.1, "within 10% of backfill")),
    ("insideRangeOff", "finals in range, durations +-50%", (lambda v: v >= 0.8, ">= 80%")),
    ("medianErrorOff", "median estimate error, durations +-50%", None),
    ("rangeWidthOff", "median range width, durations +-50%", None),
]
PERCENT = {"vsBackfill", "roomTaken", "insideRangeOff", "medianErrorOff", "rangeWidthOff"}


def figures(sim):
    pol = {p["policy"]: p for p in sim["policies"]}
    bound = sim.get("lowerBound", {}).get("costMicros")
    backfill = pol["backfill"]
    rows = {}
    for name in VALLEYS:
        if name not in pol:
            continue
        p = pol[name]
        cost, bf = p["totalCostMicros"], backfill["totalCostMicros"]
        f = {"cost": cost / 1e6, "backfillCost": bf / 1e6,
             "vsBackfill": cost / bf - 1 if bf else None,
             "overBound": cost / bound if bound else None,
             "backfillOverBound": bf / bound if bound else None,
             "roomTaken": (bf - cost) / (bf - bound) if bound and bf - bound > 0.01 * bf else None,
             "meanJctRatio": p["meanJctHours"] / backfill["meanJctHours"] if backfill["meanJctHours"] else None,
             "meanJctNotReduceCostRatio": (p["meanJctHoursNotReduceCost"] / backfill["meanJctHoursNotReduceCost"]
                                           if backfill.get("meanJctHoursNotReduceCost") else None),
             "p95JctRatio": p["p95JctHours"] / backfill["p95JctHours"] if backfill["p95JctHours"] else None,
             "insideRangeOff": p["estimatesDurationOff"]["insideRange"],
             "medianErrorOff": p["estimatesDurationOff"]["medianError"],
             "rangeWidthOff": p["estimatesDurationOff"]["medianRangeWidth"],
             "unfinished": p["jobsUnfinished"]}
        rows[name] = f
    return rows


POLICIES = ("naive", "backfill", "valley-v2", "valley")
PARTS = [("ideal", "ideal (best size, cheapest capacity and tariff)"), ("size", "size beyond the most efficient"),
         ("restarts", "restarts and lost work"), ("capacity", "dearer capacity class or vendor"),
         ("tariff", "dearer tariff"), ("unfinished", "unfinished jobs")]


def money_split(sim):
    """Each policy's cost by part (micros), and the LP bound's."""
    out = {p["policy"]: {k: p["moneySplit"][k + "Micros"] for k, _ in PARTS} for p in sim["policies"] if "moneySplit" in p}
    return out, sim.get("lowerBound", {}).get("costMicros")


def write_money(out, slices):
    """Summed over the slices, each part as a share of backfill's total: a table and money.png."""
    policies = [p for p in POLICIES if any(p in s["money"] for s in slices.values())]  # a sweep may replay fewer
    totals = {p: {k: 0 for k, _ in PARTS} for p in policies}
    bound = 0
    for s in slices.values():
        for p in policies:
            for k, _ in PARTS:
                totals[p][k] += s["money"].get(p, {}).get(k, 0)
        bound += s["bound"] or 0
    ref = sum(totals["backfill"].values()) or 1
    rows = ["", f"Where the money goes, summed over the {len(slices)} slices, as a share of backfill's total "
            f"(the LP bounds sum to {bound / ref:.1%}; {out}/money.png):", "",
            "| policy | " + " | ".join(h for _, h in PARTS) + " | total |", "| --- |" + " ---: |" * (len(PARTS) + 1)]
    with (out / "money.dat").open("w") as f:
        f.write("# policy " + " ".join(k for k, _ in PARTS) + " bound (shares of backfill's total)\n")
        for p in policies:
            t = totals[p]
            rows.append(f"| {p} | " + " | ".join(f"{t[k] / ref:.1%}" for k, _ in PARTS) + f" | {sum(t.values()) / ref:.1%} |")
            f.write(p + " " + " ".join(f"{t[k] / ref:.4f}" for k, _ in PARTS) + f" {bound / ref:.4f}\n")
    return rows, totals


# The scheduler KPIs (valley-sim's "kpis", bench/sim/kpi.h): path into it, heading, format.
KPIS = [(("starvation", "worstWaitOverRun"), "worst wait / its run time", "{:.1f}"),
        (("starvation", "starvedNotByChoice"), "starved (waited > 2x its run and > 1 h), not by choice", "{:.0f}"),
        (("starvation", "starved"), "starved, reduceCost included", "{:.0f}"),
        (("priorityInversions", "gpuHours"), "priority inversions, GPU-hours (upper bound)", "{:.1f}"),
        (("priorityInversions", "shareOfHeld"), "priority inversions, share of GPU-hours held", "{:.2%}"),
        (("occupancy", "allocated"), "occupancy: GPUs allocated", "{:.1%}"),
        (("occupancy", "useful"), "occupancy: GPUs doing useful work", "{:.1%}"),
        (("fairness", "jainOverUsers"), "fairness: Jain over users (a job without one: its own)", "{:.3f}")]


def kpis(sim):
    return {p["policy"]: p["kpis"] for p in sim["policies"] if "kpis" in p}


def kpi_rows(slices):
    """min / median / max over the slices of each KPI, per policy."""
    policies = [p for p in POLICIES if any(p in s["kpis"] for s in slices.values())]
    rows = ["", f"The scheduler's KPIs (bench/sim/kpi.h), min / median / max over the {len(slices)} slices:", "",
            "| KPI | " + " | ".join(policies) + " |", "| --- |" + " --- |" * len(policies)]
    table = {}
    for (group, key), heading, fmt in KPIS:
        cells = []
        for p in policies:
            vals = [s["kpis"][p][group][key] for s in slices.values() if p in s["kpis"]]
            table.setdefault(f"{group}.{key}", {})[p] = {"min": min(vals), "median": statistics.median(vals), "max": max(vals)}
            cells.append(" / ".join(fmt.format(v) for v in (min(vals), statistics.median(vals), max(vals))))
        rows.append(f"| {heading} | " + " | ".join(cells) + " |")
    return rows, table


def show(key, v):
    if v is None:
        return "n/a"
    return f"{v * 100:+.1f}%" if key == "vsBackfill" else f"{v * 100:.1f}%" if key in PERCENT else f"{v:.3f}"


def main(out):
    slices = {}
    for d in sorted(p for p in out.iterdir() if p.is_dir() and (p / "sim.json").exists()):
        sim = json.loads((d / "sim.json").read_text())
        money, bound = money_split(sim)
        slices[d.name] = {"jobs": sim["slice"]["jobs"], "figures": figures(sim), "money": money, "bound": bound, "kpis": kpis(sim)}
    lines = [f"Sweep over {len(slices)} slices (bench/sim/sweep.sh): min / median / max of each figure, and the "
             "slices meeting issue 41's target.", "",
             "| figure | policy | min | median | max | slices meeting the target |", "| --- | --- | ---: | ---: | ---: | --- |"]
    summary = {}
    for key, heading, target in FIGURES:
        for name in VALLEYS:
            if key == "backfillOverBound" and name != "valley":
                continue  # backfill's own figure: once
            vals = [s["figures"][name][key] for s in slices.values() if name in s["figures"] and s["figures"][name][key] is not None]
            if not vals:
                continue
            met = f"{sum(1 for v in vals if target[0](v))} of {len(vals)} ({target[1]})" if target else ""
            summary.setdefault(key, {})[name] = {"min": min(vals), "median": statistics.median(vals), "max": max(vals), "n": len(vals),
                                                 "met": sum(1 for v in vals if target[0](v)) if target else None}
            lines.append(f"| {heading} | {'backfill' if key == 'backfillOverBound' else name} | {show(key, min(vals))} | {show(key, statistics.median(vals))} | {show(key, max(vals))} | {met} |")
    head = [key for key, _, _ in FIGURES]
    detail = ["", "| slice (jobs) | policy | cost | backfill | " + " | ".join(h for _, h, _ in FIGURES) + " | unfinished |",
              "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in head) + " | ---: |"]
    for name_s, s in slices.items():
        for name, f in s["figures"].items():
            detail.append(f"| {name_s} ({s['jobs']}) | {name} | {f['cost']:.2f} | {f['backfillCost']:.2f} | "
                          + " | ".join(show(k, f[k]) for k in head) + f" | {f['unfinished']} |")
    money_rows, money_totals = write_money(out, slices)
    lines += money_rows
    kpi_lines, summary["kpis"] = kpi_rows(slices)
    lines += kpi_lines
    (out / "sweep.md").write_text("\n".join(lines + detail) + "\n")
    (out / "sweep.json").write_text(json.dumps({"slices": slices, "summary": summary, "moneyTotals": money_totals}, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/sweep"))
