#!/usr/bin/env bash
# `make demo`: what Valley has to show on the local cluster today. The cluster is left running
# (`make cluster-down` stops it). Grows with each feature into the full story.
set -euo pipefail
cd "$(dirname "$0")/.."
K() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "The local cluster: real kube-apiserver, etcd, scheduler, controller-manager; GPU nodes simulated by kwok"
build/bin/valleyctl --kubeconfig .valley/kubeconfig version
K get nodes -o custom-columns='NODE:.metadata.name,NVIDIA:.status.allocatable.nvidia\.com/gpu,AMD:.status.allocatable.amd\.com/gpu,MIG-1g.10gb:.status.allocatable.nvidia\.com/mig-1g\.10gb,PRODUCT:.metadata.labels.nvidia\.com/gpu\.product,CAPACITY:.metadata.labels.karpenter\.sh/capacity-type,ZONE:.metadata.labels.topology\.kubernetes\.io/zone,READY:.status.conditions[?(@.type=="Ready")].status'

say "RBAC is enforced: a fresh service account may not list pods"
K create namespace valley-demo --dry-run=client -o yaml | K apply -f - >/dev/null
K -n valley-demo create serviceaccount demo-user --dry-run=client -o yaml | K apply -f - >/dev/null
echo "kubectl auth can-i list pods --as=system:serviceaccount:valley-demo:demo-user -> $(K auth can-i list pods -n valley-demo --as=system:serviceaccount:valley-demo:demo-user || true)"

say "A pod asking for 4 NVIDIA GPUs is scheduled by kube-scheduler onto a GPU node and runs"
K -n valley-demo delete pod gpu-hello --ignore-not-found --wait=true >/dev/null
K -n valley-demo apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: gpu-hello
  annotations: {valley.dev/sim-run-time: 5s}
spec:
  restartPolicy: Never
  containers:
  - name: train
    image: valley.dev/examples/hello:1
    resources: {limits: {nvidia.com/gpu: "4"}}
YAML
K -n valley-demo wait pod/gpu-hello --for=jsonpath='{.status.phase}'=Running --timeout=30s >/dev/null
K -n valley-demo get pod gpu-hello -o wide
echo "(its simulated run time is 5s)"
K -n valley-demo wait pod/gpu-hello --for=jsonpath='{.status.phase}'=Succeeded --timeout=30s >/dev/null
K -n valley-demo get pod gpu-hello

say "Done. The cluster is still up:"
echo "  .valley/bin/kubectl --kubeconfig .valley/kubeconfig get nodes"
echo "  make cluster-down    # stops it"
