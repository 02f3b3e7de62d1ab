#!/usr/bin/env bash
# Builds the pinned Kubernetes control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl), kwok, versitygw (S3), helm and kubeconform (tests/cluster/lint) and our
# node-profile renderer from source through
# the Go module proxy, into a cache outside the repository keyed by what they are built from, then
# links them into $VALLEY_HOME/bin. A second run builds nothing.
# --bench-peers also builds the benchmarks' peers, the Kubeflow MPI Operator and Kueue (as --kueue):
# only `make bench` and `make bench-smoke` need them, not the demo or the tests.
# --node also builds what the real node needs (cluster.sh node-up): the kubelet, CoreDNS, the
# pod sandbox's pause binary (static, from the pinned Kubernetes source), kube-router, containerd and
# the DRA example driver's kubelet plugin.
# --autoscaler also builds Karpenter with its kwok cloud provider (cluster.sh autoscaler-up).
# --kueue also builds Kueue, the live economics benchmark's peer (cluster.sh kueue-up), with the
# CRDs and manager ClusterRole of the same release.
set -euo pipefail
peers=false
node=false
autoscaler=false
kueue=false
for arg in "$@"; do
  case "$arg" in
    --bench-peers) peers=true; kueue=true ;;
    --node) node=true ;;
    --autoscaler) autoscaler=true ;;
    --kueue) kueue=true ;;
    *) echo "usage: build-binaries.sh [--bench-peers] [--node] [--autoscaler] [--kueue]" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache_root=${VALLEY_CACHE:-$HOME/.cache/valley}
out=${VALLEY_HOME:-$repo/.valley}/bin

command -v go >/dev/null || { echo "build-binaries: no Go toolchain on PATH (need Go >= 1.24)" >&2; exit 1; }

