#!/usr/bin/env python3
"""The live benchmark's table (bench/live/run.sh): per slice, live Kueue, live Valley and
valley-sim's backfill and valley for the same slice, prices and compression: cost, mean and p95 JCT,
GPU-hours by pool, and how far the simulator is from each live run. Kueue is predicted by
valley-sim --peer kueue (sim/); the sweeps' backfill (sim-backfill/) is shown beside it when run.sh
wrote it.

    bench/live/report.py OUT > OUT/live.md
"""
import json
import pathlib
import sys


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def cost(d):
    return d["totalCostMicros"] / 1e6


def off(sim, live):
    return "n/a" if not live else f"{(sim - live) / live * 100:+.1f}%"


def pools(d):
    return ", ".join(f"{k} {v}" for k, v in sorted(d.get("gpuHoursByPool", {}).items())) or "-"


def read_jobs(path):
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []


def mean_wait_hours(rows):
    """Mean hours from submission to a job's first start (jobs that started)."""
    waits = [r["start"] - r["submit"] for r in rows if r.get("start", -1) >= 0]
    return sum(waits) / len(waits) / 3600 if waits else None


def main():
    out = pathlib.Path(sys.argv[1])
    print("| slice | jobs | run | cost (USD) | mean JCT (h) | mean JCT w/o reduceCost (h) | p95 JCT (h) | finished | GPU-hours by pool |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    checks = []
    for d in sorted(p for p in out.iterdir() if (p / "slice.csv").exists()):
        jobs = len(d.joinpath("slice.csv").read_text().splitlines()) - 1
        live = {s: load(d / f"{s}.json") for s in ("kueue", "valley")}
        sim = {p["policy"]: p for p in (load(d / "sim" / "sim.json") or {}).get("policies", [])}
        sweeps = {p["policy"]: p for p in (load(d / "sim-backfill" / "sim.json") or {}).get("policies", [])}
        rows = [("live Kueue", live["kueue"]), ("sim kueue", sim.get("backfill")), ("sim backfill (the sweeps')", sweeps.get("backfill")),
                ("live Valley", live["valley"]), ("sim valley", sim.get("valley"))]
        for label, r in rows:
            if not r:
                continue
            print(f"| {d.name} | {jobs} | {label} | {cost(r):.2f} | {r['meanJctHours']} | {r['meanJctHoursNotReduceCost']} | "
                  f"{r['p95JctHours']} | {r['jobsFinished']}/{r['jobsFinished'] + r['jobsUnfinished']} | {pools(r)} |")
        k, v = live["kueue"], live["valley"]
        if k and v:
            checks.append(f"- {d.name}: live Valley {cost(v):.2f} vs live Kueue {cost(k):.2f} USD ({off(cost(v), cost(k))}); "
                          f"mean JCT {v['meanJctHours']} vs {k['meanJctHours']} h")
        for live_name, sim_name in (("kueue", "backfill"), ("valley", "valley")):
            l = live[live_name]
            for label, s in ((live_name, sim.get(sim_name)), ("backfill (the sweeps')", sweeps.get(sim_name) if live_name == "kueue" else None)):
                if l and s:
                    checks.append(f"- {d.name}: sim {label} vs live {live_name}: cost {off(cost(s), cost(l))}, "
                                  f"mean JCT {off(s['meanJctHours'], l['meanJctHours'])}, p95 JCT {off(s['p95JctHours'], l['p95JctHours'])}")
            if l and "gpuHoursHeld" in l:
                held, worked = l["gpuHoursHeld"], l["gpuHoursInGangs"]
                live_wait = mean_wait_hours(read_jobs(d / f"{live_name}-jobs.jsonl"))
                sim_wait = mean_wait_hours(read_jobs(d / "sim" / f"jobs-{sim_name}.jsonl"))
                waits = (f"; mean wait to first start {live_wait:.2f} h live, {sim_wait:.2f} h sim"
                         if live_wait is not None and sim_wait is not None else "")
                checks.append(f"- {d.name}: live {live_name}'s pods held {held} GPU-hours, {worked} of them in whole gangs at work "
                              f"({(held - worked) / held * 100 if held else 0:.1f}% starting, waiting or stopping){waits}")
    print()
    print("\n".join(checks))


if __name__ == "__main__":
    main()
