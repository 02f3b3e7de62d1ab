# A real node beside the kwok ones: containerd, runc, the CNI bridge plugin, kubelet, CoreDNS and a DRA
# driver's kubelet plugin as host processes, so Valley's pods really start. Sourced by cluster.sh (node-up, node-down,
# node-status); its processes run under cluster.sh's supervisor like the control plane's.
#
# What the node is:
#  - name valley-node-0, InternalIP 10.244.0.1 on a bridge of its own (valley0, 10.244.0.0/24),
#    which is also the pods' network: pods reach each other, the node and CoreDNS on the bridge and
#    nothing else (no default route, no masquerade, IP forwarding left off);
#  - tainted valley.dev/real-node=true:NoSchedule and labelled valley.dev/real-node=true, so only
#    pods that ask for it run there; it advertises 2 simulated nvidia.com/gpu (an extended resource
#    with no device behind it: there is no GPU here) with the A100 on-demand pool's labels, so
#    Valley plans and prices it like a GPU node;
#  - CoreDNS on 10.244.0.1:53 serving cluster.local from the API server (headless Services and
#    pod hostname/subdomain records) and answering everything else NXDOMAIN: nothing leaves;
#  - the `kubernetes` Service's address (10.96.0.1:443, what in-cluster clients are given) is the
#    node's too, and forwards to the API server on loopback (socat): what kube-proxy would do for
#    that one Service, so an operator pod runs unchanged; pods route 10.96.0.0/16 to the node;
#  - NetworkPolicies are enforced by kube-router's network policy controller alone (pinned in
#    tests/cluster/clients; no routing, no service proxy), with its ServiceAccount's token: iptables
#    rules and ipsets, which see the bridge's traffic through br_netfilter, reject what no policy
#    selecting either end admits;
#  - it also publishes 2 simulated GPUs through Dynamic Resource Allocation: the upstream DRA example
#    driver's kubelet plugin (gpu.example.com, pinned in tests/cluster/dra), registered with kubelet,
#    writes a CDI spec for each claim it prepares and containerd 2 (pinned in tests/cluster/containerd)
#    applies it, so a container is given GPU_DEVICE_<n> variables. A Valley that knows the driver
#    (--dra-drivers) counts these only while the node advertises no nvidia.com/gpu;
#  - images come from tests/cluster/images/build_image.py (no registry): the pause image, the
#    operator's (deploy/Dockerfile), the example MPI workload's (deploy/examples/train/Dockerfile)
#    and the PyTorch example's (deploy/examples/pytorch/Dockerfile).
#
# A second node, valley-node-1 (InternalIP 10.244.0.2 on the same bridge, pods from the upper half
# of its range), is a kubelet and a containerd of its own beside the first (their own state, cgroup
# root, pod log directory, ports), so that what happens to one node (a spot notice) can take one
# worker of a task and not the others. It advertises 1 simulated GPU, is tainted
# valley.dev/second-node=true:NoSchedule besides the real node's taint (only pods that ask for it run
# there), and shares the first node's CoreDNS, Service address and enforcer, which enforces
# NetworkPolicies for the first node's pods only (its pods reach and are reached like the first's).
#
# Host state it changes and `node-down` restores: the bridge, the mounts under $NODE, the kubepods
# cgroups, the sysctls kubelet sets at start, the iptables rules kubelet and kube-router add (saved at
# node-up) and kube-router's ipsets.

NODE=$VALLEY_HOME/node
NODE_NAME=valley-node-0
NODE_IP=10.244.0.1
NODE_BRIDGE=valley0
NODE_BRIDGE_MAC=02:76:6c:79:00:01  # locally administered
POD_SUBNET=10.244.0.0/24
POD_RANGE_START=10.244.0.10
NODE_GPUS=2
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
OPERATOR_IMAGE=localhost/valley-operator:dev  # the name deploy/overlays/dev gives it
KUBERNETES_SERVICE_IP=10.96.0.1  # the first address of cluster.sh's SERVICE_CIDR
TRAIN_IMAGE=valley.local/valley-train:dev
PYTORCH_IMAGE=valley.local/valley-pytorch-example:dev  # deploy/examples/pytorch: Debian's CPU torch, gloo
POD_RANGE_END=10.244.0.129
SECOND_NODE=$NODE/second
SECOND_NODE_NAME=valley-node-1
SECOND_NODE_IP=10.244.0.2
SECOND_NODE_GPUS=1
SECOND_POD_RANGE_START=10.244.0.130
SECOND_POD_RANGE_END=10.244.0.250
SECOND_NODE_CGROUP=valley-node-1  # its kubelet's cgroup root (the first's is the hierarchy's root)
NODE_COMPONENTS=(containerd coredns apiserver-proxy netpol kubelet dra-plugin containerd-1 kubelet-1)
DRA_DRIVER=gpu.example.com  # the example driver's name and its DeviceClass's
NETPOL_HEALTH_PORT=20244
# The sysctls kubelet sets when protectKernelDefaults is false (its container manager's kernel
# tunables): saved at node-up, put back at node-down.
KUBELET_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

