#!/usr/bin/env python3
# Tables and ratios of control-plane runs: report.py RUNS.jsonl... OUT_DIR -> OUT_DIR/controlplane.{json,md}
# (several runs files: sizes measured in separate runs, in the order given; a later row for the same
# size and system replaces an earlier one).
import json, os, subprocess, sys, pathlib
rows = list({(r["tasks"], r["system"]): r for f in sys.argv[1:-1] for r in (json.loads(l) for l in open(f) if l.strip())}.values())
out = pathlib.Path(sys.argv[-1])
def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
# BENCH_COMMIT: the commit the runs were made at, when the report is written later.
commit = os.environ.get("BENCH_COMMIT") or git("rev-parse", "--short", "HEAD") + (" (with local changes)" if git("status", "--porcelain", "--untracked-files=no") else "")
by = {(r["tasks"], r["system"]): r for r in rows}
def ratio(a, b, k):
    if a is None or b is None or k not in a: return None
    if k not in b:  # the peer did not get there before the timeout: an upper bound
        return f"< {round(a[k] / b['timeoutSeconds'], 2)}" if b.get("timedOut") and k.startswith("seconds") else None
    if not b[k]: return None
    r = round(a[k] / b[k], 2)
    # A system stopped at the timeout used what it had used by then: its CPU, requests and peak RSS
    # are lower bounds of what finishing would have taken, so a ratio over them is a bound too (the
    # MPI Operator's 15,054 requests at N=1,000 on 2026-11-26 were over the 240 jobs it brought to
    # Running). Times it reached are exact.
    if k.startswith("seconds") or bool(a.get("timedOut")) == bool(b.get("timedOut")): return r
    return f"<= {r}" if b.get("timedOut") else f">= {r}"
# Against the floor measured first and, when it ran, the floor measured again after the operators
# (floorAfterOverFloor: how much the cluster drifted over the run).
ratios = []
for n in sorted({r["tasks"] for r in rows}):
    v, m, f, fa = by.get((n, "valley")), by.get((n, "mpi-operator")), by.get((n, "floor")), by.get((n, "floor-after"))
    for k in ("secondsToPodsRunning", "secondsToTasksRunning", "cpuSeconds", "peakRssMiB", "apiRequests", "apiServerRequests"):
        q = {"tasks": n, "figure": k, "valleyOverMpiOperator": ratio(v, m, k), "valleyOverFloor": ratio(v, f, k)}
        if fa and k.startswith("seconds"):
            q["valleyOverFloorAfter"], q["floorAfterOverFloor"] = ratio(v, fa, k), ratio(fa, f, k)
        ratios.append(q)
# Time per task: how each system's time to all pods Running grows with N (flat = scales linearly).
per_task = []
for n in sorted({r["tasks"] for r in rows}):
    row = {"tasks": n}
    for system in ("floor", "mpi-operator", "valley", "floor-after"):
        r = by.get((n, system))
        if r and "secondsToPodsRunning" in r:  # reached even when its tasks timed out
            row[system] = round(1000 * r["secondsToPodsRunning"] / n, 1)
    per_task.append(row)
# Growth against the first N >= 200, Valley's and the floor's: the floor's is the cluster's own
# (scheduler, kubelets, API server), which no operator can beat.
for system, key in (("valley", "valleyOverItsFirstFrom200"), ("floor", "floorOverItsFirstFrom200")):
    base = next((r[system] for r in per_task if r["tasks"] >= 200 and system in r), None)
    for r in per_task:
        if base and system in r: r[key] = round(r[system] / base, 2)
doc = {"benchmark": "controlplane", "commit": commit, "runs": rows, "ratios": ratios, "msPerTaskToPodsRunning": per_task}
(out / "controlplane.json").write_text(json.dumps(doc, indent=2) + "\n")
md = ["| tasks x (1+W) | system | to all pods Running (s) | to all tasks Running (s) | CPU (s) | peak RSS (MiB) | API requests (its own) | API server requests (all) |",
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
for r in rows:
    late = f"> {r.get('timeoutSeconds')} ({r.get('tasksRunning')}/{r['tasks']} Running)"
    system = r["system"] + (f" ({r['valleyArgs']})" if r.get("valleyArgs") else "")
    md.append(f"| {r['tasks']} x (1+{r['workers']}) | {system} | {r.get('secondsToPodsRunning', late)} | "
              f"{r.get('secondsToTasksRunning', late)} | {r['cpuSeconds']} | {r['peakRssMiB']} | {r['apiRequests']} | {r['apiServerRequests']} |")
md += ["", "| tasks | figure | Valley / MPI Operator | Valley / floor | Valley / floor after | floor after / floor |",
       "| --- | --- | ---: | ---: | ---: | ---: |"]
shown = lambda v: "-" if v is None else v  # a system that did not get there before its timeout
for q in ratios:
    md.append(f"| {q['tasks']} | {q['figure']} | {shown(q['valleyOverMpiOperator'])} | {shown(q['valleyOverFloor'])} | "
              f"{shown(q.get('valleyOverFloorAfter'))} | {shown(q.get('floorAfterOverFloor'))} |")
md += ["", "Time per task to all pods Running (ms; growth: against the system's own time per task at the first N >= 200):", "",
       "| tasks | floor | mpi-operator | valley | floor after | valley growth | floor growth |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
for r in per_task:
    md.append(f"| {r['tasks']} | {r.get('floor', '-')} | {r.get('mpi-operator', '-')} | {r.get('valley', '-')} | {r.get('floor-after', '-')} | "
              f"{r.get('valleyOverItsFirstFrom200', '-')} | {r.get('floorOverItsFirstFrom200', '-')} |")
# What each system's own requests are made of (verb, resource, response code), when recorded.
for r in rows:
    if r.get("apiRequestsBy"):
        md += ["", f"Own API requests of {r['system']} at N={r['tasks']}: " +
               ", ".join(f"{what} {count}" for what, count in r["apiRequestsBy"].items()) + "."]
md += ["", f"Commit: {commit}."]
(out / "controlplane.md").write_text("\n".join(md) + "\n")
print("\n".join(md))
