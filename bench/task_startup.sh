#!/usr/bin/env bash
# Time from `kubectl apply` of a 1 launcher + N worker TrainingTask to all its pods Running and the
# task Running, on the local cluster with the operator running (started here if it is not).
#   bench/task_startup.sh [workers]   prints one JSON line
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${1:-16}
K() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
scripts/operator.sh status >/dev/null 2>&1 || { scripts/operator.sh start >/dev/null; sleep 2; }
ns=bench-startup-$$
K create namespace $ns >/dev/null
until K -n $ns get serviceaccount default >/dev/null 2>&1; do sleep 0.1; done
start=$(date +%s.%N)
K -n $ns apply -f - >/dev/null <<YAML
apiVersion: valley.dev/v1beta1
kind: TrainingTask
metadata: {name: startup}
spec:
  replicas: {min: $workers, max: $workers}
  master: {image: valley.dev/bench:1}
  worker: {image: valley.dev/bench:1, gpus: "1"}
YAML
pods_at="" task_at=""
while :; do
  now=$(date +%s.%N)
  running=$(K -n $ns get pods --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l)
  [ -z "$pods_at" ] && [ "$running" -eq $((workers + 1)) ] && pods_at=$now
  [ -z "$task_at" ] && [ "$(K -n $ns get tt startup -o jsonpath='{.status.phase}')" = Running ] && task_at=$now
  [ -n "$pods_at" ] && [ -n "$task_at" ] && break
  if (( $(echo "$now - $start > 120" | bc) )); then echo "timed out" >&2; break; fi
  sleep 0.05
done
K delete namespace $ns --wait=true --timeout=120s >/dev/null  # frees its GPUs for the next run
printf '{"benchmark":"task_startup","workers":%d,"pods":%d,"seconds_to_all_pods_running":%.2f,"seconds_to_task_running":%.2f}\n' \
  "$workers" $((workers + 1)) "$(echo "${pods_at:-0} - $start" | bc)" "$(echo "${task_at:-0} - $start" | bc)"