ctr_() { "$BIN/ctr" --address "$NODE/containerd/containerd.sock" -n k8s.io "$@"; }
ctr_1() { "$BIN/ctr" --address "$SECOND_NODE/containerd/containerd.sock" -n k8s.io "$@"; }

node_args_of() {
  case $1 in
    containerd) echo --config="$NODE/containerd.toml" ;;
    coredns) echo -conf "$NODE/Corefile" ;;
    netpol) echo --kubeconfig="$NODE/netpol/kubeconfig" --hostname-override=$NODE_NAME --run-firewall=true \
        --run-router=false --run-service-proxy=false --health-port=$NETPOL_HEALTH_PORT --metrics-port=0 ;;
    apiserver-proxy) echo TCP-LISTEN:443,bind=$KUBERNETES_SERVICE_IP,fork,reuseaddr TCP:127.0.0.1:$APISERVER_PORT ;;
    kubelet) echo --config="$NODE/kubelet.yaml" --kubeconfig="$PKI/node.kubeconfig" \
        --hostname-override=$NODE_NAME --node-ip=$NODE_IP --root-dir="$NODE/kubelet" \
        --cert-dir="$NODE/kubelet/pki" --node-labels="$(node_labels $NODE_GPUS)" --v=1 ;;
    containerd-1) echo --config="$SECOND_NODE/containerd.toml" ;;
    kubelet-1) echo --config="$SECOND_NODE/kubelet.yaml" --kubeconfig="$PKI/node-1.kubeconfig" \
        --hostname-override=$SECOND_NODE_NAME --node-ip=$SECOND_NODE_IP --root-dir="$SECOND_NODE/kubelet" \
        --cert-dir="$SECOND_NODE/kubelet/pki" --node-labels="$(node_labels $SECOND_NODE_GPUS),valley.dev/second-node=true" --v=1 ;;
    dra-plugin) echo --node-name=$NODE_NAME --kubeconfig="$NODE/dra/kubeconfig" --num-devices=$NODE_GPUS \
        --cdi-root="$NODE/cdi" --kubelet-registrar-directory-path="$NODE/kubelet/plugins_registry" \
        --kubelet-plugins-directory-path="$NODE/kubelet/plugins" ;;
  esac
}

# Labels of an A100 on-demand node of the local region with `gpus` simulated GPUs.
node_labels() {
  echo "valley.dev/real-node=true,nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB,nvidia.com/gpu.count=$1,karpenter.sh/capacity-type=on-demand,topology.kubernetes.io/region=local,topology.kubernetes.io/zone=zone-a"
}

node_write_configs() {
  node_write_runtime_config "$NODE" "$POD_RANGE_START" "$POD_RANGE_END"
  node_write_runtime_config "$SECOND_NODE" "$SECOND_POD_RANGE_START" "$SECOND_POD_RANGE_END"
  # Pods' resolv.conf is built from this (plus the cluster's search path): the node's own resolver.
  echo "nameserver $NODE_IP" > "$NODE/resolv.conf"
  cat > "$NODE/Corefile" <<EOF
cluster.local:53 {
  bind $NODE_IP
  errors
  kubernetes cluster.local {
    kubeconfig $PKI/coredns.kubeconfig valley-local
    pods insecure
    ttl 5
  }
}
.:53 {
  bind $NODE_IP
  template ANY ANY {
    rcode NXDOMAIN
  }
}
EOF
  node_write_kubelet_config "$NODE" "$NODE_IP" 10248 / '- {key: valley.dev/real-node, value: "true", effect: NoSchedule}'
  node_write_kubelet_config "$SECOND_NODE" "$SECOND_NODE_IP" 10247 "/$SECOND_NODE_CGROUP" \
    $'- {key: valley.dev/real-node, value: "true", effect: NoSchedule}\n- {key: valley.dev/second-node, value: "true", effect: NoSchedule}'
  make_cert node "/O=system:nodes/CN=system:node:$NODE_NAME"
  make_cert node-1 "/O=system:nodes/CN=system:node:$SECOND_NODE_NAME"
  make_cert coredns "/CN=system:valley-coredns"
  write_kubeconfig "$PKI/node.kubeconfig" node
  write_kubeconfig "$PKI/node-1.kubeconfig" node-1
  write_kubeconfig "$PKI/coredns.kubeconfig" coredns
}

