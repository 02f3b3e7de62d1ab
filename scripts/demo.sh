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

# The real node's Go builds (its last part) go on in the background while the kwok story is told;
# a machine that built them before has them cached and this ends at once.
setsid nice -n 10 tests/cluster/build-binaries.sh --node > .valley/logs/demo-node-binaries.log 2>&1 < /dev/null &

say "Valley's operator starts, wins leader election and watches TrainingTasks"
scripts/operator.sh stop
# A short resize interval so the demo shows a task growing back within a minute (default 5m).
# valley-io (data in, outputs out) from the operator image the real node builds (no registry here).
VALLEY_OPERATOR_ARGS="--planner-min-resize-interval=10s --checkpoint-poll-interval=2s --cost-interval=5s --io-image=localhost/valley-operator:dev" \
  scripts/operator.sh start
for _ in $(seq 1 50); do grep -q "caches synced" .valley/logs/operator.log 2>/dev/null && break; sleep 0.2; done
grep -E "became the leader|caches synced" .valley/logs/operator.log | tail -2 | cut -c31-

say "An S3-compatible store for checkpoints (versitygw on loopback, SigV4-authenticated)"
pkill -f "[v]ersitygw --access valley-demo" 2>/dev/null || true
rm -rf .valley/s3 && mkdir -p .valley/s3/checkpoints .valley/logs
setsid .valley/bin/versitygw --access valley-demo --secret valley-demo-secret --port 127.0.0.1:17070 posix --nometa .valley/s3 \
  >.valley/logs/versitygw.log 2>&1 < /dev/null &
echo "  s3://checkpoints at http://127.0.0.1:17070 (log .valley/logs/versitygw.log)"

say "Prices (deploy/samples/pricingpolicy-default.yaml: USD, A100 2.40/GPU-h on demand, 0.95 spot; Asia/Shanghai time-of-use electricity)"
K apply -f deploy/samples/pricingpolicy-default.yaml
K label pricingpolicy default valley.dev/demo=true --overwrite >/dev/null
K get pp

say "What would the seed platform's example cost? (valleyctl estimate, nothing submitted)"
build/bin/valleyctl --kubeconfig .valley/kubeconfig estimate deploy/examples/seed/training1.yaml | sed 's/^/  /'

say "Tasks are submitted: the seed example in its own format (valleyctl submit), an elastic MPI job, a spot MPI job, a single pod on a GPU slice"
scripts/operator.sh release $ns  # a previous run's pods, should no operator have run since
K delete namespace $ns --ignore-not-found --wait=true >/dev/null
K create namespace $ns >/dev/null
K label namespace $ns valley.dev/demo=true >/dev/null  # what make demo-clean removes
for _ in $(seq 1 50); do K -n $ns get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done
K -n $ns create secret generic demo-s3 --from-literal=AWS_ACCESS_KEY_ID=valley-demo \
  --from-literal=AWS_SECRET_ACCESS_KEY=valley-demo-secret --from-literal=AWS_ENDPOINT_URL=http://127.0.0.1:17070 >/dev/null
t0=$(date -u +%s)
build/bin/valleyctl --kubeconfig .valley/kubeconfig submit deploy/examples/seed/training1.yaml -n $ns
K apply -f scripts/demo/resnet50-mpi.yaml -f scripts/demo/spot-train-mpi.yaml -f scripts/demo/notebook-single.yaml
echo
echo "A bad spec is refused by the API server before Valley sees it:"
K -n $ns apply -f - <<'YAML' 2>&1 | sed 's/^/  /' || true
apiVersion: valley.dev/v1beta1
kind: TrainingTask
metadata: {name: broken}
spec: {replicas: {min: 8, max: 2}, master: {image: l}, worker: {image: w, gpus: "1.5"}}
YAML

