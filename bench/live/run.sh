#!/usr/bin/env bash
# The live economics benchmark (make bench-live; LIVE_SMOKE=1 is make bench-smoke's tiny run): the
# same trace slice, compressed in time, through real Kueue (v0.17.0, with the Kubeflow MPI Operator
# v0.6.0's MPIJobs) and through Valley's operator, one after the other on the same kwok fleet of the
# local cluster, then through valley-sim's backfill and valley for the same slice and prices.
#
#   bench/live/run.sh [OUT]      OUT defaults to bench/results/live (bench/out/live-smoke when smoke)
# env: LIVE_SLICES ("name trace from-hour to-hour [valley-sim args]" lines; the default: three ITP
#      slices), LIVE_COMPRESSION (trace seconds per wall-clock second, 120), LIVE_MAX_JOBS (40),
#      LIVE_MAX_DURATION_HOURS (6), LIVE_HORIZON_HOURS (the trace hours after which a run stops, 36),
#      LIVE_SYSTEMS ("kueue valley").
#
# Per slice, OUT/<slice>/: slice.csv (the jobs both replay), kueue.json and valley.json (the meter's
# figures: cost from pods' bind-to-end times priced by the PricingPolicy, JCT from submission to the
# launcher's end), *-jobs.jsonl, sim/sim.json (valley-sim's prediction, Kueue modelled as it runs MPIJobs:
# --peer kueue), sim-backfill/sim.json (the sweeps' backfill); OUT/live.md the table.
# Needs the local cluster up (make cluster-up) and the benchmarks' peers built (make bench-binaries).
set -euo pipefail
cd "$(dirname "$0")/../.."
smoke=${LIVE_SMOKE:-}
out=${1:-$([ -n "$smoke" ] && echo bench/out/live-smoke || echo bench/results/live)}
scratch=bench/out/live
mkdir -p "$out" "$scratch"
compression=${LIVE_COMPRESSION:-120}
max_jobs=${LIVE_MAX_JOBS:-40}
max_hours=${LIVE_MAX_DURATION_HOURS:-6}
horizon=${LIVE_HORIZON_HOURS:-36}
systems=${LIVE_SYSTEMS:-"kueue valley"}
fleet=live
data=bench/data
cluster=bench/live/inputs/cluster.yaml spot=bench/live/inputs/spot.yaml workload=bench/sim/inputs/workload.yaml
if [ -n "$smoke" ]; then
  # Three nodes, the spot one interrupted, four short jobs: every piece once.
  cluster=bench/live/inputs/smoke-cluster.yaml spot=bench/live/inputs/smoke-spot.yaml
  max_jobs=4 max_hours=1 horizon=${LIVE_HORIZON_HOURS:-5} compression=${LIVE_COMPRESSION:-360}
fi
# Twelve hours of arrivals from 20% into ITP cluster 7's and 6's spans and 80% into cluster 2's (the
# sweep's rule, shorter): heavy, middling and light demand for 64 GPUs.
default_slices="itp-07-20 $data/elasticflow-itp/cluster07.csv 285 297
itp-06-20 $data/elasticflow-itp/cluster06.csv 290 302
itp-02-80 $data/elasticflow-itp/cluster02.csv 1148 1160"
[ -n "$smoke" ] && default_slices="smoke bench/sim/inputs/smoke-trace.csv 386 400"
slices=${LIVE_SLICES:-$default_slices}

K() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
log() { echo "live: $*" >&2; }
# shellcheck source=bench/lib/systems.bash
. bench/lib/systems.bash

pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p"; done
  K delete nodes -l valley.dev/fleet=$fleet --wait=false >/dev/null 2>&1 || true
  K delete clusterqueue live --ignore-not-found >/dev/null 2>&1 || true
  tests/cluster/cluster.sh kueue-down >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Nothing else may reconcile these objects: the demo's operator would also handle TrainingTasks.
scripts/operator.sh stop >/dev/null 2>&1 || true
K apply -k crds/ >/dev/null
K apply --server-side --force-conflicts -f .valley/mpi-operator-manifests/kubeflow.org_mpijobs.yaml >/dev/null
K apply -f .valley/mpi-operator-manifests/cluster-role.yaml >/dev/null
K apply -f deploy/base/namespace.yaml -f deploy/base/rbac.yaml >/dev/null
K apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: valley-live}
YAML
sa_bound valley-live valley-operator valley-operator
sa_bound valley-live mpi-operator mpi-operator
sa_kubeconfig valley-live valley-operator "$scratch/valley-operator.kubeconfig"
sa_kubeconfig valley-live mpi-operator "$scratch/mpi-operator.kubeconfig"

# The checkpoint store Valley reads the emulated workload's records from (a real S3 server).
s3_root=$scratch/s3
rm -rf "$s3_root" && mkdir -p "$s3_root/live"
s3_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export AWS_ACCESS_KEY_ID=valleylive AWS_SECRET_ACCESS_KEY=valley-live-secret AWS_REGION=us-east-1 AWS_ENDPOINT_URL=http://127.0.0.1:$s3_port
.valley/bin/versitygw --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --port "127.0.0.1:$s3_port" posix --nometa "$s3_root" \
  > "$scratch/versitygw.log" 2>&1 < /dev/null &
pids+=($!)