# A node's containerd and CNI configuration under `dir`: its pods on the shared bridge, addresses
# `first` to `last`; runc keeps its state there too.
node_write_runtime_config() { # dir first last
  local dir=$1 first=$2 last=$3
  mkdir -p "$dir/containerd" "$dir/cdi" "$dir/cni/net.d" "$dir/cni/ipam" "$dir/kubelet/pki" "$dir/pod-logs"
  cat > "$dir/containerd.toml" <<EOF
version = 3
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$dir/containerd/containerd.sock"
[ttrpc]
  address = "$dir/containerd/containerd.sock.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/containerd/opt"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins."io.containerd.cri.v1.runtime"]
  # runc cannot set the pause container's oom_score_adj below the sandbox's own (no CAP_SYS_RESOURCE).
  restrict_oom_score_adj = true
  enable_selinux = false
  # Where the DRA plugin writes what a prepared claim gives a container.
  enable_cdi = true
  cdi_spec_dirs = ["$dir/cdi"]
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$dir/runc"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$dir/cni/net.d"
EOF
  cat > "$dir/cni/net.d/10-valley.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "valley",
  "plugins": [{
    "type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": false, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$dir/cni/ipam",
             "ranges": [[{"subnet": "$POD_SUBNET", "rangeStart": "$first", "rangeEnd": "$last"}]],
             "routes": [{"dst": "$SERVICE_CIDR", "gw": "$NODE_IP"}]}
  }]
}
EOF
}

# A node's kubelet configuration, $dir/kubelet.yaml.
node_write_kubelet_config() { # dir ip healthz-port cgroup-root taints(YAML list lines)
  local dir=$1 ip=$2 healthz_port=$3 cgroup_root=$4 taints=$5
  cat > "$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz_port
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$dir/containerd/containerd.sock
# Its own cgroups and container logs: a kubelet removes what it finds there that is not its own.
cgroupRoot: $cgroup_root
podLogsDir: $dir/pod-logs
# The sandbox: cgroup v1 (hybrid) with the cgroupfs driver, swap not off.
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
resolvConf: $NODE/resolv.conf
registerWithTaints:
$taints
# A shared test machine: evict only when really short, and never collect the images built here.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 30
EOF
}

# CoreDNS reads Services, EndpointSlices and Namespaces; the node's user gets the node role (the API
# server authorizes by RBAC only, so the Node authorizer's rules come from this binding).
node_rbac() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "valley:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "valley:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "valley:coredns"}
subjects: [{kind: User, name: "system:valley-coredns"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "valley:node:$NODE_NAME"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node"}
subjects: [{kind: User, name: "system:node:$NODE_NAME"}, {kind: User, name: "system:node:$SECOND_NODE_NAME"}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-router, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "valley:kube-router"}
rules:
- apiGroups: [""]
  resources: [pods, namespaces, nodes, services, endpoints]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "valley:kube-router"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "valley:kube-router"}
subjects: [{kind: ServiceAccount, name: kube-router, namespace: kube-system}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: dra-example-driver, namespace: kube-system}
---
# What the example driver's Helm chart grants its kubelet plugin.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "valley:dra-example-driver"}
rules:
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims]
  verbs: [get, list, watch]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims/status]
  verbs: [update]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get]
- apiGroups: [resource.k8s.io]
  resources: [resourceslices]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "valley:dra-example-driver"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "valley:dra-example-driver"}
subjects: [{kind: ServiceAccount, name: dra-example-driver, namespace: kube-system}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $DRA_DRIVER}
spec:
  selectors:
  - cel: {expression: "device.driver == '$DRA_DRIVER'"}
EOF
  # The enforcer's and the DRA plugin's credentials: their ServiceAccounts' tokens, as a DaemonSet's
  # pods would have.
  node_sa_kubeconfig netpol kube-router
  node_sa_kubeconfig dra dra-example-driver
}

