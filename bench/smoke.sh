#!/usr/bin/env bash
# `make bench-smoke` (part of `make test`): every benchmark program once at a tiny size, checking
# that it runs end to end and that its output holds together. No figure is compared with a
# threshold: timings on a shared CI machine say nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/smoke
rm -rf "$out" && mkdir -p "$out"
fail() { echo "bench-smoke: $*" >&2; exit 1; }

echo "bench-smoke: planner, watch decoding, informer memory, task start-up"
build/bin/bench_planner 50 20 1 > "$out/planner.json"
build/bin/bench_planner running 20 1 > "$out/planner_running.json"
python3 -c "import json, sys; r = json.load(open(sys.argv[1])); assert r['kept'] == r['tasks'] == 20, r" "$out/planner_running.json" ||
  fail "a re-plan of 20 running tasks did not keep them all"
build/bin/bench_watch_decode 1000 > "$out/watch_decode.json"
build/bin/bench_informer_memory .valley/kubeconfig 50 > "$out/informer_memory.json"
python3 -c "import json, sys; r = json.load(open(sys.argv[1])); assert r['pods'] == 50 and r['create_failures'] == 0, r" "$out/informer_memory.json" ||
  fail "the informer benchmark did not cache the 50 pods it meant to"
bench/task_startup.sh 2 > "$out/task_startup.json"

echo "bench-smoke: control plane, 3 tasks x (1 + 2) pods per system (the floor twice: before and after the operators)"
BENCH_CP_OUT="$out" BENCH_CP_WORKERS=2 BENCH_CP_TIMEOUT=300 bench/controlplane/run.sh "3" > /dev/null
python3 - "$out/controlplane.json" <<'PY' || fail "control-plane results incomplete"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
systems = {r["system"] for r in runs}
assert systems == {"floor", "mpi-operator", "valley", "floor-after"}, systems
for r in runs:
    assert not r.get("timedOut"), r
    assert r["secondsToPodsRunning"] > 0 and r["secondsToTasksRunning"] > 0, r
    assert r["apiRequests"] > 0 and r["peakRssMiB"] > 0, r
    # The breakdown is of the same requests: by verb, resource and code, summing to the count.
    assert sum(r["apiRequestsBy"].values()) == r["apiRequests"], r
    assert any(k.startswith("create pods ") for k in r["apiRequestsBy"]), r
PY

echo "bench-smoke: the live peer, real Kueue admitting MPIJobs by flavor order (bench/live/kueue_check.sh)"
bench/live/kueue_check.sh

echo "bench-smoke: live economics, 4 jobs through real Kueue and through Valley (bench/live/run.sh)"
LIVE_SMOKE=1 bench/live/run.sh "$out/live" > /dev/null
python3 - "$out/live/smoke" <<'PY' || fail "the live runs do not hold together"
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
jobs = len((d / "slice.csv").read_text().splitlines()) - 1
assert jobs == 4, jobs
for system in ("kueue", "valley"):
    r = json.loads((d / f"{system}.json").read_text())
    # Every job ran to its end under both systems, and the meter priced each.
    assert r["jobsFinished"] == jobs and r["jobsUnfinished"] == 0, r
    lines = [json.loads(l) for l in (d / f"{system}-jobs.jsonl").read_text().splitlines()]
    assert len(lines) == jobs and all(float(j["cost"]) > 0 and j["end"] > j["submit"] for j in lines), lines
    # Where each job's GPU-seconds were held adds up to what it held.
    assert all(abs(sum(j["gpuSecondsByPool"].values()) - j["gpuSeconds"]) <= len(j["gpuSecondsByPool"]) for j in lines), lines
    assert r["spotInterruptions"] >= 1 and r["launchersEnded"] >= jobs, r
    assert r["checkpointRecords"] > 0, r
sim = {p["policy"] for p in json.loads((d / "sim" / "sim.json").read_text())["policies"]}
assert sim == {"backfill", "valley"}, sim
sweeps = {p["policy"] for p in json.loads((d / "sim-backfill" / "sim.json").read_text())["policies"]}
assert sweeps == {"backfill"}, sweeps
PY

echo "bench-smoke: trace replay, 40 jobs, every policy and the LP bound"
build/bin/valley-sim --trace bench/sim/inputs/smoke-trace.csv --cluster bench/sim/inputs/cluster.yaml \
  --spot bench/sim/inputs/spot.yaml --pricing deploy/samples/pricingpolicy-default.yaml \
  --workload bench/sim/inputs/smoke-workload.yaml --profiles bench/data/pollux-adaptdl \
  --out "$out/sim" --scratch "$out/sim-lp" > /dev/null
