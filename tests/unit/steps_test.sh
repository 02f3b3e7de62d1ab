#!/usr/bin/env bash
# scripts/steps.sh runs its steps in order, a @bg or @idle step beside the ones after it (in a
# session of its own; @idle niced, @bg not), stops at the first step that fails, fails when a
# background step failed, and stops the background steps of a failed run.  usage: steps_test.sh REPO
set -euo pipefail
repo=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/scripts"
cp "$repo/scripts/steps.sh" "$tree/scripts/"
# The make the steps run: each target writes what it ran as (its nice, its session) to out/TARGET.
cat > "$tree/fake-make" <<'EOF'
#!/usr/bin/env bash
target=${*: -1}
out=$(dirname "$0")/out
mkdir -p "$out"
echo "nice=$(ps -o ni= -p $$ | tr -d ' ') sid=$(ps -o sid= -p $$ | tr -d ' ')" > "$out/$target"
case $target in
  fail-once-long-bg-runs) for _ in $(seq 100); do [ -f "$out/long-bg" ] && exit 3; sleep 0.1; done; exit 3 ;;
  fail*) exit 3 ;;
  waits-for-bg) for _ in $(seq 100); do [ -f "$out/bg-started" ] && exit 0; sleep 0.1; done; exit 4 ;;
  bg-started) touch "$out/bg-started"; sleep 1 ;;
  long*) sleep 5; touch "$out/$target-done" ;;
esac
exit 0
EOF
chmod +x "$tree/fake-make"
steps() { MAKE="$tree/fake-make" "$tree/scripts/steps.sh" "$@" > "$tree/log" 2>&1; }
field() { sed -n "s/.*$2=\([0-9-]*\).*/\1/p" "$tree/out/$1"; }
fail() { echo "steps.sh: $*"; cat "$tree/log"; exit 1; }

# Order, lanes and what each runs as.
steps first bg-started@bg idle-one@idle waits-for-bg last || fail "a passing run failed"
for t in first bg-started idle-one waits-for-bg last; do [ -f "$tree/out/$t" ] || fail "$t did not run"; done
[ "$(field idle-one nice)" = 19 ] || fail "an @idle step ran at nice $(field idle-one nice), not 19"
own_nice=$(ps -o ni= -p $$ | tr -d ' ')  # make test runs this inside an @idle step: 19 there
[ "$(field bg-started nice)" = "$own_nice" ] || fail "a @bg step ran at nice $(field bg-started nice), not $own_nice"
[ "$(field bg-started sid)" != "$(field first sid)" ] || fail "a @bg step ran in the foreground's session"
[ "$(field idle-one sid)" != "$(field first sid)" ] || fail "an @idle step ran in the foreground's session"
grep -q "bg-started(bg)" "$tree/log" || fail "the table does not list the background step"

# A background step that fails fails the run, after the steps behind it ran.
rm -rf "$tree/out"
steps fail-bg@bg after && fail "a failed background step passed"
[ -f "$tree/out/after" ] || fail "a failed background step stopped the foreground"
grep -q "background make fail-bg failed (exit 3)" "$tree/log" || fail "the failed background step is not named"

# A foreground step that fails stops the run there and stops the background steps (it fails once
# the background step has begun: a loaded machine may start that one later).
rm -rf "$tree/out"
steps long-bg@bg fail-once-long-bg-runs never && fail "a failed step passed"
[ ! -f "$tree/out/never" ] || fail "the step after a failed one ran"
[ -f "$tree/out/long-bg" ] || fail "the background step did not start"
[ ! -f "$tree/out/long-bg-done" ] || fail "the background step was left to finish after the run failed"
echo "steps.sh: ok"