node_sa_kubeconfig() { # dir-under-$NODE service-account
  mkdir -p "$NODE/$1"
  local token; token=$(kubectl -n kube-system create token "$2" --duration=168h)
  cat > "$NODE/$1/kubeconfig.tmp" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$PKI/ca.crt"}}]
users: [{name: $2, user: {token: "$token"}}]
contexts: [{name: $2, context: {cluster: local, user: $2}}]
current-context: $2
EOF
  mv "$NODE/$1/kubeconfig.tmp" "$NODE/$1/kubeconfig"
}

node_save_host_state() {
  [ -f "$NODE/host-state/sysctls" ] && return 0
  mkdir -p "$NODE/host-state"
  local s
  for s in "${KUBELET_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done > "$NODE/host-state/sysctls.tmp"
  iptables-save > "$NODE/host-state/iptables"
  ip6tables-save > "$NODE/host-state/ip6tables"
  sysctl -n net.ipv4.ip_forward > "$NODE/host-state/ip_forward"
  mv "$NODE/host-state/sysctls.tmp" "$NODE/host-state/sysctls"
}

node_restore_host_state() {
  [ -f "$NODE/host-state/sysctls" ] || return 0
  local line
  while read -r line; do sysctl -q -w "$line" >/dev/null || log "could not restore $line"; done < "$NODE/host-state/sysctls"
  sysctl -q -w net.ipv4.ip_forward="$(cat "$NODE/host-state/ip_forward")" >/dev/null
  # Flush what kubelet added (tables it may have touched), then put back what was there.
  local t
  for t in filter nat mangle; do iptables -t "$t" -F; iptables -t "$t" -X; ip6tables -t "$t" -F; ip6tables -t "$t" -X; done 2>/dev/null || true
  # Without kube-router's and kubelet's own chains: a state saved while an earlier node's rules were
  # still there names ipsets that are gone, and one refused line would refuse the whole table.
  grep -v -e 'KUBE-' -e 'kube-router' "$NODE/host-state/iptables" | iptables-restore || log "could not restore the host's iptables rules"
  grep -v -e 'KUBE-' -e 'kube-router' "$NODE/host-state/ip6tables" | ip6tables-restore || log "could not restore the host's ip6tables rules"
  rm -rf "$NODE/host-state"
}

# The second kubelet's cgroup root in every hierarchy (cgroup v1: a cpuset cgroup takes no task until
# its CPUs and memory nodes are set, here its parent's).
node_cgroup_root_up() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h$SECOND_NODE_CGROUP"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" > "$h$SECOND_NODE_CGROUP/cpuset.cpus"
      cat "$h/cpuset.mems" > "$h$SECOND_NODE_CGROUP/cpuset.mems"
    fi
  done
}

node_network_up() {
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge
  fi
  # A bridge without an address of its own takes the lowest of its ports' and changes it when that
  # pod's veth goes: the other pods' ARP entries for the node's IP then point nowhere for up to a
  # minute (a sidecar uploading outputs as its neighbours stop timed out). Its own address holds.
  ip link set "$NODE_BRIDGE" address "$NODE_BRIDGE_MAC"
  ip addr show dev "$NODE_BRIDGE" | grep -q "inet $NODE_IP/" || ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
  ip addr show dev "$NODE_BRIDGE" | grep -q "inet $SECOND_NODE_IP/" || ip addr add "$SECOND_NODE_IP/32" dev "$NODE_BRIDGE"
  ip addr show dev "$NODE_BRIDGE" | grep -q "inet $KUBERNETES_SERVICE_IP/" || ip addr add "$KUBERNETES_SERVICE_IP/32" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
}

# The node's binaries and images; prints nothing, leaves image tarballs listed in $NODE/images.
node_build() {
  "$here/build-binaries.sh" --node
  local build_dir=${VALLEY_BUILD_DIR:-$repo/build}
  local cache=${VALLEY_CACHE:-$HOME/.cache/valley}/images
  for b in valley-operator valleyctl valley-io valley-train; do
    [ -x "$build_dir/bin/$b" ] || die "$build_dir/bin/$b is missing: build Valley first (make build)"
  done
  local img=$here/images/build_image.py
  {
    python3 "$img" pause "$BIN/pause" --tag "$PAUSE_IMAGE" --cache "$cache"
    python3 "$img" dockerfile "$repo/deploy/Dockerfile" --tag "$OPERATOR_IMAGE" --cache "$cache" \
      --build-dir "$build_dir" --repo "$repo"
    python3 "$img" dockerfile "$repo/deploy/examples/train/Dockerfile" --tag "$TRAIN_IMAGE" --cache "$cache" \
      --build-dir "$build_dir" --repo "$repo"
    python3 "$img" dockerfile "$repo/deploy/examples/pytorch/Dockerfile" --tag "$PYTORCH_IMAGE" --cache "$cache" \
      --build-dir "$build_dir" --repo "$repo"
  } > "$NODE/images.tmp"
  mv "$NODE/images.tmp" "$NODE/images"
}

