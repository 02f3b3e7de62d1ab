#!/usr/bin/env bash
# Builds valley-operator as of the previous release (tests/upgrade/previous-release) under
# $BUILD_DIR/previous, for the upgrade and downgrade faults of the chaos campaign, and prints the
# binary's path. The source is exported from git into the build directory (never the clone's
# working tree); it builds with the same flags and compiler cache as `make build`, and its
# directories sit where the clone's do relative to CCACHE_BASEDIR's rewriting, so every file that did
# not change since that release is a cache hit. Built once per release commit.
#   scripts/previous-operator.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath -m "${1:-build}")
commit=$(grep -v '^#' tests/upgrade/previous-release | tr -d '[:space:]')
out="$build_dir/previous"
binary="$out/src/build/bin/valley-operator"
if [ -x "$binary" ] && [ "$(cat "$out/commit" 2>/dev/null)" = "$commit" ]; then
  echo "$binary"
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
cmake -S "$out/src" -B "$out/src/build" -G Ninja ${CMAKE_FLAGS:--DVALLEY_WERROR=ON} -DVALLEY_E2E=OFF >&2
cmake --build "$out/src/build" -j "${JOBS:-$(nproc)}" --target valley-operator >&2
echo "$commit" > "$out/commit"
echo "$binary"