gnuplot -e "dir='$out/sim'" bench/sim/plot.gp
for f in sim.json sim.md cost.png jct.png allocation.png; do [ -s "$out/sim/$f" ] || fail "no $out/sim/$f"; done
python3 - "$out/sim/sim.json" <<'PY' || fail "trace-replay results do not hold together"
import json, sys
d = json.load(open(sys.argv[1]))
bound = d["lowerBound"]                  # over Valley's makespan
latest = d["lowerBoundLatestFinish"]     # over the latest finish of any policy
assert bound["status"] == "OPTIMAL" and latest["status"] == "OPTIMAL", (bound, latest)
policies = {p["policy"]: p for p in d["policies"]}
assert set(policies) == {"naive", "backfill", "valley-v1", "valley"}, policies.keys()
for p in policies.values():
    assert p["jobsUnfinished"] == 0, p
    # A lower bound: no schedule that ends by the horizon may cost less.
    assert p["totalCostMicros"] >= latest["costMicros"], (p, latest)
    assert 0 <= p["estimates"]["insideRange"] <= 1, p
assert policies["valley"]["totalCostMicros"] >= bound["costMicros"], (policies["valley"], bound)
PY
echo "bench-smoke: the economics sweep, its first two slices cut to 30 jobs"
SWEEP_SLICES=2 bench/sim/sweep.sh "$out/sweep" --max-jobs 30 > /dev/null
python3 - "$out/sweep/sweep.json" <<'PY' || fail "sweep results do not hold together"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["slices"]) == 2, d["slices"].keys()
for name, s in d["slices"].items():
    assert set(s["figures"]) == {"valley-v2", "valley"}, (name, s)
    f = s["figures"]["valley"]  # the bound is over valley's makespan: a lower bound on its cost
    assert f["overBound"] is None or f["overBound"] >= 1, (name, f)
assert d["summary"]["vsBackfill"]["valley"]["n"] == 2, d["summary"]
PY
echo "bench-smoke: the cloud sweep (capacity bought from zero), its first two slices cut to 30 jobs"
SWEEP_SLICES=2 SWEEP_CLOUD=bench/sim/inputs/cloud.yaml bench/sim/sweep.sh "$out/sweep-cloud" --max-jobs 30 > /dev/null
[ -s "$out/sweep-cloud/bought.png" ] || fail "no $out/sweep-cloud/bought.png"
python3 - "$out/sweep-cloud/cloud.json" <<'PY' || fail "cloud sweep results do not hold together"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["slices"]) == 2, d["slices"].keys()
for name, s in d["slices"].items():
    for p, b in s["bought"].items():
        # What was bought holds what was idle, provisioning and sold; the platform paid for it.
        assert b["nodeHours"] > 0 and b["platformCostMicros"] > 0, (name, p, b)
        assert b["idleNodeHours"] + b["provisioningNodeHours"] <= b["nodeHours"] + 1e-6, (name, p, b)
        assert b["soldGpuHours"] <= b["gpuHours"] + 1e-6, (name, p, b)
    assert s["overBound"] is None or s["overBound"] >= 1, (name, s)
PY
echo "bench-smoke: tenants, a 2-hour Philly slice (virtual clusters as tenants), without, with and with strict quotas"
mkdir -p "$out"
gzip -dc bench/data/pollux-adaptdl/philly.csv.gz > "$out/philly.csv"  # kept compressed in the repository (3.4 MB as text)
build/bin/valley-sim --trace "$out/philly.csv" --from-hour 1008 --to-hour 1010 --load 1.2 \
  --cluster bench/sim/inputs/cluster.yaml --spot bench/sim/inputs/spot.yaml --pricing deploy/samples/pricingpolicy-default.yaml \
  --workload bench/sim/inputs/smoke-workload.yaml --profiles bench/data/pollux-adaptdl --policy valley \
  --tenancy none,borrowing,strict --no-bound --out "$out/tenants" > /dev/null
python3 - "$out/tenants/sim.json" <<'PY' || fail "tenant replay results do not hold together"
import json, sys
d = json.load(open(sys.argv[1]))
policies = {p["policy"]: p for p in d["policies"]}
assert set(policies) == {"valley", "valley+borrowing", "valley+strict"}, policies.keys()
for p in policies.values():
    assert len(p["tenants"]) >= 2, p["tenants"]
    assert abs(sum(t["weight"] for t in p["tenants"].values()) - 1) < 0.01, p["tenants"]
    assert 0 <= p["jainIndex"] <= 1, p
    assert p["nominalClaims"]["waitP50Seconds"] <= p["nominalClaims"]["waitP95Seconds"] <= p["nominalClaims"]["waitMaxSeconds"], p
    assert 0 < p["windowAllocationPercent"] <= 100, p
PY
echo "bench-smoke: ok (results in $out)"
