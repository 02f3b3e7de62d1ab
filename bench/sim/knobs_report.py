#!/usr/bin/env python3
"""The aging step's effect (bench/sim/knobs.sh): from OUT/aging-<minutes>/<slice>/sim.json, and the
main sweep's Valley (SWEEP/<slice>/sim.json: the operator's default, 10 minutes), Valley's KPIs, cost
and mean JCT per setting over the same slices, the default the reference. Writes OUT/knobs.md and
OUT/knobs.json; prints the table."""
import json
import pathlib
import statistics
import sys

DEFAULT = 10


def valley_runs(d):
    slices = {}
    for s in sorted(p for p in d.iterdir() if (p / "sim.json").exists()):
        pol = {p["policy"]: p for p in json.loads((s / "sim.json").read_text())["policies"]}
        if "valley" in pol:
            slices[s.name] = pol["valley"]
    return slices


def load(out, sweep):
    settings = {int(d.name.split("-", 1)[1]): valley_runs(d) for d in sorted(out.glob("aging-*"))}
    names = set().union(*(s.keys() for s in settings.values())) if settings else set()
    settings.setdefault(DEFAULT, {n: r for n, r in valley_runs(sweep).items() if n in names})
    return settings


def spread(vals, fmt):
    return " / ".join(fmt.format(v) for v in (min(vals), statistics.median(vals), max(vals))) if vals else "n/a"


def main(out, sweep):
    settings = load(out, sweep)
    if DEFAULT not in settings:
        sys.exit(f"knobs_report: no aging-{DEFAULT} runs under {out}")
    ref = settings[DEFAULT]
    rows = [f"Valley at several aging steps (valley-sim --aging-step-minutes) over {len(ref)} slices: min / median / max "
            f"over the slices, sums where said; cost and mean JCT against the default ({DEFAULT} min) on the same slice.", "",
            "| aging step | worst wait / run time | starved, not by choice (sum) | starved, reduceCost included (sum) "
            "| priority inversions, GPU-hours (sum) | GPUs allocated | Jain over users | cost vs default (sum) | mean JCT vs default |",
            "| --- | --- | ---: | ---: | ---: | --- | --- | ---: | --- |"]
    data = {}
    for minutes, slices in sorted(settings.items()):
        common = [n for n in slices if n in ref]
        k = [slices[n]["kpis"] for n in common]
        cost = sum(slices[n]["totalCostMicros"] for n in common) / max(1, sum(ref[n]["totalCostMicros"] for n in common))
        jct = [slices[n]["meanJctHours"] / ref[n]["meanJctHours"] for n in common if ref[n]["meanJctHours"]]
        f = {"slices": len(common),
             "worstWaitOverRun": [x["starvation"]["worstWaitOverRun"] for x in k],
             "starvedNotByChoice": sum(x["starvation"]["starvedNotByChoice"] for x in k),
             "starved": sum(x["starvation"]["starved"] for x in k),
             "inversionGpuHours": sum(x["priorityInversions"]["gpuHours"] for x in k),
             "allocated": [x["occupancy"]["allocated"] for x in k],
             "jain": [x["fairness"]["jainOverUsers"] for x in k],
             "costVsDefault": cost, "meanJctVsDefault": jct}
        data[minutes] = f
        label = "off" if minutes == 0 else f"{minutes} min" + (" (default)" if minutes == DEFAULT else "")
        rows.append(f"| {label} | {spread(f['worstWaitOverRun'], '{:.1f}')} | {f['starvedNotByChoice']} | {f['starved']} "
                    f"| {f['inversionGpuHours']:.1f} | {spread(f['allocated'], '{:.1%}')} | {spread(f['jain'], '{:.3f}')} "
                    f"| {cost - 1:+.2%} | {spread(jct, '{:.3f}')} |")
    (out / "knobs.md").write_text("\n".join(rows) + "\n")
    (out / "knobs.json").write_text(json.dumps(data, indent=1) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/knobs"),
         pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "bench/results/sweep"))
