#!/usr/bin/env bash
# Runs the locally built valley-operator against the local cluster in the background (for the demo
# and for trying things by hand): scripts/operator.sh start|stop|status. Logs: .valley/logs/operator.log.
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
  status) [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && echo "operator: running" || { echo "operator: stopped"; exit 1; } ;;
  *) echo "usage: scripts/operator.sh start|stop|status" >&2; exit 2 ;;
esac
