#!/usr/bin/env bash
# Builds valley-operator as of the previous release (tests/upgrade/previous-release) under
# $BUILD_DIR/previous, for the upgrade and downgrade faults of the chaos campaign, and prints the
# path of the binary, kept in the cache outside the clone beside the Kubernetes builds
# ($VALLEY_CACHE, default ~/.cache/valley) by release commit: built once per machine, not per clone.
# The source is a detached git worktree inside the build directory (the clone's own working tree is
# untouched), built with the compiler cache of `make build`.
#   scripts/previous-operator.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath -m "${1:-build}")
commit=$(grep -v '^#' tests/upgrade/previous-release | tr -d '[:space:]')
out="$build_dir/previous"
binary="$out/src/build/bin/valley-operator"
cached="${VALLEY_CACHE:-$HOME/.cache/valley}/previous-operator-${commit:0:12}"
# One build at a time (make test starts it in the background; chaos-smoke's call waits for it here).
mkdir -p "$(dirname "$cached")"
exec 9>"$cached.lock"
flock 9
if [ -f "$cached/.complete" ]; then
  echo "$cached/valley-operator"
  exit 0
fi
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "previous-operator: release $commit is not in this clone; fetching it" >&2
  git fetch --quiet origin "$commit" >&2 || {
    echo "previous-operator: cannot get release $commit (a shallow clone without its origin?): git fetch origin $commit" >&2
    exit 1
  }
fi
rm -rf "$out"
git worktree prune
mkdir -p "$out"
git worktree add --quiet --detach --force "$out/src" "$commit" >&2  # its HEAD names the release in the binary
echo "previous-operator: building valley-operator at ${commit:0:12} in $out" >&2
# Unoptimized, without debug information and a batch of sources at a time (a unity build, which
# the release compiles cleanly): it only has to behave, and a clean machine compiles it in about a
# third of the time (69 s instead of 189 alone on two cores).
cmake -S "$out/src" -B "$out/src/build" -G Ninja ${CMAKE_FLAGS:--DVALLEY_WERROR=ON} -DVALLEY_E2E=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 >&2
cmake --build "$out/src/build" -j "${JOBS:-$(nproc)}" --target valley-operator >&2
rm -rf "$cached.tmp" && mkdir -p "$cached.tmp"
cp "$binary" "$cached.tmp/valley-operator"
touch "$cached.tmp/.complete"
rm -rf "$cached" && mv "$cached.tmp" "$cached"
echo "$cached/valley-operator"
