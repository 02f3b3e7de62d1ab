# The autoscaled profile (sourced by cluster.sh): Karpenter with its kwok cloud provider
# (tests/cluster/karpenter) as a supervised host process beside the control plane, buying kwok
# nodes for pending pods from the NodePools of karpenter/nodepools.yaml and removing them when idle.
#   cluster.sh autoscaler-up      build (cached) and start it, apply its CRDs, RBAC and NodePools
#   cluster.sh autoscaler-down    delete the NodePools (their nodes go), stop it
# It authenticates as the ServiceAccount karpenter/karpenter (a client certificate of that user, so
# no token expires) with the rules of karpenter/rbac.yaml only.

KARPENTER_DIR=$here/karpenter
KARPENTER_METRICS_PORT=${VALLEY_KARPENTER_METRICS_PORT:-18000}
KARPENTER_HEALTH_PORT=${VALLEY_KARPENTER_HEALTH_PORT:-18001}

# What the supervisor exports before it starts Karpenter (it reads its settings from the environment).
karpenter_env() {
  export KUBECONFIG=$PKI/karpenter.kubeconfig SYSTEM_NAMESPACE=karpenter DISABLE_LEADER_ELECTION=true \
    INSTANCE_TYPES_FILE_PATH=$KARPENTER_DIR/instance-types.json LOG_LEVEL=${VALLEY_KARPENTER_LOG_LEVEL:-info} \
    METRICS_PORT=$KARPENTER_METRICS_PORT HEALTH_PROBE_PORT=$KARPENTER_HEALTH_PORT \
    BATCH_MAX_DURATION=10s BATCH_IDLE_DURATION=1s
}

karpenter_healthy() { curl -sf "http://127.0.0.1:$KARPENTER_HEALTH_PORT/healthz"; }

# The CRDs of the pinned release, from the Go module cache the build filled.
karpenter_crds() {
  local dir
  dir=$(cd "$here/clients" && go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter) || die "karpenter's module is not in the Go module cache"
  echo "$dir/pkg/apis/crds/karpenter.sh_nodepools.yaml" "$dir/pkg/apis/crds/karpenter.sh_nodeclaims.yaml" \
    "$dir/pkg/apis/crds/karpenter.sh_nodeoverlays.yaml" "$dir/kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml"
}

crds_established() {
  local n
  n=$(kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh kwoknodeclasses.karpenter.kwok.sh \
      -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Established")].status}{" "}{end}')
  [ "$n" = "True True True " ]
}

cmd_autoscaler_up() {
  local start=$SECONDS f
  "$here/build-binaries.sh" --autoscaler
  running apiserver || die "the control plane is not up (cluster.sh up)"
  for f in $(karpenter_crds); do kubectl apply --server-side --force-conflicts -f "$f" >/dev/null; done
  wait_for "Karpenter's CRDs" crds_established
  kubectl apply -f "$KARPENTER_DIR/rbac.yaml" >/dev/null
  make_cert karpenter "/CN=system:serviceaccount:karpenter:karpenter"
  write_kubeconfig "$PKI/karpenter.kubeconfig" karpenter
  start_component karpenter
  wait_for karpenter karpenter_healthy
  kubectl apply -f "$KARPENTER_DIR/nodepools.yaml" >/dev/null
  log "autoscaler ready in $((SECONDS - start))s: $(kubectl get nodepools --no-headers | wc -l) NodePools, nodes bought on demand"
}

nodeclaims_gone() { [ "$(kubectl get nodeclaims --no-headers 2>/dev/null | wc -l)" -eq 0 ]; }

cmd_autoscaler_down() {
  if running karpenter; then
    # Karpenter deletes what it bought once its NodePools go (their NodeClaims' finalizers).
    kubectl delete nodepools --all --wait=false >/dev/null 2>&1 || true
    local i
    for ((i = 0; i < 60; i++)); do nodeclaims_gone && break; sleep 1; done
    nodeclaims_gone || log "NodeClaims are left (kubectl get nodeclaims): Karpenter stops without removing them"
  fi
  stop_component karpenter
}
