# Kueue on the local control plane (sourced by cluster.sh), the live economics benchmark's peer
# (bench/live): Kueue v0.17's manager, built from its pinned module (bench/live/kueue), as a
# supervised host process beside the control plane, admitting the Kubeflow MPI Operator's MPIJobs.
#   cluster.sh kueue-up      build (cached) and start it: its CRDs, its own ClusterRole, ready
#   cluster.sh kueue-down    stop it (its queues and workloads stay: bench/live removes its own)
# It authenticates as the ServiceAccount kueue-system/kueue (a client certificate of that user) with
# the rules of Kueue's own manager ClusterRole from the same release. No webhook is registered with
# the API server (nothing routes to a host process from a Service): jobs are submitted suspended and
# labelled with their LocalQueue, which is what Kueue's mutating webhook would have made of them.
# Its manager reads its metrics certificate from a fixed path, /etc/kueue/metrics/certs, when it
# does not manage certificates itself (that needs its webhook Service): it runs in a private mount
# namespace whose /etc is an overlay holding a self-signed one, so the host's /etc is not touched.

KUEUE_MOD=$repo/bench/live/kueue
KUEUE_HEALTH_PORT=${VALLEY_KUEUE_HEALTH_PORT:-18081}
KUEUE_WEBHOOK_PORT=${VALLEY_KUEUE_WEBHOOK_PORT:-18443}
KUEUE_RUN=$RUN/kueue

kueue_manifests() { echo "$VALLEY_HOME/kueue-manifests"; }

kueue_healthy() { curl -sf "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz"; }

kueue_crds_established() {
  local n
  n=$(kubectl get crd clusterqueues.kueue.x-k8s.io localqueues.kueue.x-k8s.io resourceflavors.kueue.x-k8s.io \
      workloads.kueue.x-k8s.io -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Established")].status}{" "}{end}')
  [ "$n" = "True True True True " ]
}

# Its configuration: one replica (no leader election), no certificate management, MPIJobs only, and
# no visibility API server (an aggregated API the local API server has no route to).
kueue_write_config() {
  cat > "$KUEUE_RUN/config.yaml" <<YAML
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:$KUEUE_HEALTH_PORT"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $KUEUE_WEBHOOK_PORT, certDir: "$KUEUE_RUN/certs"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
manageJobsWithoutQueueName: false
clientConnection: {qps: 300, burst: 500}
featureGates: {VisibilityOnDemand: false}
integrations: {frameworks: ["kubeflow.org/mpijob"]}
YAML
}

# A self-signed serving certificate for its webhook server and its metrics server (neither is
# reached: no webhook configuration points at it, metrics are off; both refuse to start without one).
kueue_write_certs() {
  mkdir -p "$KUEUE_RUN/certs"
  [ -f "$KUEUE_RUN/certs/tls.crt" ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=kueue-webhook-service.kueue-system.svc" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$KUEUE_RUN/certs/tls.key" -out "$KUEUE_RUN/certs/tls.crt" 2>/dev/null
}

kueue_args() { echo --config="$KUEUE_RUN/config.yaml" --kubeconfig="$PKI/kueue.kubeconfig" --zap-log-level=${VALLEY_KUEUE_LOG_LEVEL:-info}; }

# The supervisor's wrapper for Kueue (runs_under): the command in a private mount namespace whose
# /etc holds /etc/kueue/metrics/certs.
in_kueue_etc() { # command...
  local ovl=$KUEUE_RUN/etc
  mkdir -p "$ovl"
  exec unshare --mount --propagation private bash -c '
    set -e
    ovl=$1 certs=$2; shift 2
    mount -t tmpfs tmpfs "$ovl"
    mkdir -p "$ovl/upper/kueue/metrics/certs" "$ovl/work"
    cp "$certs/tls.crt" "$certs/tls.key" "$ovl/upper/kueue/metrics/certs/"
    mount -t overlay overlay -o "lowerdir=/etc,upperdir=$ovl/upper,workdir=$ovl/work" /etc
    exec "$@"' _ "$ovl" "$KUEUE_RUN/certs" "$@"
}

cmd_kueue_up() {
  local start=$SECONDS f
  "$here/build-binaries.sh" --kueue
  running apiserver || die "the control plane is not up (cluster.sh up)"
  local manifests; manifests=$(kueue_manifests)
  for f in "$manifests"/crds/*.yaml; do kubectl apply --server-side --force-conflicts -f "$f" >/dev/null; done
  wait_for "Kueue's CRDs" kueue_crds_established
  kubectl apply -f "$KUEUE_MOD/rbac.yaml" >/dev/null
  # Kueue's own manager role of the pinned release, under the name rbac.yaml binds.
  sed 's/^  name: manager-role$/  name: kueue-manager-role/' "$manifests/role.yaml" | kubectl apply -f - >/dev/null
  make_cert kueue "/CN=system:serviceaccount:kueue-system:kueue"
  write_kubeconfig "$PKI/kueue.kubeconfig" kueue
  mkdir -p "$KUEUE_RUN"
  kueue_write_config
  kueue_write_certs
  start_component kueue
  wait_for kueue kueue_healthy
  log "Kueue ready in $((SECONDS - start))s"
}

cmd_kueue_down() {
  stop_component kueue
  rm -rf "$KUEUE_RUN"
}
