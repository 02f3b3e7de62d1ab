#!/usr/bin/env bash
# make e2e: the kwok suite in parallel shards. Each shard is a fleet (cluster.sh fleets: a copy of
# the profile's kwok nodes, labelled valley.dev/fleet); ctest gives each test of valley_e2e_tests one
# fleet through its resource allocation (tests/e2e/support.h: e2e_fleet), and runs the tests marked
# RUN_SERIAL alone, on the cluster's own nodes. The fleets go again afterwards, pass or fail, so
# that what runs next (the demo, chaos, benchmarks) sees the cluster's own nodes only.
# E2E_LABELS widens the run to other suites' labels (make e2e-all: the real node's and the
# autoscaler's, whose tests hold no fleet: the CMake properties say what each may run beside), and
# E2E_JOBS is then how many tests run at once, the shards' included.
#   tests/e2e/run.sh BUILD_DIR [ctest args...]     E2E_SHARDS: how many fleets and tests at once (4)
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD_DIR [ctest args...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../cluster/cluster.sh
shards=${E2E_SHARDS:-4}
[[ $shards =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: E2E_SHARDS=$shards is not a count >= 1" >&2; exit 2; }
jobs=${E2E_JOBS:-$shards}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: E2E_JOBS=$jobs is not a count >= 1" >&2; exit 2; }
labels=${E2E_LABELS:-e2e}

trap '"$cluster" fleets 0 >/dev/null || echo "run.sh: the e2e fleets could not be removed (cluster.sh fleets 0)" >&2' EXIT
"$cluster" fleets "$shards"
spec=$build/e2e-fleets.json
printf '{"version": {"major": 1, "minor": 0}, "local": [{"fleets": [%s]}]}\n' \
  "$(seq -s, -f '{"id": "e2e_%g", "slots": 1}' 1 "$shards")" > "$spec"
cd "$build"
ctest --output-on-failure --no-tests=error -L "$labels" -j "$jobs" --resource-spec-file "$spec" "$@"
