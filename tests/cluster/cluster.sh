#!/usr/bin/env bash
# The local control plane Valley is tested on: real etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler of one pinned Kubernetes release, with GPU nodes simulated by kwok.
#
#   cluster.sh up                  start everything (idempotent); returns when all of it is ready
#   cluster.sh down                stop every process it started and wipe cluster state
#   cluster.sh status              which components run and answer
#   cluster.sh nodes PROFILE       make the kwok nodes exactly those of PROFILE (YAML, see profiles/)
#   cluster.sh fleets N [PROFILE]  besides them, N fleets e2e-1..e2e-N, each a copy of PROFILE's nodes
#                                  named <fleet>-<node>, labelled valley.dev/fleet (e2e's shards)
#   cluster.sh stop|start|restart COMPONENT   one of etcd, apiserver, controller-manager, scheduler, kwok
#   cluster.sh compact             compact etcd's history up to now (old resourceVersions expire)
#   cluster.sh node-up|node-down|node-status|node-diagnose   a real node (containerd, kubelet, CoreDNS; node.bash)
#   cluster.sh autoscaler-up|autoscaler-down   Karpenter buying kwok nodes (autoscaler.bash)
#   cluster.sh kueue-up|kueue-down             Kueue admitting MPIJobs (kueue.bash; bench/live's peer)
#
# State lives in $VALLEY_HOME (default: <repo>/.valley): bin/ (links into the build cache), pki/,
# kubeconfig (admin), etcd/, logs/, run/. The API server listens on 127.0.0.1 only, with TLS, client
# certificates, service-account tokens and RBAC authorization.
# VALLEY_KCM_ARGS and VALLEY_KWOK_ARGS add flags to kube-controller-manager and kwok when they start
# (bench/controlplane sets the node controller's grace and kwok's node lease for large clusters).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# Absolute, so supervisors can be found (and re-run) by their command line.
case $0 in /*) ;; *) exec "$here/$(basename "$0")" "$@" ;; esac
repo=$(cd "$here/../.." && pwd)
VALLEY_HOME=${VALLEY_HOME:-$repo/.valley}
BIN=$VALLEY_HOME/bin
PKI=$VALLEY_HOME/pki
LOGS=$VALLEY_HOME/logs
RUN=$VALLEY_HOME/run
KUBECONFIG_ADMIN=$VALLEY_HOME/kubeconfig
PROFILE=${VALLEY_PROFILE:-$here/profiles/default.yaml}

ETCD_PORT=${VALLEY_ETCD_PORT:-12379}
ETCD_PEER_PORT=${VALLEY_ETCD_PEER_PORT:-12380}
APISERVER_PORT=${VALLEY_APISERVER_PORT:-16443}
KCM_PORT=${VALLEY_KCM_PORT:-10257}
SCHEDULER_PORT=${VALLEY_SCHEDULER_PORT:-10259}
SERVICE_CIDR=10.96.0.0/16
READY_TIMEOUT=${VALLEY_READY_TIMEOUT:-90}

COMPONENTS=(etcd apiserver controller-manager scheduler kwok)
# shellcheck source=node.bash
. "$here/node.bash"
# shellcheck source=autoscaler.bash
. "$here/autoscaler.bash"
# shellcheck source=kueue.bash
. "$here/kueue.bash"

log() { echo "[cluster] $*" >&2; }
die() { echo "[cluster] error: $*" >&2; exit 1; }
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# ---------------------------------------------------------------------------------------------------
# Certificates and kubeconfigs (openssl; made once, reused while the CA exists)

make_cert() { # name subject [san]
  local name=$1 subject=$2 san=${3:-}
  [ -f "$PKI/$name.crt" ] && return 0
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subject" -out "$PKI/$name.csr" 2>/dev/null
  local ext="$PKI/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } > "$ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$ext"
}

write_kubeconfig() { # file user-cert-name
  local file=$1 cert=$2
  cat > "$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: valley-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $cert
  user:
    client-certificate: $PKI/$cert.crt
    client-key: $PKI/$cert.key
contexts:
- name: valley-local
  context: {cluster: valley-local, user: $cert}
current-context: valley-local
EOF
}

ensure_pki() {
  mkdir -p "$PKI"
  if [ ! -f "$PKI/ca.crt" ]; then
    log "creating certificates in $PKI"
    openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=valley-local-ca" -days 3650 -sha256 \
      -out "$PKI/ca.crt" 2>/dev/null
    rm -f "$PKI"/*.crt.old
    find "$PKI" -name '*.crt' ! -name ca.crt -delete
  fi
  make_cert apiserver "/CN=kube-apiserver" \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1"
  make_cert admin "/O=system:masters/CN=valley-admin"
  make_cert controller-manager "/CN=system:kube-controller-manager"
  make_cert scheduler "/CN=system:kube-scheduler"
  # kwok plays every kubelet; like the Node authorizer's kubelets it is a privileged node agent.
  make_cert kwok "/O=system:masters/CN=kwok"
  # How the API server reaches a real kubelet (logs, exec; node.bash) and is authorized by it.
  make_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  if [ ! -f "$PKI/sa.key" ]; then
    openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
  write_kubeconfig "$KUBECONFIG_ADMIN" admin
  write_kubeconfig "$PKI/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$PKI/scheduler.kubeconfig" scheduler
  write_kubeconfig "$PKI/kwok.kubeconfig" kwok
}

# ---------------------------------------------------------------------------------------------------
# Processes

pidfile() { echo "$RUN/$1.pid"; }
binary_of() {
  case $1 in
    etcd) echo etcd ;; apiserver) echo kube-apiserver ;; controller-manager) echo kube-controller-manager ;;
    scheduler) echo kube-scheduler ;; kwok) echo kwok ;;
    containerd|coredns|kubelet) echo "$1" ;; containerd-1|kubelet-1) echo "${1%-1}" ;; apiserver-proxy) echo socat ;; netpol) echo kube-router ;;
    dra-plugin) echo dra-example-kubeletplugin ;; karpenter) echo karpenter ;; kueue) echo kueue ;; *) die "unknown component $1" ;;
  esac
}
# What a component's command runs under, if anything (a function of its .bash file).
runs_under() { case $1 in kueue) echo in_kueue_etc ;; esac; }
running() { local p; p=$(cat "$(pidfile "$1")" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }

args_of() {
  case $1 in
    etcd) echo --name=valley --data-dir="$VALLEY_HOME/etcd" \
        --listen-client-urls=http://127.0.0.1:$ETCD_PORT --advertise-client-urls=http://127.0.0.1:$ETCD_PORT \
        --listen-peer-urls=http://127.0.0.1:$ETCD_PEER_PORT \
        --initial-advertise-peer-urls=http://127.0.0.1:$ETCD_PEER_PORT \
        --initial-cluster=valley=http://127.0.0.1:$ETCD_PEER_PORT \
        --listen-metrics-urls=http://127.0.0.1:$((ETCD_PORT + 2)) \
        --quota-backend-bytes=4294967296 --log-level=warn ;;
    apiserver) echo --etcd-servers=http://127.0.0.1:$ETCD_PORT \
        --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$APISERVER_PORT \
        --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
        --client-ca-file="$PKI/ca.crt" \
        --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
        --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
        --kubelet-preferred-address-types=InternalIP \
        --authorization-mode=RBAC \
        --enable-admission-plugins=OwnerReferencesPermissionEnforcement,PodSecurity \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
        --service-cluster-ip-range=$SERVICE_CIDR --allow-privileged=true \
        --endpoint-reconciler-type=none \
        --max-requests-inflight=1000 --max-mutating-requests-inflight=500 \
        --audit-policy-file="$here/audit-policy.yaml" --audit-log-path="$RUN/audit.log" \
        --audit-log-format=json --audit-log-maxsize=500 --audit-log-maxbackup=1 \
        --v=1 ;;
    controller-manager) echo --kubeconfig="$PKI/controller-manager.kubeconfig" \
        --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
        --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port=$KCM_PORT \
        --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
        --use-service-account-credentials=true \
        --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
        --service-cluster-ip-range=$SERVICE_CIDR \
        --leader-elect=false --kube-api-qps=100 --kube-api-burst=200 --v=1 ${VALLEY_KCM_ARGS:-} ;;
    scheduler) echo --kubeconfig="$PKI/scheduler.kubeconfig" \
        --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
        --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port=$SCHEDULER_PORT \
        --leader-elect=false --kube-api-qps=200 --kube-api-burst=400 --v=1 ;;
    kwok) echo --kubeconfig="$PKI/kwok.kubeconfig" --config="$here/kwok-stages.yaml" ${VALLEY_KWOK_ARGS:-} ;;
    karpenter) ;;  # its settings are environment variables (karpenter_env)
    kueue) kueue_args ;;
    *) node_args_of "$1" ;;
  esac
}

# Each component runs under a supervisor loop, as a kubelet runs static pods, so a crashed component
# comes back. (There is one replica of each, so kube-controller-manager and kube-scheduler run without
# leader election: with it they exit by design when an API server outage outlasts their lease.) The supervisor is the process group leader, so
# stopping the group stops both.
supervise() { # component
  local c=$1 bin; bin=$(binary_of "$c")
  trap 'kill -TERM $child 2>/dev/null; wait $child; exit 0' TERM INT
  # The pinned binaries first: containerd finds its runc shim on PATH.
  export PATH="$BIN:$PATH"
  if [ "$c" = karpenter ]; then karpenter_env; fi
  while :; do
    # shellcheck disable=SC2046
    $(runs_under "$c") "$BIN/$bin" $(args_of "$c") &
    child=$!
    wait $child && rc=0 || rc=$?
    echo "[supervisor] $bin exited with status $rc; restarting in 1s"
    sleep 1
  done
}

start_component() {
  local c=$1
  if running "$c"; then return 0; fi
  local bin; bin=$(binary_of "$c")
  [ -x "$BIN/$bin" ] || die "$BIN/$bin is missing; run tests/cluster/build-binaries.sh"
  mkdir -p "$LOGS" "$RUN"
  # Without the cluster lock (fd 9): a supervisor outlives the command that started it.
  setsid "$0" supervise "$c" >>"$LOGS/$c.log" 2>&1 < /dev/null 9>&- &
  echo $! > "$(pidfile "$c")"
}

stop_component() {
  local c=$1 p
  p=$(cat "$(pidfile "$c")" 2>/dev/null) || return 0
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM -- "-$p" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$p" 2>/dev/null || true
  fi
  rm -f "$(pidfile "$c")"
}

# Processes of ours whose pid file was lost (e.g. a killed shell) would hold the ports: find the
# supervisors and the binaries by paths unique to this checkout.
kill_strays() {
  local pids
  pids=$(pgrep -f "^(/bin/bash |bash )?$0 supervise |^$BIN/(etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok|containerd|coredns|kubelet|socat|kube-router|dra-example-kubeletplugin|karpenter|kueue)( |$)" || true)
  if [ -n "$pids" ]; then
    log "stopping stray processes: $(echo $pids)"
    kill -TERM $pids 2>/dev/null || true; sleep 1; kill -KILL $pids 2>/dev/null || true
  fi
}

# ---------------------------------------------------------------------------------------------------
# Readiness

wait_for() { # description command...
  local what=$1; shift
  local deadline=$((SECONDS + READY_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      log "timed out waiting for $what; last lines of the logs:"
      for c in "${COMPONENTS[@]}"; do [ -f "$LOGS/$c.log" ] && { echo "--- $c"; tail -n 8 "$LOGS/$c.log"; }; done >&2
      exit 1
    fi
    sleep 0.2
  done
}

etcd_healthy() { curl -sf "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
apiserver_ready() {
  curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" | grep -q ok
}
# These two serve on self-signed certificates they make at start; /healthz needs no credentials.
kcm_healthy() { curl -skf "https://127.0.0.1:$KCM_PORT/healthz" | grep -q ok; }
scheduler_healthy() { curl -skf "https://127.0.0.1:$SCHEDULER_PORT/healthz" | grep -q ok; }
default_sa_exists() { kubectl get serviceaccount default -n default; }

wait_healthy() { # component
  case $1 in
    etcd) wait_for etcd etcd_healthy ;;
    apiserver) wait_for kube-apiserver apiserver_ready ;;
    controller-manager) wait_for kube-controller-manager kcm_healthy ;;
    scheduler) wait_for kube-scheduler scheduler_healthy ;;
    kwok) sleep 0.5 ;;  # kwok has no health endpoint of its own here; nodes show its work
  esac
}

# The kwok nodes of one fleet ("": the cluster's own, outside every fleet).
fleet_selector() { # fleet
  if [ -n "$1" ]; then echo "type=kwok,valley.dev/fleet=$1"; else echo "type=kwok,!valley.dev/fleet"; fi
}
nodes_ready() { # expected fleet
  local n
  n=$(kubectl get nodes -l "$(fleet_selector "$2")" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
  [ "$n" -eq "$1" ]
}

apply_profile() { # profile [fleet]
  local profile=$1 fleet=${2:-}
  [ -f "$profile" ] || die "node profile $profile not found"
  local wanted selector
  selector=$(fleet_selector "$fleet")
  wanted=$("$BIN/valley-nodegen" --node-names --fleet="$fleet" "$profile" | sort)
  "$BIN/valley-nodegen" --fleet="$fleet" "$profile" | kubectl apply -f - >/dev/null
  # Nodes of an earlier profile that this one does not have are removed, with the ResourceSlices
  # published for them.
  local have
  have=$(kubectl get nodes -l "$selector" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
  local extra
  extra=$(comm -13 <(echo "$wanted") <(echo "$have") | grep -v '^$' || true)
  [ -z "$extra" ] || kubectl delete node $extra --wait=false >/dev/null
  local slices
  slices=$(kubectl get resourceslices -l "$selector" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' |
           awk 'NR==FNR { keep[$1] = 1; next } !($2 in keep) { print $1 }' <(echo "$wanted") -)
  [ -z "$slices" ] || kubectl delete resourceslices $slices --wait=false >/dev/null
  wait_for "$(echo "$wanted" | wc -l) kwok nodes${fleet:+ of fleet $fleet} Ready" nodes_ready "$(echo "$wanted" | wc -l)" "$fleet"
}

# Fleets e2e-1..e2e-N, copies of the profile's nodes; fleets beyond N are removed.
apply_fleets() { # count [profile]
  local count=$1 profile=${2:-$PROFILE} i
  [[ $count =~ ^[0-9]+$ ]] || die "usage: cluster.sh fleets N [PROFILE]"
  for ((i = 1; i <= count; i++)); do apply_profile "$profile" "e2e-$i"; done
  local stale
  stale=$(kubectl get nodes -l valley.dev/fleet -o jsonpath='{range .items[*]}{.metadata.labels.valley\.dev/fleet}{"\n"}{end}' |
          sort -u | awk -v n="$count" '/^e2e-[0-9]+$/ && substr($0, 5) + 0 > n')
  for i in $stale; do
    kubectl delete nodes -l "valley.dev/fleet=$i" --wait=false >/dev/null
    kubectl delete resourceslices -l "valley.dev/fleet=$i" --wait=false >/dev/null
  done
}

# etcd's JSON gateway: the current revision, then a physical compaction at it.
compact_etcd() {
  local rev
  rev=$(curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d '{"key":"AA==","limit":1}' |
        grep -o '"revision":"[0-9]*"' | head -1 | grep -o '[0-9]*')
  [ -n "$rev" ] || die "could not read etcd's revision"
  curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
  log "etcd compacted at revision $rev"
}

# ---------------------------------------------------------------------------------------------------

cmd_up() {
  local start=$SECONDS
  "$here/build-binaries.sh"
  ensure_pki
  if ! running etcd; then kill_strays; fi
  start_component etcd;               wait_for etcd etcd_healthy
  start_component apiserver;          wait_for kube-apiserver apiserver_ready
  start_component controller-manager; wait_for kube-controller-manager kcm_healthy
  start_component scheduler;          wait_for kube-scheduler scheduler_healthy
  kubectl apply -f "$here/kwok-deletes.yaml" >/dev/null
  start_component kwok
  wait_for "the default ServiceAccount" default_sa_exists
  apply_profile "$PROFILE"
  log "ready in $((SECONDS - start))s: $(kubectl get nodes --no-headers | wc -l) nodes;" \
      "kubeconfig $KUBECONFIG_ADMIN"
}

cmd_down() {
  cmd_autoscaler_down
  cmd_kueue_down
  cmd_node_down
  local i
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do stop_component "${COMPONENTS[$i]}"; done
  kill_strays
  rm -rf "$VALLEY_HOME/etcd" "$RUN"
  log "stopped; cluster state removed (certificates kept in $PKI)"
}

cmd_status() { status_of "${COMPONENTS[@]}"; }
status_of() { # component...
  local c rc=0
  for c in "$@"; do
    if running "$c"; then echo "$c: running (pid $(cat "$(pidfile "$c")"))"; else echo "$c: stopped"; rc=1; fi
  done
  return $rc
}

# What starts or stops components runs under the checkout's cluster lock: make test brings the real
# node and the autoscaler up in the background while a later step may ask for them too (it waits,
# then finds them up).
take_cluster_lock() {
  mkdir -p "$VALLEY_HOME"
  exec 9>"$VALLEY_HOME/cluster.lock"
  flock 9
}

main() {
  local cmd=${1:-}
  case $cmd in
    up | down | nodes | fleets | node-up | node-down | autoscaler-up | autoscaler-down | kueue-up | kueue-down)
      take_cluster_lock ;;
  esac
  case $cmd in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    nodes) [ $# -eq 2 ] || die "usage: cluster.sh nodes PROFILE"; apply_profile "$2" ;;
    fleets) [ $# -ge 2 ] || die "usage: cluster.sh fleets N [PROFILE]"; apply_fleets "$2" "${3:-}" ;;
    stop) stop_component "${2:?component}" ;;
    start) start_component "${2:?component}"; wait_healthy "$2" ;;
    restart) stop_component "${2:?component}"; start_component "$2"; wait_healthy "$2" ;;
    compact) compact_etcd ;;
    node-up) cmd_node_up ;;
    node-down) cmd_node_down ;;
    node-status) cmd_node_status ;;
    node-diagnose) cmd_node_diagnose ;;
    autoscaler-up) cmd_autoscaler_up ;;
    autoscaler-down) cmd_autoscaler_down ;;
    kueue-up) cmd_kueue_up ;;
    kueue-down) cmd_kueue_down ;;
    supervise) supervise "${2:?component}" ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
}
main "$@"
