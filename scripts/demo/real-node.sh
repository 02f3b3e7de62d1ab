#!/usr/bin/env bash
# The demo's real part (scripts/demo.sh): one MPI task in real containers on the real node
# (tests/cluster/node.bash), when this host can run it. Its data set comes in from a local S3 store
# (versitygw on the node's bridge), a spot notice makes valley-train checkpoint on SIGTERM, the task
# resumes from that step, and its model and Valley's report go out to the store. Everything printed
# is read back from the task's status, its pods' logs and the store. Without a real node it says why.
set -euo pipefail
cd "$(dirname "$0")/../.."
K() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
V() { build/bin/valleyctl --kubeconfig .valley/kubeconfig "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ns=valley-demo-real
node=valley-node-0
store_ip=10.244.0.1  # node.bash: the node's address on its bridge, which the pods reach
port=17071

say "A real MPI task on a real node: containerd and kubelet on this machine, real pods, real mpirun"
# What it builds the first time (its Go components) is said as it goes rather than waited out in
# silence; builds the demo started in the background are waited for (they hold locks).
VALLEY_BUILD_DIR="$PWD/build" VALLEY_SECOND_NODE=0 tests/cluster/cluster.sh node-up > .valley/logs/demo-node-up.log 2>&1 &
up=$!
tail -n +1 -f --pid=$up .valley/logs/demo-node-up.log 2>/dev/null | grep --line-buffered -E "^(building|built|waiting for|build_image:) " |
  sed -u 's/^/  /' &
progress=$!
# A build can take minutes without a line: how long it has been, every minute.
(started=$SECONDS; while sleep 60; kill -0 $up 2>/dev/null; do echo "  (the real node: $((SECONDS - started)) s so far)"; done) &
ticks=$!
up_rc=0
wait $up || up_rc=$?
wait $progress || true
kill $ticks 2>/dev/null || true
if [ $up_rc -ne 0 ]; then
  echo "  No real node on this host: node-up failed (the last lines of .valley/logs/demo-node-up.log):"
  tail -3 .valley/logs/demo-node-up.log | sed 's/^/    /'
  echo "  Everything above ran on kwok's simulated nodes only."
  exit 0
fi
grep "real node" .valley/logs/demo-node-up.log | tail -1 | sed 's/^/  /'
echo "  (its 2 GPUs are simulated: an extended resource with no device behind it; this machine has no GPU)"

pkill -f "[v]ersitygw --access valley-real" 2>/dev/null || true
rm -rf .valley/s3-real && mkdir -p .valley/s3-real/checkpoints
setsid .valley/bin/versitygw --access valley-real --secret valley-real-secret --port $store_ip:$port posix --nometa \
  "$PWD/.valley/s3-real" > .valley/logs/versitygw-real.log 2>&1 < /dev/null &
export AWS_ACCESS_KEY_ID=valley-real AWS_SECRET_ACCESS_KEY=valley-real-secret AWS_ENDPOINT_URL=http://$store_ip:$port AWS_REGION=us-east-1
scripts/operator.sh release $ns
K delete namespace $ns --ignore-not-found --wait=true >/dev/null
K create namespace $ns >/dev/null
K label namespace $ns valley.dev/demo=true >/dev/null  # what make demo-clean removes
for _ in $(seq 1 50); do K -n $ns get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done
K -n $ns create secret generic s3 --from-literal=AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID \
  --from-literal=AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY --from-literal=AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL >/dev/null
# A data set in the store, uploaded with the same valley-io the pods use.
data=$(mktemp -d)
head -c 2000000 /dev/urandom > "$data/shard-0.bin"; head -c 1000000 /dev/urandom > "$data/shard-1.bin"
uploaded=""
for _ in $(seq 1 50); do
  build/bin/valley-io keep --now --attempts 1 --uri s3://checkpoints/$ns/data --dir "$data" > /dev/null 2>&1 && uploaded=yes && break
  sleep 0.2
done
rm -rf "$data"
if [ -z "$uploaded" ]; then
  echo "  the S3 store on the node's bridge did not take the data set (.valley/logs/versitygw-real.log):"
  tail -3 .valley/logs/versitygw-real.log | sed 's/^/    /'
  exit 0
fi
echo "  data set: s3://checkpoints/$ns/data (2 files, 3.0 MB) in versitygw at $AWS_ENDPOINT_URL"

K -n $ns apply -f - > /dev/null <<YAML
apiVersion: valley.dev/v1beta1
kind: TrainingTask
metadata: {name: real-train}
spec:
  replicas: {min: 2, max: 2}
  master:
    image: valley.local/valley-train:dev
    command: [sh, -c, 'exec mpirun -np "\$VALLEY_WORLD_SIZE" -x VALLEY_CHECKPOINT_URI -x VALLEY_EPOCH -x VALLEY_RESUME -x VALLEY_DATA_DIR -x AWS_ACCESS_KEY_ID -x AWS_SECRET_ACCESS_KEY -x AWS_REGION -x AWS_ENDPOINT_URL valley-train --steps 6000 --checkpoint-every 2000 --step-delay-ms 8 --output /valley/output/model.txt']
    template: {spec: {nodeSelector: {valley.dev/real-node: "true"}, tolerations: [{key: valley.dev/real-node, operator: Exists, effect: NoSchedule}], containers: [{name: main, imagePullPolicy: Never}]}}
  worker:
    image: valley.local/valley-train:dev
    gpus: "1"
    slotsPerWorker: 2
    template: {spec: {nodeSelector: {valley.dev/real-node: "true"}, tolerations: [{key: valley.dev/real-node, operator: Exists, effect: NoSchedule}], containers: [{name: main, imagePullPolicy: Never}]}}
  data: {uri: s3://checkpoints/$ns/data}
  checkpoint: {uri: s3://checkpoints/$ns/ckpt, secretRef: {name: s3}, gracePeriodSeconds: 30}
YAML
echo "  applied real-train: 2 workers x 2 ranks of valley-train (allreduce SGD), data in, checkpoints and outputs in S3"
phase() { K -n $ns get tt real-train -o jsonpath="{.status.$1}" 2>/dev/null || true; }
for _ in $(seq 1 180); do [ "$(phase phase)" = Running ] && break; sleep 1; done
echo "  $(phase phase) after the workers' valley-data init containers fetched the data: $(K -n $ns get pods -l valley.dev/task=real-train -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}, {end}')"
sleep 12
echo ">>> the demo puts a spot termination notice on $node (taint aws-node-termination-handler/spot-itn)"
K taint node $node aws-node-termination-handler/spot-itn=true:NoSchedule > /dev/null
for _ in $(seq 1 60); do case "$(phase phase)" in Restarting|Pending) break ;; esac; sleep 1; done
for _ in $(seq 1 60); do [ -n "$(phase lastDisruption.checkpointStep)" ] && break; sleep 1; done
step=$(phase lastDisruption.checkpointStep)
echo "  Valley: $(phase phase) ($(phase lastDisruption.cause): $(phase lastDisruption.message))${step:+; checkpoint at step $step}"
echo ">>> the notice is withdrawn (this one-node cluster has nowhere else to go)"
K taint node $node aws-node-termination-handler/spot-itn- > /dev/null
for _ in $(seq 1 300); do [ "$(phase phase)" = Succeeded ] || [ "$(phase phase)" = Failed ] && break; sleep 1; done
for _ in $(seq 1 60); do [ -n "$(phase outputs.time)" ] && break; sleep 1; done

say "What real-train did (its launcher's log, its status, the store)"
K -n $ns logs real-train-launcher 2>/dev/null | grep -E "^data:|resumed from step|done step" | sed 's/^/  launcher: /' || true
echo "  phase $(phase phase); epochs $(phase epoch); disruptions $(phase restarts.disruptions); recovered in $(phase lastDisruption.recoverySeconds)s"
V outputs real-train -n $ns | sed 's/^/  /'
V report real-train -n $ns --file .valley/real-train-report.html | sed 's/^/  /'
V cost -n $ns | sed 's/^/  /'
echo "  (the real node stays up: 'make node-down' removes it, 'make cluster-down' everything)"
