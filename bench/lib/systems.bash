# Sourced by the benchmarks' scripts that run systems under test beside each other (Valley's
# operator, the MPI Operator): each with its own ServiceAccount's RBAC, not the cluster admin's, taken
# as ready once it leads, stopped, and its namespace removed. Needs K (kubectl as admin) and log.

# A kubeconfig that acts as a ServiceAccount (a day's token).
sa_kubeconfig() { # namespace serviceaccount file -> writes file
  local ns=$1 sa=$2 f=$3 server ca token
  server=$(K config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(K config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  [ -n "$ca" ] || ca=$(base64 -w0 < "$(K config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')")
  token=$(K -n "$ns" create token "$sa" --duration=24h)
  cat > "$f" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $sa, user: {token: "$token"}}]
contexts: [{name: $sa, context: {cluster: local, user: $sa}}]
current-context: $sa
KC
}

# A ServiceAccount bound to a ClusterRole (the binding named <namespace>-<serviceaccount>), and the
# leader-election Role Valley's operator needs in that namespace when it is Valley.
sa_bound() { # namespace serviceaccount clusterrole
  K -n "$1" create serviceaccount "$2" --dry-run=client -o yaml | K apply -f - >/dev/null
  K create clusterrolebinding "$1-$2" --clusterrole="$3" --serviceaccount="$1:$2" --dry-run=client -o yaml | K apply -f - >/dev/null
  [ "$2" != valley-operator ] || K -n "$1" create rolebinding valley-leader-election --clusterrole=valley-leader-election \
    --serviceaccount="$1:$2" --dry-run=client -o yaml | K apply -f - >/dev/null
}

# Ready: Valley answers /readyz on its HTTP port and leads; the MPI Operator has taken its lease.
wait_ready() { # what pid logfile [valley's port]
  local i
  for i in $(seq 1 300); do
    kill -0 "$2" 2>/dev/null || { log "$1 exited; see $3"; tail -5 "$3" >&2; return 1; }
    case $1 in
      valley) curl -sf "http://127.0.0.1:$4/readyz" >/dev/null 2>&1 && curl -sf "http://127.0.0.1:$4/metrics" | grep -q '^valley_leader 1' && return 0 ;;
      mpi-operator) grep -q "successfully acquired lease" "$3" && sleep 1 && return 0 ;;
    esac
    sleep 0.2
  done
  log "$1 not ready after 60 s; see $3"; return 1
}
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
}
# Deleted, its pods forced, waited for (a stuck one is said, not fatal).
delete_namespace() {
  K delete namespace "$1" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  K -n "$1" delete pods --all --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
  K wait --for=delete "namespace/$1" --timeout=600s >/dev/null 2>&1 || log "namespace $1 still terminating"
}
