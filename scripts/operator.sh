#!/usr/bin/env bash
# Runs the locally built valley-operator against the local cluster in the background (for the demo
# and for trying things by hand): scripts/operator.sh start|stop|status. Logs: .valley/logs/operator.log.
# scripts/operator.sh release NAMESPACE removes Valley's finalizers (valley.dev/accounting from the
# namespace's pods, valley.dev/outputs from its TrainingTasks), for tearing it down when no operator
# runs to do it.
# Extra flags in VALLEY_OPERATOR_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
pidfile=.valley/run/operator.pid
case ${1:-} in
  start)
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then echo "operator: running (pid $(cat "$pidfile"))"; exit 0; fi
    mkdir -p .valley/run .valley/logs
    # shellcheck disable=SC2086
    setsid build/bin/valley-operator --kubeconfig .valley/kubeconfig --leader-elect-namespace=kube-system \
      ${VALLEY_OPERATOR_ARGS:-} >>.valley/logs/operator.log 2>&1 < /dev/null &
    echo $! > "$pidfile"
    echo "operator: started (pid $!), log .valley/logs/operator.log"
    ;;
  stop)
    if [ -f "$pidfile" ]; then
      p=$(cat "$pidfile")
      kill -TERM "$p" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null || true
      rm -f "$pidfile"
    fi
    ;;
  release)
    ns=${2:?usage: scripts/operator.sh release NAMESPACE}
    k() { .valley/bin/kubectl --kubeconfig .valley/kubeconfig "$@"; }
    k get namespace "$ns" >/dev/null 2>&1 || exit 0
    release() { # kind finalizer
      local name idx
      for name in $(k -n "$ns" get "$1" -o jsonpath='{range .items[?(@.metadata.finalizers)]}{.metadata.name}{"\n"}{end}' 2>/dev/null); do
        k -n "$ns" get "$1" "$name" -o jsonpath='{.metadata.finalizers}' | grep -q "$2" || continue
        idx=$(k -n "$ns" get "$1" "$name" -o json | python3 -c "import json,sys; print(json.load(sys.stdin)['metadata']['finalizers'].index('$2'))")
        # test first: a finalizer list that changed meanwhile is left for the next release
        k -n "$ns" patch "$1" "$name" --type=json \
          -p "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/$idx\",\"value\":\"$2\"},{\"op\":\"remove\",\"path\":\"/metadata/finalizers/$idx\"}]" >/dev/null || true
      done
    }
    release pods valley.dev/accounting
    release trainingtasks.valley.dev valley.dev/outputs
    ;;
  status) [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && echo "operator: running" || { echo "operator: stopped"; exit 1; } ;;
  *) echo "usage: scripts/operator.sh start|stop|status|release NAMESPACE" >&2; exit 2 ;;
esac
