#!/usr/bin/env bash
# scripts/layers.py finds an arrow up: between layers, and among the cores (a lower core including a
# higher one), and passes a tree whose arrows point down.  usage: layers_test.sh REPO
set -euo pipefail
layers=$1/scripts/layers.py
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
put() { mkdir -p "$tree/$(dirname "$1")"; printf '#include "%s"\n' "$2" > "$tree/$1"; }
put controllers/planner/plan.h controllers/cost/policy.h
put controllers/cost/policy.h controllers/gpu/resources.h
put controllers/inputs/snapshot.h controllers/planner/plan.h
python3 "$layers" "$tree" >/dev/null || { echo "a tree pointing down was refused"; exit 1; }
put controllers/cost/engine.cc controllers/planner/plan.h
out=$(python3 "$layers" "$tree") && { echo "cost including planner passed"; exit 1; }
grep -q "a core cost file includes controllers/planner/plan.h, a core planner file" <<<"$out" || { echo "$out"; exit 1; }
rm "$tree/controllers/cost/engine.cc"
put controllers/api/spec.h controllers/task/planning_loop.h
python3 "$layers" "$tree" >/dev/null && { echo "API types including a loop passed"; exit 1; }
echo "layers.py: ok"
