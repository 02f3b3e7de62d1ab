#!/usr/bin/env bash
# `make demo`: Valley on the local cluster, told as a story. The cluster and the operator are left
# running (`make cluster-down` stops both). Grows with each feature.
set -euo pipefail
cd "$(dirname "$0")/.."
K() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ns=valley-demo

say "The local cluster: real kube-apiserver, etcd, scheduler and controller-manager; GPU nodes simulated by kwok"
build/bin/valleyctl --kubeconfig .valley/kubeconfig version
K get nodes -o custom-columns='NODE:.metadata.name,NVIDIA:.status.allocatable.nvidia\.com/gpu,AMD:.status.allocatable.amd\.com/gpu,MIG-1g.10gb:.status.allocatable.nvidia\.com/mig-1g\.10gb,SHARED:.status.allocatable.nvidia\.com/gpu\.shared,CAPACITY:.metadata.labels.karpenter\.sh/capacity-type,ZONE:.metadata.labels.topology\.kubernetes\.io/zone'

say "Valley's operator starts, wins leader election and watches TrainingTasks"
scripts/operator.sh stop
# A short resize interval so the demo shows a task growing back within a minute (default 5m).
VALLEY_OPERATOR_ARGS="--planner-min-resize-interval=10s" scripts/operator.sh start
for _ in $(seq 1 50); do grep -q "caches synced" .valley/logs/operator.log 2>/dev/null && break; sleep 0.2; done
grep -E "became the leader|caches synced" .valley/logs/operator.log | tail -2 | cut -c31-

say "What would the seed platform's example cost? (valleyctl estimate, nothing submitted)"
K apply -f deploy/samples/pricingpolicy-default.yaml >/dev/null
build/bin/valleyctl --kubeconfig .valley/kubeconfig estimate deploy/examples/seed/training1.yaml | sed 's/^/  /'

say "Three tasks are applied (deploy/samples/): an elastic MPI job, the seed platform's example, a single pod on a MIG slice"
K delete namespace $ns --ignore-not-found --wait=true >/dev/null
K create namespace $ns >/dev/null
for _ in $(seq 1 50); do K -n $ns get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done
K apply -f deploy/samples/
echo
echo "A bad spec is refused by the API server before Valley sees it:"
K -n $ns apply -f - <<'YAML' 2>&1 | sed 's/^/  /' || true
apiVersion: valley.dev/v1alpha1
kind: TrainingTask
metadata: {name: broken}
spec: {replicas: {min: 8, max: 2}, master: {image: l}, worker: {image: w, gpus: "1.5"}}
YAML

say "What happens to them (kubectl get tt, as it changes)"
echo "(resnet50 asks for 4-8 GPUs and gets 8; training1 may use AMD and wants it cheap: the 16 AMD GPUs;"
echo " at 12s an urgent priority-90 task needing 32 NVIDIA GPUs arrives: resnet50 shrinks for it, then grows back)"
last=""
start=$SECONDS
urgent=""
while [ $((SECONDS - start)) -lt 150 ]; do
  if [ -z "$urgent" ] && [ $((SECONDS - start)) -ge 12 ]; then
    urgent=yes
    echo ">>> kubectl apply urgent (priority 90, 32 workers, runs 15s)"
    K -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: valley.dev/v1alpha1
kind: TrainingTask
metadata: {name: urgent}
spec:
  priority: 90
  replicas: {min: 32, max: 32}
  master: {image: ghcr.io/valley-dev/examples/mpi-train:0.1, template: {metadata: {annotations: {valley.dev/sim-run-time: 15s}}}}
  worker: {image: ghcr.io/valley-dev/examples/mpi-train:0.1, gpus: "1"}
YAML
  fi
  now=$(K -n $ns get tt --no-headers -o custom-columns='N:.metadata.name,P:.status.phase,W:.status.replicas,E:.status.epoch' 2>/dev/null | sort)
  if [ "$now" != "$last" ]; then
    printf -- '--- after %ss\n' $((SECONDS - start))
    K -n $ns get tt -o wide
    last=$now
  fi
  phase=$(K -n $ns get tt resnet50 -o jsonpath='{.status.phase}' 2>/dev/null || true)
  single=$(K -n $ns get tt finetune-small -o jsonpath='{.status.phase}' 2>/dev/null || true)
  urgent_phase=$(K -n $ns get tt urgent -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [ "$phase" = Succeeded ] && [ "$single" = Failed ] && [ "$urgent_phase" = Succeeded ] && break
  sleep 1
done

say "resnet50's story in its Events, and its status"
K -n $ns get events.events.k8s.io --field-selector regarding.name=resnet50 --sort-by=.metadata.creationTimestamp -o custom-columns='REASON:.reason,NOTE:.note' 2>/dev/null
K -n $ns get tt resnet50 -o jsonpath='restarts: {.status.restarts}{"\n"}last resize: {.status.lastResizeReason}{"\n"}'
say "training1 (amdSupport + reduceCost) runs on the AMD nodes"
K -n $ns get pods -l valley.dev/task=training1,valley.dev/role=worker -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,IMAGE:.spec.containers[0].image' | head -5
echo "..."
say "finetune-small: exit code 137 is retryable; it was retried once (backoffLimit 1), then failed"
K -n $ns get tt finetune-small -o jsonpath='{.status.reason}: {.status.message}{"\n"}'

say "What each task cost (status.cost: estimate before, accrued while running, final at the end)"
K -n $ns get tt -o custom-columns='TASK:.metadata.name,PHASE:.status.phase,ESTIMATED:.status.cost.estimated,ACCRUED:.status.cost.accrued,FINAL:.status.cost.final,CURRENCY:.status.cost.currency,GPU-HOURS:.status.cost.breakdown.gpuHours'

say "Done. The cluster and the operator are still up:"
echo "  .valley/bin/kubectl --kubeconfig .valley/kubeconfig -n $ns get tt"
echo "  make cluster-down    # stops the operator and the cluster"