run_kueue() { # slice-dir sim-args...
  local dir=$1 ns=live-kueue; shift
  delete_namespace $ns
  K create namespace $ns >/dev/null
  tests/cluster/cluster.sh kueue-up >/dev/null
  build/bin/valley-live kueue-objects "$@" --fleet $fleet --namespace $ns | K apply -f - >/dev/null
  setsid .valley/bin/mpi-operator --kubeConfig "$scratch/mpi-operator.kubeconfig" --lock-namespace=valley-live --monitoring-port=0 \
    --kube-api-qps=500 --kube-api-burst=1000 > "$dir/mpi-operator.log" 2>&1 < /dev/null &
  local mpiop=$!
  pids+=($mpiop)
  wait_ready mpi-operator $mpiop "$dir/mpi-operator.log"
  build/bin/valley-live run "$@" --system kueue --kubeconfig .valley/kubeconfig --namespace $ns --fleet $fleet \
    --compression "$compression" --horizon-hours "$horizon" --out "$dir" > /dev/null 2> "$dir/kueue.log" ||
    { log "the Kueue run failed:"; tail -20 "$dir/kueue.log" >&2; return 1; }
  delete_namespace $ns
  stop_pid $mpiop
  K delete clusterqueue live --ignore-not-found >/dev/null
  tests/cluster/cluster.sh kueue-down >/dev/null
}

run_valley() { # slice-dir sim-args...
  local dir=$1 ns=live-valley; shift
  delete_namespace $ns
  K create namespace $ns >/dev/null
  K -n $ns create secret generic live-store --from-literal=AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
    --from-literal=AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" --from-literal=AWS_REGION="$AWS_REGION" \
    --from-literal=AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL" >/dev/null
  K apply -f "$dir/policy-operator.json" >/dev/null
  # The operator's own timers, compressed like the trace: a resize interval of 5 trace minutes, the
  # planner's aging step of 10; records read as soon as they are written.
  setsid build/bin/valley-operator --kubeconfig "$scratch/valley-operator.kubeconfig" --leader-elect-namespace=valley-live \
    --namespace=$ns --node-selector=valley.dev/fleet=$fleet --pricing-policy=live --http-bind-address=127.0.0.1:18090 \
    --planner-min-resize-interval=$((300 * 1000 / compression))ms --planner-aging-step=$((600 * 1000 / compression))ms \
    --checkpoint-poll-interval=1s > "$dir/valley-operator.log" 2>&1 < /dev/null &
  local op=$!
  pids+=($op)
  wait_ready valley $op "$dir/valley-operator.log" 18090
  build/bin/valley-live run "$@" --system valley --kubeconfig .valley/kubeconfig --namespace $ns --fleet $fleet \
    --compression "$compression" --horizon-hours "$horizon" --out "$dir" \
    --checkpoint-prefix s3://live/$ns/ --checkpoint-secret live-store > /dev/null 2> "$dir/valley.log" ||
    { log "the Valley run failed:"; tail -20 "$dir/valley.log" >&2; return 1; }
  delete_namespace $ns  # with the operator still up: it releases its pods' finalizers
  stop_pid $op
}

while read -r name trace from to extra; do
  [ -n "$name" ] || continue
  dir=$out/$name
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  build/bin/valley-live slice --trace "$trace" --from-hour "$from" --to-hour "$to" --max-jobs "$max_jobs" $extra \
    --cluster "$cluster" --workload "$workload" --profiles "$data/pollux-adaptdl" --pricing deploy/samples/pricingpolicy-default.yaml \
    --max-duration-hours "$max_hours" --write "$dir/slice.csv" 2> "$dir/slice.log"
  build/bin/valley-live policy --pricing deploy/samples/pricingpolicy-default.yaml --compression "$compression" \
    --flat "$dir/policy.json" --operator "$dir/policy-operator.json"
  python3 - "$dir/policy-operator.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["metadata"] = {"name": "live"}; json.dump(p, open(sys.argv[1], "w"), indent=2)
PY
  args=(--trace "$dir/slice.csv" --cluster "$cluster" --spot "$spot" --workload "$workload" --profiles "$data/pollux-adaptdl"
        --pricing "$dir/policy.json")
  log "$name: $(($(wc -l < "$dir/slice.csv") - 1)) jobs, one trace hour in $((3600 / compression)) s"
  for system in $systems; do
    start=$(date +%s)
    "run_$system" "$dir" "${args[@]}"
    log "$name: $system ran in $(( $(date +%s) - start )) s: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["totalCost"], "USD, mean JCT", d["meanJctHours"], "h,", d["jobsFinished"], "finished,", d["jobsUnfinished"], "unfinished")' "$dir/$system.json")"
  done
  # Kueue as it runs MPIJobs (--peer kueue), and backfill as the sweeps' baseline.
  build/bin/valley-sim "${args[@]}" --policy backfill,valley --peer kueue --no-bound --out "$dir/sim" --jobs-out > /dev/null 2> "$dir/sim.log"
  build/bin/valley-sim "${args[@]}" --policy backfill --no-bound --out "$dir/sim-backfill" --jobs-out > /dev/null 2>> "$dir/sim.log"
done <<< "$slices"

python3 bench/live/report.py "$out" > "$out/live.md"
cat "$out/live.md"