k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$here/k8s/go.mod")
kwok_version=$(awk '$1=="require" && $2=="sigs.k8s.io/kwok"{print $3}' "$here/kwok/go.mod")
s3_version=$(awk '$1=="require" && $2=="github.com/versity/versitygw"{print $3}' "$here/s3/go.mod")
helm_version=$(awk '$1=="helm.sh/helm/v3"{print $2}' "$here/lint/go.mod")
mpiop_mod="$repo/bench/controlplane/mpi-operator"
mpiop_version=$(awk '$1=="require" && $2=="github.com/kubeflow/mpi-operator"{print $3}' "$mpiop_mod/go.mod")
# Stamp the release into the binaries as Kubernetes' own build does (hack/lib/version.sh), so
# /version and kubectl report it.
minor=${k8s_version#v1.}; minor=${minor%%.*}
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
kwok_ldflags="-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}"

# -trimpath and stripped binaries: a smaller cache, the same bytes from any checkout. No DWARF is
# made at all (the linker's -w would drop it): 7% less CPU for a cold build (kube-scheduler: 369
# CPU-seconds instead of 395).
build() { # dest module-dir ldflags pkg...
  local dest=$1 mod=$2 ldflags=$3; shift 3
  [ -f "$dest/.complete" ] && return 0
  echo "building $(basename "$dest") (first time only; cached in $dest)" >&2
  local start=$SECONDS
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp/bin"
  # The module proxy answers a fresh machine's hundreds of downloads with the odd 503: a failed
  # build is tried again (what it downloaded stays in the module cache), three times in all.
  local try
  for try in 1 2 3; do
    (cd "$mod" && CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags="-s -w $ldflags" -o "$dest.tmp/bin/" "$@") && break
    [ $try -lt 3 ] || return 1
    echo "build of $(basename "$dest") failed (try $try of 3); trying again in $((try * 30))s" >&2
    sleep $((try * 30))
  done
  # go build names a binary after its package path's last element: give two of them real names.
  if [ -f "$dest.tmp/bin/server" ]; then mv "$dest.tmp/bin/server" "$dest.tmp/bin/etcd"; fi
  if [ -f "$dest.tmp/bin/nodegen" ]; then mv "$dest.tmp/bin/nodegen" "$dest.tmp/bin/valley-nodegen"; fi
  echo "$((SECONDS - start))" > "$dest.tmp/build-seconds"
  touch "$dest.tmp/.complete"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  echo "built $(basename "$dest") in $((SECONDS - start))s, $(du -sh "$dest" | cut -f1)" >&2
}

# The pod sandbox's pause binary, static, from the pinned Kubernetes source: build_pause dest source
# version, into the cache as build() makes an entry (complete in a directory beside it, then moved).
build_pause() {
  local dest=$1 src=$2 version=$3
  [ -f "$dest/.complete" ] && return 0
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp/bin"
  gcc -Os -Wall -static -DVERSION="v$version" -o "$dest.tmp/bin/pause" "$src"
  strip "$dest.tmp/bin/pause"
  touch "$dest.tmp/.complete"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
}

# One build of a cache entry at a time: `make test` builds the real node's in the background while
# other steps may ask for them (the second waits for the first, then finds them built); make demo's
# story asks while its own background step builds them. locked BUILDER dest args...
locked() {
  local fd
  mkdir -p "$(dirname "$2")"
  exec {fd}>"$2.lock"
  if ! flock -n "$fd"; then
    echo "waiting for $(basename "$2"), which another build is making" >&2
    flock "$fd"
  fi
  "$@"
  exec {fd}>&-
}
locked_build() { locked build "$@"; }

# A cache entry is keyed by everything it is built from: the build recipe, its flags and the module
# files (not the rest of this script, so adding a component does not rebuild the others).
key() { local flags=$1; shift; { declare -f build; echo "$flags"; cat "$@"; } | sha256sum | cut -c1-12; }
# The control plane; the kubelet (the real node's only) is an entry of its own: the demo's story
# starts once the control plane is built, and the kubelet builds behind it.
k8s_pkgs="go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl"
k8s_dir="$cache_root/k8s-$k8s_version-$(key "$k8s_ldflags $k8s_pkgs" "$here/k8s/go.mod" "$here/k8s/go.sum")"
kubelet_dir="$cache_root/kubelet-$k8s_version-$(key "$k8s_ldflags" "$here/k8s/go.mod" "$here/k8s/go.sum")"
kwok_dir="$cache_root/kwok-$kwok_version-$(key "$kwok_ldflags" "$here/kwok/go.mod" "$here/kwok/go.sum")"
s3_dir="$cache_root/versitygw-$s3_version-$(key "" "$here/s3/go.mod" "$here/s3/go.sum")"
lint_dir="$cache_root/lint-helm-$helm_version-$(key "" "$here/lint/go.mod" "$here/lint/go.sum")"
mpiop_dir="$cache_root/mpi-operator-$mpiop_version-$(key "" "$mpiop_mod/go.mod" "$mpiop_mod/go.sum")"
nodegen_dir="$cache_root/nodegen-$(key "" "$here/kwok/go.sum" "$here"/kwok/nodegen/*.go)"
# CoreDNS, kube-router, Karpenter and Kueue: one module, one set of library versions (clients/go.mod).
clients="$here/clients"
clients_key=$(key "" "$clients/go.mod" "$clients/go.sum")
clients_version() { awk -v m="$1" '$1==m{print $2}' "$clients/go.mod"; }
# The cache entry of one of them: clients_dir NAME MODULE (its version, and the module's key).
clients_dir() { echo "$cache_root/$1-$(clients_version "$2")-$clients_key"; }

# shellcheck disable=SC2086 # a list of packages
locked_build "$k8s_dir" "$here/k8s" "$k8s_ldflags" $k8s_pkgs
locked_build "$kwok_dir" "$here/kwok" "$kwok_ldflags" sigs.k8s.io/kwok/cmd/kwok
locked_build "$nodegen_dir" "$here/kwok" "" ./nodegen
# The S3-compatible server for checkpoint-store tests (verifies SigV4 like AWS does).
locked_build "$s3_dir" "$here/s3" "" github.com/versity/versitygw/cmd/versitygw
# What `make lint-deploy` checks the shipped manifests and the Helm chart with.
locked_build "$lint_dir" "$here/lint" "-X helm.sh/helm/v3/internal/version.version=$helm_version" helm.sh/helm/v3/cmd/helm \
  github.com/yannh/kubeconform/cmd/kubeconform
mkdir -p "$out"
for b in "$k8s_dir"/bin/* "$kwok_dir"/bin/* "$nodegen_dir"/bin/* "$s3_dir"/bin/* "$lint_dir"/bin/*; do ln -sfn "$b" "$out/$(basename "$b")"; done

# In the order `make test` needs them (it builds them beside its C++ compiles): the real node's
# first (its tests are the longest chain of the end-to-end run), then Karpenter, then the benchmarks'
# peers (the last step).
if $node; then
  locked_build "$kubelet_dir" "$here/k8s" "$k8s_ldflags" k8s.io/kubernetes/cmd/kubelet
  ln -sfn "$kubelet_dir/bin/kubelet" "$out/kubelet"
  coredns_dir=$(clients_dir coredns github.com/coredns/coredns)
  locked_build "$coredns_dir" "$clients" "" github.com/coredns/coredns
  pause_version=3.10.1  # node.bash's PAUSE_IMAGE
  pause_src="$(cd "$here/k8s" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
  pause_dir="$cache_root/pause-$pause_version-$(key "$pause_version" "$pause_src")"
  locked build_pause "$pause_dir" "$pause_src" "$pause_version"
  for b in "$coredns_dir"/bin/* "$pause_dir"/bin/*; do ln -sfn "$b" "$out/$(basename "$b")"; done
  # The NetworkPolicy enforcer (kube-router's policy controller; see clients/tools.go).
  netpol_dir=$(clients_dir kube-router github.com/cloudnativelabs/kube-router/v2)
  locked_build "$netpol_dir" "$clients" "" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  ln -sfn "$netpol_dir/bin/kube-router" "$out/kube-router"
  # The container runtime (see containerd/tools.go).
  ctrd_version=$(awk '$1=="require" && $2=="github.com/containerd/containerd/v2"{print $3}' "$here/containerd/go.mod")
  ctrd_tags=-tags=no_btrfs,no_devmapper,no_zfs
  ctrd_dir="$cache_root/containerd-$ctrd_version-$(key "$ctrd_tags" "$here/containerd/go.mod" "$here/containerd/go.sum")"
  GOFLAGS=$ctrd_tags locked_build "$ctrd_dir" "$here/containerd" "-X github.com/containerd/containerd/v2/version.Version=$ctrd_version" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr
  # The DRA example driver's kubelet plugin (see dra/tools.go).
  dra_version=$(awk '$1=="require" && $2=="sigs.k8s.io/dra-example-driver"{print $3}' "$here/dra/go.mod")
  dra_dir="$cache_root/dra-example-driver-$dra_version-$(key "" "$here/dra/go.mod" "$here/dra/go.sum")"
  locked_build "$dra_dir" "$here/dra" "" sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin
  for b in "$ctrd_dir"/bin/* "$dra_dir"/bin/*; do ln -sfn "$b" "$out/$(basename "$b")"; done
fi
if $autoscaler; then
  karpenter_dir=$(clients_dir karpenter sigs.k8s.io/karpenter)
  locked_build "$karpenter_dir" "$clients" "" sigs.k8s.io/karpenter/kwok
  # go build names it after its package, kwok: the name of the other kwok.
  ln -sfn "$karpenter_dir/bin/kwok" "$out/karpenter"
fi

if $kueue; then
  kueue_dir=$(clients_dir kueue sigs.k8s.io/kueue)
  locked_build "$kueue_dir" "$clients" "" sigs.k8s.io/kueue/cmd/kueue
  if [ ! -f "$kueue_dir/manifests/.complete" ]; then
    src=$(cd "$clients" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
    rm -rf "$kueue_dir/manifests" && mkdir -p "$kueue_dir/manifests/crds"
    cp "$src"/config/components/crd/bases/*.yaml "$kueue_dir/manifests/crds/"
    cp "$src/config/components/rbac/role.yaml" "$kueue_dir/manifests/"
    touch "$kueue_dir/manifests/.complete"
  fi
  ln -sfn "$kueue_dir/bin/kueue" "$out/kueue"
  ln -sfn "$kueue_dir/manifests" "$out/../kueue-manifests"
fi

$peers || exit 0

# The control-plane benchmark's peer, with the CRD and ClusterRole of the same release.
locked_build "$mpiop_dir" "$mpiop_mod" "" github.com/kubeflow/mpi-operator/cmd/mpi-operator
if [ ! -f "$mpiop_dir/manifests/kubeflow.org_mpijobs.yaml" ]; then
  src=$(cd "$mpiop_mod" && go list -m -f '{{.Dir}}' github.com/kubeflow/mpi-operator)
  mkdir -p "$mpiop_dir/manifests"
  cp "$src/manifests/base/kubeflow.org_mpijobs.yaml" "$src/manifests/base/cluster-role.yaml" "$mpiop_dir/manifests/"
fi
ln -sfn "$mpiop_dir/bin/mpi-operator" "$out/mpi-operator"
ln -sfn "$mpiop_dir/manifests" "$out/../mpi-operator-manifests"
