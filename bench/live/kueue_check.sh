#!/usr/bin/env bash
# The live benchmark's peer on the local cluster, checked (part of make bench-smoke): real Kueue
# (cluster.sh kueue-up) admits the Kubeflow MPI Operator's MPIJobs, submitted suspended and labelled
# with a LocalQueue, onto the default profile's kwok nodes by flavor order: the first onto spot, the
# next (spot's quota taken) onto on demand, an AMD one onto MI250X; the first's launcher ending
# finishes its workload and gives its quota back, which the next job takes. Leaves Kueue stopped and
# nothing of its own in the cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
ns=live-kueue-check
K() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
log() { echo "kueue-check: $*" >&2; }
fail() { echo "kueue-check: FAILED: $*" >&2; K -n $ns get workloads,pods -o wide >&2 || true; exit 1; }
mpiop=
cleanup() {
  [ -z "$mpiop" ] || kill "$mpiop" 2>/dev/null || true
  K delete namespace $ns --ignore-not-found --wait=false >/dev/null 2>&1 || true
  K delete clusterqueue live --ignore-not-found >/dev/null 2>&1 || true
  K delete resourceflavor a100-spot a100-od mi250x --ignore-not-found >/dev/null 2>&1 || true
  tests/cluster/cluster.sh kueue-down >/dev/null 2>&1 || true
}
trap cleanup EXIT
eventually() { # seconds command...
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.5; done
}

K delete namespace $ns --ignore-not-found >/dev/null  # an earlier run's, still going
tests/cluster/cluster.sh kueue-up
K apply --server-side --force-conflicts -f .valley/mpi-operator-manifests/kubeflow.org_mpijobs.yaml >/dev/null
K apply -f .valley/mpi-operator-manifests/cluster-role.yaml >/dev/null
K apply -f bench/live/kueue/queues-smoke.yaml >/dev/null
setsid .valley/bin/mpi-operator --kubeConfig .valley/kubeconfig --lock-namespace=$ns --monitoring-port=0 \
  > .valley/logs/kueue-check-mpi-operator.log 2>&1 < /dev/null &
mpiop=$!

submit() { # name resource gpus-per-worker
  K apply -f - >/dev/null <<YAML
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: $1, namespace: $ns, labels: {kueue.x-k8s.io/queue-name: live}}
spec:
  runPolicy: {suspend: true, cleanPodPolicy: Running}
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: launcher, image: valley.local/none:dev}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: worker, image: valley.local/none:dev, resources: {limits: {$2: $3}}}]}}
YAML
}
# The flavor Kueue admitted a job's workers with, once it has.
flavor_of() { K -n $ns get workloads -l kueue.x-k8s.io/job-uid="$(K -n $ns get mpijob "$1" -o jsonpath='{.metadata.uid}')" \
  -o jsonpath='{.items[0].status.admission.podSetAssignments[?(@.name=="worker")].flavors}'; }
# The nodes its workers are bound to, their capacity-type and GPU product labels.
workers_on() { local n; for n in $(K -n $ns get pods -l training.kubeflow.org/job-name="$1",training.kubeflow.org/job-role=worker \
  -o jsonpath='{.items[*].spec.nodeName}'); do K get node "$n" -o jsonpath='{.metadata.labels.karpenter\.sh/capacity-type}/{.metadata.labels.nvidia\.com/gpu\.product}{.metadata.labels.amd\.com/gpu\.product-name}{"\n"}'; done | sort -u; }
running_workers() { [ "$(K -n $ns get pods -l training.kubeflow.org/job-name="$1",training.kubeflow.org/job-role=worker \
  --field-selector=status.phase=Running -o name | wc -l)" -eq 2 ]; }
expect() { # job flavor node-labels
  eventually 60 running_workers "$1" || fail "$1: its two workers are not Running"
  local f n; f=$(flavor_of "$1"); n=$(workers_on "$1")
  [[ $f == *"\"$2\""* ]] || fail "$1: admitted with flavors $f, expected $2"
  [ "$n" = "$3" ] || fail "$1: workers on $n, expected $3"
  log "$1: admitted by Kueue with flavor $2, workers Running on $3 nodes"
}

submit first nvidia.com/gpu 8
expect first a100-spot spot/NVIDIA-A100-SXM4-80GB
submit second nvidia.com/gpu 8
expect second a100-od on-demand/NVIDIA-A100-SXM4-80GB
submit amd amd.com/gpu 8
expect amd mi250x on-demand/AMD-Instinct-MI250X
# The first job's launcher ends (kwok's run-time annotation): the MPIJob succeeds, Kueue finishes its
# workload and frees spot's quota for the next job.
K -n $ns annotate pods -l training.kubeflow.org/job-name=first,training.kubeflow.org/job-role=launcher sim.valley.dev/run-time=0s >/dev/null
finished() { [ "$(K -n $ns get workloads -l kueue.x-k8s.io/job-uid="$(K -n $ns get mpijob first -o jsonpath='{.metadata.uid}')" \
  -o jsonpath='{.items[0].status.conditions[?(@.type=="Finished")].status}')" = True ]; }
eventually 60 finished || fail "first: its launcher ended but Kueue did not finish its workload"
log "first: launcher Succeeded, workload Finished"
submit third nvidia.com/gpu 8
expect third a100-spot spot/NVIDIA-A100-SXM4-80GB
log "ok"