say "What happens to them (kubectl get tt, as it changes)"
echo "(What the demo itself does: at 12s it applies 'urgent', priority 90, 16 workers pinned to on-demand"
echo " nodes; at 30s it puts a spot termination notice on a node spot-train runs on. What Valley does"
echo " about it is read back from its Events and status afterwards.)"
last=""
start=$SECONDS
urgent=""
notice=""
while [ $((SECONDS - start)) -lt 150 ]; do
  if [ -z "$notice" ] && [ $((SECONDS - start)) -ge 30 ]; then
    notice=yes
    # What valley-train would have written at its last periodic checkpoint.
    mkdir -p .valley/s3/checkpoints/$ns/spot-train
    printf '{"step":4200,"time":"%s","epoch":1,"worldSize":4,"object":"ckpt-00004200.bin"}' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
      > .valley/s3/checkpoints/$ns/spot-train/latest.json
    sleep 3
    victim=$(K -n $ns get pods -l valley.dev/task=spot-train,valley.dev/role=worker -o jsonpath='{.items[0].spec.nodeName}' 2>/dev/null || true)
    if [ -n "$victim" ]; then
      echo ">>> spot termination notice on $victim (kubectl taint node $victim aws-node-termination-handler/spot-itn=true:NoSchedule)"
      K taint node "$victim" aws-node-termination-handler/spot-itn=true:NoSchedule >/dev/null
    fi
  fi
  if [ -z "$urgent" ] && [ $((SECONDS - start)) -ge 12 ]; then
    urgent=yes
    echo ">>> kubectl apply urgent (priority 90, 16 workers on on-demand nodes, runs 15s)"
    K -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: valley.dev/v1beta1
kind: TrainingTask
metadata: {name: urgent}
spec:
  priority: 90
  replicas: {min: 16, max: 16}
  master: {image: ghcr.io/valley-dev/examples/mpi-train:0.1, template: {metadata: {annotations: {sim.valley.dev/run-time: 15s}}}}
  worker:
    image: ghcr.io/valley-dev/examples/mpi-train:0.1
    gpus: "1"
    template: {spec: {nodeSelector: {karpenter.sh/capacity-type: on-demand}}}
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
  recovered=$(K -n $ns get tt spot-train -o jsonpath='{.status.lastDisruption.recoverySeconds}' 2>/dev/null || true)
  [ "$phase" = Succeeded ] && [ "$single" = Failed ] && [ "$urgent_phase" = Succeeded ] && [ -n "$recovered" ] && break
  sleep 1
done

say "What happened, as the operator reported it (every TrainingTask Event, in order; seconds after the first was submitted)"
K -n $ns get events.events.k8s.io -o json | jq -r --argjson t0 "$t0" '
  .items | map(select(.regarding.kind == "TrainingTask"))
  | sort_by(.metadata.creationTimestamp) | .[]
  | "  \(((.metadata.creationTimestamp | fromdateiso8601) - $t0) | tostring | (" " * (4 - length)) + .)s  \(.regarding.name)  \(.reason): \(.note)"'

