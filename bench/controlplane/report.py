#!/usr/bin/env python3
# Tables and ratios of a control-plane run: report.py RUNS.jsonl OUT_DIR -> OUT_DIR/controlplane.{json,md}
import json, sys, pathlib
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = pathlib.Path(sys.argv[2])
by = {(r["tasks"], r["system"]): r for r in rows}
def ratio(a, b, k):
    if a is None or b is None or k not in a: return None
    if k not in b:  # the peer did not get there before the timeout: an upper bound
        return f"< {round(a[k] / b['timeoutSeconds'], 2)}" if b.get("timedOut") and k.startswith("seconds") else None
    return round(a[k] / b[k], 2) if b[k] else None
ratios = []
for n in sorted({r["tasks"] for r in rows}):
    v, m, f = by.get((n, "valley")), by.get((n, "mpi-operator")), by.get((n, "floor"))
    for k in ("secondsToPodsRunning", "secondsToTasksRunning", "cpuSeconds", "peakRssMiB", "apiRequests", "apiServerRequests"):
        ratios.append({"tasks": n, "figure": k, "valleyOverMpiOperator": ratio(v, m, k), "valleyOverFloor": ratio(v, f, k)})
doc = {"benchmark": "controlplane", "runs": rows, "ratios": ratios}
(out / "controlplane.json").write_text(json.dumps(doc, indent=2) + "\n")
md = ["| tasks x (1+W) | system | to all pods Running (s) | to all tasks Running (s) | CPU (s) | peak RSS (MiB) | API requests (its own) | API server requests (all) |",
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
for r in rows:
    late = f"> {r.get('timeoutSeconds')} ({r.get('tasksRunning')}/{r['tasks']} Running)"
    md.append(f"| {r['tasks']} x (1+{r['workers']}) | {r['system']} | {r.get('secondsToPodsRunning', late)} | "
              f"{r.get('secondsToTasksRunning', late)} | {r['cpuSeconds']} | {r['peakRssMiB']} | {r['apiRequests']} | {r['apiServerRequests']} |")
md += ["", "| tasks | figure | Valley / MPI Operator | Valley / floor |", "| --- | --- | ---: | ---: |"]
for q in ratios:
    md.append(f"| {q['tasks']} | {q['figure']} | {q['valleyOverMpiOperator']} | {q['valleyOverFloor']} |")
(out / "controlplane.md").write_text("\n".join(md) + "\n")
print("\n".join(md))
