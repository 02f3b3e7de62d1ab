#!/usr/bin/env python3
"""What the shipped Grafana dashboard must keep: namespace and task variables that the per-task
panels use, no currency fixed in a unit (the amount's currency is the metric's label), and seconds
never on the same axis as counts or rates (a panel that mixes them puts the seconds series on its own
axis, unit "s")."""
import json
import re
import sys

d = json.load(open(sys.argv[1]))
problems = []
variables = {v["name"] for v in d.get("templating", {}).get("list", [])}
for name in ("datasource", "namespace", "task"):
    if name not in variables:
        problems.append(f"no ${name} variable")
for panel in d["panels"]:
    title = panel.get("title", "?")
    targets = panel.get("targets", [])
    if not targets:
        continue
    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    if defaults.get("unit", "").startswith("currency"):
        problems.append(f"{title}: unit {defaults['unit']} fixes a currency; show the metric's currency label instead")
    for t in targets:
        expr = t["expr"]
        if re.search(r"valley_(task_workers|task_gpu_utilization_percent|task_idle_gpu_hours|cost_accrued)\b", expr) and "$namespace" not in expr:
            problems.append(f"{title}: {expr} ignores $namespace")
        if re.search(r"valley_task_(workers|gpu_utilization_percent|idle_gpu_hours)", expr) and "$task" not in expr:
            problems.append(f"{title}: {expr} ignores $task")
    seconds = [t["refId"] for t in targets if re.search(r"_seconds(_bucket|_sum|_count)?\b", t["expr"]) and "histogram_quantile" in t["expr"]]
    others = [t["refId"] for t in targets if t["refId"] not in seconds]
    if seconds and others:
        overrides = panel.get("fieldConfig", {}).get("overrides", [])
        for ref in seconds:
            props = [o["properties"] for o in overrides if o.get("matcher", {}).get("options") == ref]
            flat = {p["id"]: p["value"] for ps in props for p in ps}
            if flat.get("unit") != "s" or flat.get("custom.axisPlacement") != "right":
                problems.append(f"{title}: series {ref} is seconds beside counts; give it unit s on the right axis")
if problems:
    print("dashboard:\n  " + "\n  ".join(problems))
    sys.exit(1)