# Each tarball once per node (its name carries its inputs' key): a node-up of a node that is up
# imports only what changed.
node_import_images() { # [ctr function, node dir]
  local ctr=${1:-ctr_} dir=${2:-$NODE} tarball
  touch "$dir/images-imported"
  while read -r tarball; do
    grep -qxF "$tarball" "$dir/images-imported" && continue
    "$ctr" images import "$tarball" >/dev/null
    echo "$tarball" >> "$dir/images-imported"
  done < "$NODE/images"
}

containerd_ready() { ctr_ version; }
second_containerd_ready() { ctr_1 version; }
# An A query for the API server's Service straight to CoreDNS (no resolver of the host involved).
dig_kubernetes() { python3 - "$NODE_IP" <<'EOF'
import socket, struct, sys
q = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"".join(
    bytes([len(p)]) + p.encode() for p in "kubernetes.default.svc.cluster.local".split(".")) + b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
s.sendto(q, (sys.argv[1], 53)); r = s.recv(512)
sys.exit(0 if (r[3] & 0xF) == 0 and struct.unpack(">H", r[6:8])[0] > 0 else 1)
EOF
}
apiserver_via_service() {
  curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://$KUBERNETES_SERVICE_IP/readyz" | grep -q ok
}
netpol_ready() { curl -sf "http://127.0.0.1:$NETPOL_HEALTH_PORT/healthz" >/dev/null; }
node_publishes_dra_gpus() {
  kubectl get resourceslices --field-selector spec.nodeName=$NODE_NAME,spec.driver=$DRA_DRIVER \
    -o jsonpath='{.items[*].spec.devices[*].name}' | wc -w | grep -qx "$NODE_GPUS"
}
node_ready() { # [node]
  kubectl get node "${1:-$NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -q True
}
second_node_ready() { node_ready $SECOND_NODE_NAME; }
node_has_gpus() { # [node gpus]
  kubectl get node "${1:-$NODE_NAME}" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}' | grep -qx "${2:-$NODE_GPUS}"
}
second_node_has_gpus() { node_has_gpus $SECOND_NODE_NAME $SECOND_NODE_GPUS; }
# Extended resources are advertised by patching the node's status; kubelet keeps them.
node_advertise_gpus() { # [node gpus]
  kubectl patch node "${1:-$NODE_NAME}" --subresource=status --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\"${2:-$NODE_GPUS}\"}]" >/dev/null
}

cmd_node_up() {
  local start=$SECONDS
  apiserver_ready || die "the control plane is not up: run cluster.sh up first"
  mkdir -p "$NODE"
  node_build
  node_write_configs
  node_rbac
  node_save_host_state
  node_network_up
  ln -sfn "$(command -v socat)" "$BIN/socat"
  start_component containerd; wait_for containerd containerd_ready
  node_import_images
  start_component coredns; wait_for "CoreDNS" dig_kubernetes
  start_component apiserver-proxy; wait_for "the kubernetes Service's address" apiserver_via_service
  start_component netpol; wait_for "the NetworkPolicy enforcer" netpol_ready
  start_component kubelet; wait_for "node $NODE_NAME Ready" node_ready
  node_advertise_gpus; wait_for "$NODE_GPUS simulated GPUs on $NODE_NAME" node_has_gpus
  start_component dra-plugin; wait_for "$NODE_GPUS simulated DRA GPUs ($DRA_DRIVER) on $NODE_NAME" node_publishes_dra_gpus
  # VALLEY_SECOND_NODE=0: the first node only (the demo's story uses one).
  if [ "${VALLEY_SECOND_NODE:-1}" = 0 ]; then
    log "real node $NODE_NAME ready in $((SECONDS - start))s (images: $(wc -l < "$NODE/images"))"
    return 0
  fi
  node_cgroup_root_up
  start_component containerd-1; wait_for "the second node's containerd" second_containerd_ready
  node_import_images ctr_1 "$SECOND_NODE"
  start_component kubelet-1; wait_for "node $SECOND_NODE_NAME Ready" second_node_ready
  node_advertise_gpus $SECOND_NODE_NAME $SECOND_NODE_GPUS
  wait_for "$SECOND_NODE_GPUS simulated GPU on $SECOND_NODE_NAME" second_node_has_gpus
  log "real nodes $NODE_NAME and $SECOND_NODE_NAME ready in $((SECONDS - start))s (images: $(wc -l < "$NODE/images"))"
}

