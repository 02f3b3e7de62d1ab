#!/usr/bin/env python3
"""The cost-time frontier over the sweep's slices (bench/sim/frontier.sh): for each exchange rate of
tasks without reduceCost, Valley's cost and mean JCT of those tasks against backfill's, slice by
slice; naive from the main sweep (SWEEP_DIR). Writes OUT/frontier.md and OUT/frontier.dat (one
point per policy and setting: summed cost / backfill's, median JCT ratio) for frontier.gp.
  frontier_report.py OUT SWEEP_DIR"""
import json
import pathlib
import statistics
import sys


def runs(directory):
    """slice -> {policy: figures} of every sim.json under directory."""
    out = {}
    for f in sorted(pathlib.Path(directory).glob("*/sim.json")):
        sim = json.loads(f.read_text())
        pol = {p["policy"]: p for p in sim["policies"]}
        pol["_bound"] = sim.get("lowerBound", {}).get("costMicros")
        out[f.parent.name] = pol
    return out


def ratios(slices, policy):
    rows = []
    for name, pol in slices.items():
        if policy not in pol or "backfill" not in pol:
            continue
        p, b, bound = pol[policy], pol["backfill"], pol["_bound"]
        bf, cost = b["totalCostMicros"], p["totalCostMicros"]
        rows.append({"slice": name, "cost": cost, "backfill": bf,
                     "jct": p["meanJctHoursNotReduceCost"] / b["meanJctHoursNotReduceCost"],
                     "p95": p["p95JctHours"] / b["p95JctHours"],
                     "room": (bf - cost) / (bf - bound) if bound and bf - bound > 0.01 * bf else None})
    return rows


def main():
    out, sweep = pathlib.Path(sys.argv[1]), sys.argv[2]
    lines = ["Cost-time frontier over the sweep's slices (bench/sim/frontier.sh): Valley at each exchange rate of tasks "
             "without reduceCost (growth.withoutReduceCost, minPriority=minMarginalSpeedup; none: every task by the "
             "reduceCost rule) against backfill. Cost summed over the slices; JCT = mean JCT of tasks without "
             "reduceCost / backfill's, per slice.", "",
             "| policy | setting | cost / backfill's (sum) | cost vs backfill, min / median / max | slices no dearer | "
             "JCT ratio, min / median / max | slices no slower | p95 within 10% | room >= 50% |",
             "| --- | --- | ---: | --- | ---: | --- | ---: | ---: | ---: |"]
    points = []

    def add(policy, setting, rows):
        if not rows:
            return
        total = sum(r["cost"] for r in rows) / sum(r["backfill"] for r in rows)
        vs = sorted(r["cost"] / r["backfill"] - 1 for r in rows)
        jct = sorted(r["jct"] for r in rows)
        n = len(rows)
        lines.append(f"| {policy} | {setting} | {total:.3f} | {vs[0]:+.1%} / {statistics.median(vs):+.1%} / {vs[-1]:+.1%} | "
                     f"{sum(v <= 0 for v in vs)} of {n} | {jct[0]:.3f} / {statistics.median(jct):.3f} / {jct[-1]:.3f} | "
                     f"{sum(j <= 1.0005 for j in jct)} of {n} | {sum(r['p95'] <= 1.1 for r in rows)} of {n} | "
                     f"{sum((r['room'] or 0) >= 0.5 for r in rows)} of {n} |")
        points.append((policy, setting, total, statistics.median(jct), statistics.mean(jct)))

    main_sweep = runs(sweep)
    add("naive", "-", ratios(main_sweep, "naive"))
    add("backfill", "-", ratios(main_sweep, "backfill"))
    for d in sorted(p for p in out.iterdir() if (p / "setting").exists()):
        add("valley", (d / "setting").read_text().strip(), ratios(runs(d), "valley"))
    lines += ["", "A JCT ratio within 0.0005 of 1 counts as no slower (figures are rounded to 3.6 s)."]
    (out / "frontier.md").write_text("\n".join(lines) + "\n")
    with open(out / "frontier.dat", "w") as f:
        f.write("# policy setting cost_over_backfill median_jct_ratio mean_jct_ratio\n")
        for policy, setting, total, med, mean in points:
            f.write(f'"{policy}" "{setting}" {total:.4f} {med:.4f} {mean:.4f}\n')
    print("\n".join(lines))


if __name__ == "__main__":
    main()
