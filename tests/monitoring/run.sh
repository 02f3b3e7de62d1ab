#!/usr/bin/env bash
# The shipped monitoring, checked by Prometheus's own tool (promtool, Debian's prometheus package):
# the PrometheusRule's groups parse and their expressions are valid (check rules), and the alerts
# fire, or stay silent, on the series in alerts_test.yaml (test rules). The Grafana dashboard is
# checked for what a dashboard must keep (tests/monitoring/dashboard_check.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/monitoring
mkdir -p "$out"
# promtool reads plain rule files: the PrometheusRule's spec is one.
python3 - deploy/components/monitoring/prometheusrule.yaml "$out/rules.yaml" <<'PY'
import sys, yaml
rule = yaml.safe_load(open(sys.argv[1]))
assert rule["kind"] == "PrometheusRule", rule["kind"]
yaml.safe_dump(rule["spec"], open(sys.argv[2], "w"), sort_keys=False)
PY
cp tests/monitoring/alerts_test.yaml "$out/"
promtool check rules "$out/rules.yaml"
(cd "$out" && promtool test rules alerts_test.yaml)
python3 tests/monitoring/dashboard_check.py deploy/grafana/valley-dashboard.json
echo "monitoring: rules, alert tests and dashboard ok"