say "In short (each line from the tasks' status and Events; a line says so when something did not happen)"
events_of() { K -n $ns get events.events.k8s.io --field-selector "regarding.name=$1,reason=$2" -o json | jq '.items | map(.series.count // .deprecatedCount // 1) | add // 0'; }
for t in resnet50 spot-train training1 urgent finetune-small; do
  st=$(K -n $ns get tt "$t" -o json 2>/dev/null | jq -c '.status // {}') || continue
  phase=$(jq -r '.phase // "Pending"' <<<"$st")
  resized=$(events_of "$t" Resized); preempted=$(jq -r '.restarts.preemptions // 0' <<<"$st")
  pools=$(K -n $ns get pods -l "valley.dev/task=$t,valley.dev/role=worker" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null |
    sed '/^$/d' | while read -r n; do K get node "$n" -o jsonpath='{.metadata.labels.valley\.dev/pool}{"\n"}'; done | sort | uniq -c |
    awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
  line="$t: $phase"
  [ -n "$pools" ] && line+="; workers now on $pools"
  [ "$resized" -gt 0 ] && line+="; resized $resized time(s)" || line+="; never resized"
  [ "$preempted" -gt 0 ] && line+="; preempted $preempted time(s)"
  disruption=$(jq -r 'if .lastDisruption then "lost \(.lastDisruption.node // "a node") (\(.lastDisruption.cause)), running again after \(.lastDisruption.recoverySeconds // "?")s from checkpoint step \(.lastDisruption.checkpointStep // "none")" else empty end' <<<"$st")
  [ -n "$disruption" ] && line+="; $disruption"
  case "$phase" in Succeeded|Failed|Pending|Suspended) line+=" ($(jq -r '"\(.reason // ""): \(.message // "")"' <<<"$st"))" ;; esac
  staged=$(K -n $ns get tt "$t" -o json 2>/dev/null | jq -r '.spec.worker.template.metadata.annotations["sim.valley.dev/exit-code"] // empty')
  [ -n "$staged" ] && line+=" [a staged failure: kwok ends its pod with exit code $staged on every try, by a template annotation]"
  echo "  $line"
done
[ -n "${victim:-}" ] && K taint node "$victim" aws-node-termination-handler/spot-itn- >/dev/null && echo "(the notice on $victim is withdrawn now: it is back for whatever wants it)"

say "spot-train in detail (valleyctl describe)"
build/bin/valleyctl --kubeconfig .valley/kubeconfig describe spot-train -n $ns | grep -E "Phase|Workers|Placement|Checkpoint|Restarts|Disruption|Cost|GPU:|estimate:"

say "A GPU fails: the node's health tooling marks it, and the task on it checkpoints and moves"
echo "(What the demo does: on a node where spot-train runs, it does what NVIDIA NVSentinel's fault quarantine"
echo " does after an XID 79: it taints the node nvidia.com/gpu-xid-error=true and sets the condition"
echo " SysLogsXIDError. Valley's reaction is read back from spot-train's status and Events.)"
printf '{"step":6100,"time":"%s","epoch":2,"worldSize":2,"object":"ckpt-00006100.bin"}' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  > .valley/s3/checkpoints/$ns/spot-train/latest.json
sleep 2
faulty=$(K -n $ns get pods -l valley.dev/task=spot-train,valley.dev/role=worker -o jsonpath='{.items[0].spec.nodeName}' 2>/dev/null || true)
if [ -n "$faulty" ] && [ "$(K -n $ns get tt spot-train -o jsonpath='{.status.phase}')" = Running ]; then
  before=$(K -n $ns get tt spot-train -o jsonpath='{.status.lastDisruption.time}')
  echo ">>> GPU fault on $faulty (taint nvidia.com/gpu-xid-error=true:NoSchedule, condition SysLogsXIDError=True)"
  K patch node "$faulty" --subresource=status --type=json -p '[{"op":"add","path":"/status/conditions/-","value":{"type":"SysLogsXIDError","status":"True","reason":"XID79","message":"[79] GPU has fallen off the bus on GPU 3 - RecommendedAction: RESTART_BM","lastHeartbeatTime":"'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'","lastTransitionTime":"'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'"}}]' >/dev/null 2>&1 || true
  K taint node "$faulty" nvidia.com/gpu-xid-error=true:NoSchedule >/dev/null
  for _ in $(seq 1 60); do
    st=$(K -n $ns get tt spot-train -o json | jq -c '.status')
    [ "$(jq -r '.lastDisruption.time // ""' <<<"$st")" != "$before" ] && [ -n "$(jq -r '.lastDisruption.recoverySeconds // ""' <<<"$st")" ] && break
    sleep 1
  done
  jq -r '"  spot-train: \(.phase); lastDisruption: \(.lastDisruption.cause) on \(.lastDisruption.node): \(.lastDisruption.message)
  running again after \(.lastDisruption.recoverySeconds // "?")s from checkpoint step \(.lastDisruption.checkpointStep // "none"); failures counted: \(.restarts.failures // 0)"' <<<"$st"
  echo "  workers now on: $(K -n $ns get pods -l valley.dev/task=spot-train,valley.dev/role=worker -o jsonpath='{.items[*].spec.nodeName}')"
  K taint node "$faulty" nvidia.com/gpu-xid-error- >/dev/null
  K patch node "$faulty" --subresource=status -p '{"status":{"conditions":[{"type":"SysLogsXIDError","status":"False","reason":"Healthy","message":"GPU reset"}]}}' >/dev/null 2>&1 || true
  echo "(the taint and the condition on $faulty are cleared now, as remediation would after a GPU reset)"
else
  echo "  (spot-train is not running now: nothing to show)"
fi

say "What each task cost against its estimate (valleyctl cost: estimate made before it ran, what it spent, GPU-hours per pool)"
build/bin/valleyctl --kubeconfig .valley/kubeconfig cost -n $ns

say "valleyctl list"
build/bin/valleyctl --kubeconfig .valley/kubeconfig list -n $ns

say "Two teams on one cluster (Tenants): lab-a borrows lab-b's idle quota, and gives it back by shrinking when lab-b comes"
echo "(What the demo does: two Tenants, 8 on-demand NVIDIA GPUs guaranteed each; lab-a applies an elastic task"
echo " of 2-16 workers on the two a100-od nodes at priority 90 (speed over cost: it grows whenever GPUs are"
echo " free); once it runs, lab-b applies one of 8 at the default priority. What Valley does about it is read"
echo " back from status and Events.)"
K delete tenant lab-a lab-b --ignore-not-found >/dev/null
for team in lab-a lab-b; do
  scripts/operator.sh release valley-demo-$team
  K delete namespace valley-demo-$team --ignore-not-found --wait=true >/dev/null
  K create namespace valley-demo-$team >/dev/null
  K label namespace valley-demo-$team valley.dev/demo=true >/dev/null
done
team() {  # name, then more of its spec (flow style)
  K apply -f - <<YAML
apiVersion: valley.dev/v1beta1
kind: Tenant
metadata: {name: $1, labels: {valley.dev/demo: "true"}}
spec: {namespaces: [valley-demo-$1], quotas: [{pool: nvidia/on-demand, nominal: 8}], $2}
YAML
}
team lab-a "maxPriority: 90"
team lab-b 'budget: {amount: "50", period: Month, action: Wait}'
team_task() {  # namespace name min max run-time priority
  K -n "$1" apply -f - >/dev/null <<YAML
apiVersion: valley.dev/v1beta1
kind: TrainingTask
metadata: {name: $2}
spec:
  priority: $6
  replicas: {min: $3, max: $4}
  master: {image: ghcr.io/valley-dev/examples/mpi-train:0.1, template: {metadata: {annotations: {sim.valley.dev/run-time: $5}}}}
  worker: {image: ghcr.io/valley-dev/examples/mpi-train:0.1, gpus: "1", template: {spec: {nodeSelector: {valley.dev/pool: a100-od}}}}
YAML
}
replicas() { K -n "$1" get tt "$2" -o jsonpath='{.status.phase} {.status.replicas}' 2>/dev/null || true; }
team_task valley-demo-lab-a sweep 2 16 300s 90
for _ in $(seq 1 60); do [ "$(replicas valley-demo-lab-a sweep)" = "Running 16" ] && break; sleep 1; done
echo ">>> lab-a's sweep: $(replicas valley-demo-lab-a sweep) workers"
build/bin/valleyctl --kubeconfig .valley/kubeconfig tenants | sed 's/^/  /'
echo ">>> kubectl apply lab-b's finetune (8 workers, within lab-b's guaranteed 8)"
team_task valley-demo-lab-b finetune 8 8 60s 50
for _ in $(seq 1 60); do
  [ "$(replicas valley-demo-lab-b finetune)" = "Running 8" ] && [ "$(replicas valley-demo-lab-a sweep)" = "Running 8" ] && break
  sleep 1
done
sleep 3  # a Tenant's status follows within --tenant-interval
echo ">>> now: lab-a's sweep $(replicas valley-demo-lab-a sweep) workers, lab-b's finetune $(replicas valley-demo-lab-b finetune) workers"
build/bin/valleyctl --kubeconfig .valley/kubeconfig tenants | sed 's/^/  /'
echo "What Valley said about lab-a's sweep (its Events):"
K -n valley-demo-lab-a get events.events.k8s.io --field-selector regarding.name=sweep -o json |
  jq -r '.items | sort_by(.metadata.creationTimestamp) | .[] | "  \(.reason): \(.note)"' | grep -E "Admitted|Resizing|Resized|Preempted" || echo "  (no admission, resize or preemption Events)"
st=$(K -n valley-demo-lab-a get tt sweep -o json | jq -c '.status.restarts // {}')
echo "In short: lab-a's sweep was resized $(jq -r '.resizes // 0' <<<"$st") time(s) and preempted $(jq -r '.preemptions // 0' <<<"$st") time(s)."

scripts/demo/real-node.sh

say "Done. The cluster, the operator and the S3 store are still up:"
echo "  .valley/bin/kubectl --kubeconfig .valley/kubeconfig -n $ns get tt"
echo "  build/bin/valleyctl --kubeconfig .valley/kubeconfig describe spot-train -n $ns"
echo "  build/bin/valleyctl --kubeconfig .valley/kubeconfig tenants    # the two teams"
echo "  curl -s localhost:8080/metrics | grep ^valley_    # the operator's metrics"
echo "  make demo-clean      # removes what the demo left (its namespaces, Tenants and PricingPolicy); the cluster stays up"
echo "  make cluster-down    # stops the operator and the cluster"
