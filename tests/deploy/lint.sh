#!/usr/bin/env bash
# What a platform team runs on Valley's manifests before installing them, on every shipped form:
# `helm lint --strict` on the chart, then kubeconform (strict: unknown fields are errors) on the
# chart rendered with its defaults and with every option on, on deploy/base and both overlays as
# kustomize builds them, and on the samples and opt-in policies. The schemas come from what the
# project pins (tests/deploy/schemas.py): the Kubernetes release the local cluster runs, Valley's
# CRDs, and the Prometheus Operator's CRDs for ServiceMonitor and PrometheusRule.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=.valley/bin
out=build/deploy-lint
rm -rf "$out" && mkdir -p "$out"
kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2}' tests/cluster/k8s/go.mod)
k8s_src=$(cd tests/cluster/k8s && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
# Only its CRD files are used (nothing is built from it): pinned by version and checksum.
promop_module=github.com/prometheus-operator/prometheus-operator
promop_version=v0.85.0
promop_sum="h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s="
promop_json=$(cd / && GOFLAGS=-mod=mod go mod download -json "$promop_module@$promop_version")
promop_dir=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["Dir"] if d.get("Sum")==sys.argv[2] else "")' "$promop_json" "$promop_sum")
[ -n "$promop_dir" ] || { echo "lint-deploy: $promop_module@$promop_version is not the pinned $promop_sum" >&2; exit 1; }
promop_crds="$promop_dir/example/prometheus-operator-crd"
python3 tests/deploy/schemas.py "$out/schemas" "$k8s_src/api/openapi-spec/swagger.json" crds/*.yaml \
  "$promop_crds/monitoring.coreos.com_servicemonitors.yaml" "$promop_crds/monitoring.coreos.com_prometheusrules.yaml"

chart=deploy/helm/valley
# Helm warns that the chart's CRDs and shipped manifests are symbolic links (one source with
# crds/ and deploy/): expected, so those lines are dropped.
quiet() { "$@" 2> >(grep -v "found symbolic link in path" >&2); }
quiet "$bin/helm" lint --strict --kube-version "$kube_version" "$chart"
quiet "$bin/helm" template valley "$chart" -n valley-system --kube-version "$kube_version" --include-crds > "$out/helm-defaults.yaml"
quiet "$bin/helm" template team "$chart" -n ml-platform --kube-version "$kube_version" \
  --set serviceMonitor.enabled=true,prometheusRule.enabled=true,pricingPolicy.create=true,podSecurity=Restricted \
  --set networkPolicy.enabled=true,podDisruptionBudget.enabled=true,extraArgs[0]=--cost-interval=1m \
  --set gpuHealth.prometheusUrl=http://prometheus.monitoring:9090 \
  --set 'topologyLevels[0].name=rack,topologyLevels[0].label=topology.example.com/rack' \
  --set 'draDrivers[0].driver=gpu.example.com,draDrivers[0].vendor=nvidia,draDrivers[0].deviceClass=gpu.example.com' > "$out/helm-all.yaml"
for k in base overlays/dev overlays/production; do
  "$bin/kubectl" kustomize "deploy/$k" > "$out/kustomize-${k//\//-}.yaml"
done
"$bin/kubeconform" -strict -summary -schema-location "$out/schemas/{{.ResourceKind}}{{.KindSuffix}}.json" \
  "$out"/helm-*.yaml "$out"/kustomize-*.yaml deploy/samples/*.yaml deploy/examples/*/trainingtask.yaml \
  deploy/policies/require-tenant.yaml deploy/policies/valley-pods.yaml