# Everything node-up made, in reverse: pods' containers, processes, mounts, cgroups, the bridge,
# the host's sysctls and iptables rules, and the node object.
node_stop_containers() { # suffix ("" or -1) ctr-function socket
  if [ -S "$3" ] && running "containerd$1"; then
    stop_component "kubelet$1"
    local ids id
    ids=$("$2" tasks list -q 2>/dev/null || true)
    for id in $ids; do "$2" tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
    sleep 1
    for id in $ids; do "$2" tasks delete -f "$id" >/dev/null 2>&1 || true; done
  fi
}

cmd_node_down() {
  [ -d "$NODE" ] || return 0
  node_stop_containers "" ctr_ "$NODE/containerd/containerd.sock"
  node_stop_containers -1 ctr_1 "$SECOND_NODE/containerd/containerd.sock"
  local c
  stop_component dra-plugin
  for c in kubelet-1 containerd-1 kubelet netpol apiserver-proxy coredns containerd; do stop_component "$c"; done
  # Leftover shims (each container's parent) and their containers.
  pkill -KILL -f "containerd-shim-runc-v2 -namespace k8s.io -id .* -address $NODE/" 2>/dev/null || true
  local m
  for m in $(awk -v p="$NODE/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
  for m in $(awk '$2 ~ "^/run/netns/cni-" {print $2}' /proc/mounts); do umount "$m" 2>/dev/null || true; rm -f "$m"; done
  local cg
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/"$SECOND_NODE_CGROUP"; do
    [ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  node_restore_host_state
  # kube-router's ipsets, unreferenced once its iptables rules are gone.
  ipset list -n 2>/dev/null | grep -E '^(KUBE|kube-router)' | xargs -r -n1 ipset destroy 2>/dev/null || true
  apiserver_ready 2>/dev/null && kubectl delete node $NODE_NAME $SECOND_NODE_NAME --ignore-not-found --wait=false >/dev/null 2>&1 || true
  apiserver_ready 2>/dev/null && kubectl delete resourceslices --field-selector spec.nodeName=$NODE_NAME --wait=false >/dev/null 2>&1 || true
  rm -rf "$NODE" "$BIN/socat"
  log "real node removed"
}

cmd_node_status() { status_of "${NODE_COMPONENTS[@]}"; }

# What a failed run on the node needs to be understood from CI's output alone (which keeps its
# beginning and its end): the node's pods and their containers' states, the last warnings, and the
# errors of the kubelet and containerd.
cmd_node_diagnose() {
  [ -d "$NODE" ] || return 0
  echo "--- real node diagnosis: components"
  status_of "${NODE_COMPONENTS[@]}" 2>&1 || true
  echo "--- free disk under the node's state"
  df -h "$NODE" 2>&1 | tail -1
  echo "--- Valley operators running on this machine"
  pgrep -af '[v]alley-operator' 2>/dev/null | cut -c1-250 || true
  echo "--- pods on $NODE_NAME and $SECOND_NODE_NAME"
  local n
  for n in $NODE_NAME $SECOND_NODE_NAME; do
    kubectl get pods -A --field-selector "spec.nodeName=$n" -o \
      custom-columns='NS:.metadata.namespace,POD:.metadata.name,PHASE:.status.phase,WAITING:.status.containerStatuses[*].state.waiting.reason,INIT:.status.initContainerStatuses[*].state.waiting.reason,MESSAGE:.status.containerStatuses[*].state.waiting.message' 2>&1 | tail -15 | cut -c1-300 || true
  done
  echo "--- last warnings about pods"
  kubectl get events -A --field-selector type=Warning,involvedObject.kind=Pod --sort-by=.lastTimestamp \
    -o custom-columns='OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message' 2>&1 | tail -12 | cut -c1-300 || true
  local c
  for c in kubelet containerd kubelet-1 containerd-1; do
    echo "--- $c errors (last 10)"
    grep -aiE 'level=error|^E[0-9]{4} ' "$LOGS/$c.log" 2>/dev/null | grep -v 'code = NotFound' | tail -10 | cut -c1-300 || true
  done
}
