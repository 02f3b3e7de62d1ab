#!/usr/bin/env bash
# `make demo-clean`: removes what `make demo` left on the local cluster, and leaves the cluster up.
# Everything the demo makes carries the label valley.dev/demo=true (namespaces, Tenants, its
# PricingPolicy); the operator it started, its S3 stores and the real node are stopped. Namespaces
# are released first (scripts/operator.sh release): with no operator running, Valley's finalizers
# would keep them Terminating. `make e2e` runs this first. Does nothing when the cluster is down.
# VALLEY_KEEP_REAL_NODE=1 (make e2e-all, which runs on it next) leaves the real node up: the demo's
# pods there go with its namespaces, and make test brought the node up beside its build.
set -euo pipefail
cd "$(dirname "$0")/.."
K() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
scripts/operator.sh stop
pkill -f "[v]ersitygw --access valley-demo" 2>/dev/null || true
pkill -f "[v]ersitygw --access valley-real" 2>/dev/null || true
K get --raw /readyz >/dev/null 2>&1 || exit 0
if [ "${VALLEY_KEEP_REAL_NODE:-}" != 1 ] && [ -x tests/cluster/cluster.sh ] && tests/cluster/cluster.sh node-status >/dev/null 2>&1; then
  tests/cluster/cluster.sh node-down >/dev/null
fi
# The labelled ones, and by name those an older demo made before it labelled them.
namespaces=$( { K get namespaces -l valley.dev/demo=true -o name || true
                for n in valley-demo valley-demo-lab-a valley-demo-lab-b valley-demo-real; do
                  K get namespace "$n" -o name 2>/dev/null || true; done; } | sed 's|^namespace/||' | sort -u)
for n in $namespaces; do
  scripts/operator.sh release "$n"
  K delete namespace "$n" --ignore-not-found --wait=false >/dev/null
done
K delete tenants,pricingpolicies -l valley.dev/demo=true --ignore-not-found >/dev/null
for n in $namespaces; do K wait --for=delete "namespace/$n" --timeout=120s >/dev/null 2>&1 || true; done
[ -z "$namespaces" ] || echo "demo-clean: removed $(echo $namespaces | wc -w) namespace(s): $(echo $namespaces)"
