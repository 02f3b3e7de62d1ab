#!/usr/bin/env bash
# `make bench`: runs every benchmark program and writes bench/results/<name>.json plus a Markdown
# table bench/results/README.md. Figures are printed, never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
results=bench/results
mkdir -p "$results"
kubeconfig=.valley/kubeconfig
pods=${BENCH_INFORMER_PODS:-10000}

echo "bench: planner decision time, 1,000 nodes x 500 pending tasks"
build/bin/bench_planner 1000 500 3 | tee "$results/planner.json"
build/bin/bench_planner 1000 500 3 dra | tee "$results/planner_dra.json"
echo "bench: one plan while a burst of N tasks runs (bench/controlplane's cluster), N = 200 1000 2000 5000"
for n in 200 1000 2000 5000; do build/bin/bench_planner running "$n" 3; done | tee "$results/planner_running.jsonl"
echo "bench: watch stream decoding"
build/bin/bench_watch_decode 50000 | tee "$results/watch_decode.json"
echo "bench: informer cache memory with $pods pods on the local cluster"
build/bin/bench_informer_memory "$kubeconfig" "$pods" | tee "$results/informer_memory.json"

echo "bench: TrainingTask with 1 launcher + 16 workers, apply to all pods Running"
bench/task_startup.sh 16 | tee "$results/task_startup.json"

echo "bench: control plane, Valley vs Kubeflow MPI Operator vs a parallel creator (N = ${BENCH_CP_SIZES:-20 200 1000})"
BENCH_CP_TIMEOUT=${BENCH_CP_TIMEOUT:-900} bench/controlplane/run.sh "${BENCH_CP_SIZES:-20 200 1000}"

echo "bench: trace replay of the planner and cost engine (fifo, priority-backfill, valley) and the LP bound"
bench/sim/run.sh "$results/sim"

echo "bench: topology awareness (racks), backfill and valley, on the placement-measured step times"
bench/sim/topology.sh "$results/topology"

echo "bench: tenants on a shared cluster (Philly virtual clusters): without tenants, Valley's tenants, strict quotas"
bench/sim/tenants.sh "$results/tenants"

bench/results_readme.py "$results"
