# Valley developer interface (the house plan DESIGN.md, section 3). Everything a fresh machine needs is
# installed by these targets; Kubernetes binaries are cached in ~/.cache/valley (VALLEY_CACHE).
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Two builds: the shipped binaries (BUILD_DIR: optimized, what the images, the demo, chaos and the
# benchmarks run) and the tests (TEST_DIR: everything, under AddressSanitizer and
# UndefinedBehaviorSanitizer; the operator the tests start is this build's, sanitized too).
BUILD_DIR ?= build
TEST_DIR ?= build-sanitize
JOBS ?= $(shell nproc)
# CI builds with warnings as errors; so does everyone, so CI holds no surprises.
CMAKE_FLAGS ?= -DVALLEY_WERROR=ON
CTEST := ctest --output-on-failure --no-tests=error
CLUSTER := tests/cluster/cluster.sh
# The compiler cache (ccache, when installed): outside the clone, shared by every clone of the
# project (paths are taken relative to the clone, and the build directory's path is not hashed).
export CCACHE_DIR ?= $(or $(VALLEY_CACHE),$(HOME)/.cache/valley)/ccache
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
export CCACHE_MAXSIZE ?= 5G
# The test build's precompiled headers (included with -include, made moments before the sources
# that use them): ccache caches such compiles only when told the header's macros and times are fine.
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime

.PHONY: help deps build build-tests demo-binaries demo-go-binaries demo-story demo-clean unit unit-sanitize fuzz chaos chaos-smoke previous-operator integration monitoring lint-deploy cluster-binaries node-binaries bench-binaries e2e-nodes cluster-up cluster-down autoscaler-up autoscaler-down autoscaler-e2e node-up node-down real crds e2e e2e-all test demo bench bench-live bench-sweep bench-sweep-shared bench-knobs bench-smoke clean

help:
	@echo "make demo    local GPU cluster + Valley, and what happens to sample tasks"
	@echo "make test    everything: deps, build, unit tests (sanitized), e2e on a real control plane and a real node"
	@echo "other targets: deps build build-tests unit fuzz chaos chaos-smoke integration cluster-up cluster-down e2e bench bench-live bench-sweep clean"

deps:
	@scripts/deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS) -DVALLEY_TESTS=OFF

# The shipped binaries, the benchmarks and the chaos driver; no tests (they are make build-tests').
build: $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Every test and the programs they start, sanitized, unoptimized, with line tables only (what a
# sanitizer's report needs) and precompiled headers: each test source is compiled once, here only.
build-tests:
	cmake -S . -B $(TEST_DIR) -G Ninja $(CMAKE_FLAGS) -DVALLEY_SANITIZE=ON -DVALLEY_TESTS=ON -DVALLEY_PCH=ON \
	  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 >/dev/null
	cmake --build $(TEST_DIR) -j $(JOBS) --target valley_tests

# Each suite's scratch, gtest's TempDir (the logs of the operators and programs its tests start,
# their kubeconfigs, the real node's data directories), is $(TEST_DIR)/test-tmp/SUITE, emptied when
# the suite starts: what a failed run leaves stays there to read until the suite runs again, and
# nothing piles up in /tmp (a shared machine's disk filled with the logs of earlier runs).
suite_tmp = rm -rf $(TEST_DIR)/test-tmp/$(1) && mkdir -p $(TEST_DIR)/test-tmp/$(1) && export TEST_TMPDIR=$(abspath $(TEST_DIR))/test-tmp/$(1)

# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, leaks included, and the fuzz
# targets' seeded replays among them (the short version of make fuzz).
unit: build-tests
	$(call suite_tmp,unit) && cd $(TEST_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(CTEST) -j $(JOBS) -L unit
unit-sanitize: unit  # the unit tests have one build, sanitized

# libFuzzer targets (clang): every parser of untrusted text, 15 s each; FUZZ_SECONDS=600 make fuzz for
# the long run, FUZZ_TARGETS="spec yaml_json" for some. Not in make test, whose unit runs replay each
# target's corpus and seeded mutations of it (a second compiler's build of the tree is 10 minutes cold).
fuzz:
	@tests/fuzz/run.sh

# Real programs beside the build, no cluster: the S3 store against versitygw, the MPI workload.
integration: build-tests cluster-binaries
	$(call suite_tmp,integration) && cd $(TEST_DIR) && $(CTEST) -L integration

cluster-binaries:
	@tests/cluster/build-binaries.sh

# What the real node and the autoscaler need besides the control plane (make real and make
# autoscaler-up build theirs when missing; make test builds it all in the background from its first
# step, and the benchmarks' peers later, with bench-binaries).
node-binaries: cluster-binaries
	@tests/cluster/build-binaries.sh --node --autoscaler

# The benchmarks' peers (the Kubeflow MPI Operator, Kueue) as well: only the benchmarks need them.
bench-binaries:
	@tests/cluster/build-binaries.sh --bench-peers

cluster-up: cluster-binaries
	@$(CLUSTER) up

cluster-down:
	@scripts/operator.sh stop
	@pkill -f "[v]ersitygw --access valley-demo" 2>/dev/null || true  # the demo's S3 store ([v]: not this shell)
	@pkill -f "[v]ersitygw --access valley-real" 2>/dev/null || true  # and the real node's
	@$(CLUSTER) down

# The real node (tests/cluster/node.bash): containerd, kubelet and CoreDNS on this machine, images
# built locally from deploy/Dockerfile and deploy/examples/train/Dockerfile. Needs a Valley build.
node-up: build crds
	@VALLEY_BUILD_DIR=$(abspath $(BUILD_DIR)) $(CLUSTER) node-up

node-down:
	@$(CLUSTER) node-down

# End-to-end tests on the real node: real containers, real MPI, real S3 (label "real"). The node
# is removed afterwards, pass or fail, so the tests after it see only kwok nodes.
# What follows a run on the real node ($$rc its status): the node's diagnosis if it failed, then the node goes.
node_after = [ $$rc -eq 0 ] || $(CLUSTER) node-diagnose; $(CLUSTER) node-down
real: build-tests node-up
	@scripts/operator.sh stop
	@$(call suite_tmp,real) && cd $(TEST_DIR) && $(CTEST) -L real; rc=$$?; cd $(CURDIR); $(node_after); exit $$rc

# Valley's CustomResourceDefinitions, installed and Established.
crds: cluster-up
	@.valley/bin/kubectl --kubeconfig .valley/kubeconfig apply --server-side --force-conflicts -k crds/ >/dev/null
	@# Polled, not `kubectl wait`: a CRD created a moment ago may read status.conditions null, which
	@# kubectl wait reports as an error instead of waiting.
	@for i in $$(seq 60); do \
	  established=$$(.valley/bin/kubectl --kubeconfig .valley/kubeconfig get crd trainingtasks.valley.dev \
	    pricingpolicies.valley.dev tenants.valley.dev \
	    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Established")].status}{" "}{end}' 2>/dev/null); \
	  [ "$$established" = "True True True " ] && exit 0; sleep 1; \
	done; echo "crds: not Established within 60 s" >&2; exit 1

# The tests start their own operators and count GPUs: a demo left running would take both, so what
# the demo left goes first. Other finished tasks left in the cluster hold nothing and stay.
# In parallel shards, a fleet of kwok nodes each (tests/e2e/run.sh; E2E_SHARDS, default 3).
e2e: build-tests crds demo-clean
	@$(call suite_tmp,e2e) && tests/e2e/run.sh $(TEST_DIR)

# The three cluster suites in one ctest run, side by side: the kwok shards, the real node's tests
# (in turn on its GPUs) and the autoscaler's (each on a NodePool of its own), the tests that must run
# alone alone. What make test runs: each suite mostly waits (on the API server, on real containers,
# on Karpenter), so together they take little more than the longest. The node and Karpenter go
# afterwards, pass or fail.
E2E_ALL_JOBS ?= 7
# (demo-clean leaves the node make test brought up beside its build.)
e2e-all: export VALLEY_KEEP_REAL_NODE := 1
e2e-all: build-tests crds demo-clean node-up autoscaler-up
	@scripts/operator.sh stop
	@$(call suite_tmp,e2e) && E2E_LABELS='^(e2e|real|autoscaler)$$' E2E_JOBS=$(E2E_ALL_JOBS) tests/e2e/run.sh $(TEST_DIR); rc=$$?; \
	  $(node_after); $(CLUSTER) autoscaler-down; exit $$rc

# The real node and Karpenter up, before the cluster suites need them: make test starts this in the
# background once the shipped binaries (the node's images) are built, beside the test build; e2e-all
# then finds both up (cluster.sh's lock makes it wait while they come up).
e2e-nodes: node-up autoscaler-up

# Karpenter on the local control plane (tests/cluster/karpenter): its kwok provider buys nodes for
# pending pods and removes idle ones; the autoscaler suite (label "autoscaler") runs against it, its
# tests side by side (each buys from a NodePool of its own; they mostly wait on Karpenter).
AUTOSCALER_JOBS ?= 8
autoscaler-up: crds
	@tests/cluster/cluster.sh autoscaler-up
autoscaler-down:
	@tests/cluster/cluster.sh autoscaler-down
autoscaler-e2e: build-tests autoscaler-up
	@$(call suite_tmp,autoscaler) && cd $(TEST_DIR) && $(CTEST) -j $(AUTOSCALER_JOBS) -L autoscaler; rc=$$?; cd $(CURDIR) && $(CLUSTER) autoscaler-down; exit $$rc

# The chaos campaign (tests/chaos): two operator replicas under faults, checked by an independent
# checker; the full run (20 minutes of faults) writes bench/results/chaos.json. CHAOS_SEED replays a run.
CHAOS_SEED ?= 1
CHAOS_RUN = previous=$$(scripts/previous-operator.sh $(BUILD_DIR)) && \
  $(BUILD_DIR)/bin/valley-chaos --seed=$(CHAOS_SEED) --previous-operator=$$previous
# Both upgrade from the previous release's operator to this build and downgrade back mid-run
# (tests/upgrade/previous-release; scripts/previous-operator.sh builds it once per release).
chaos: build crds
	@scripts/operator.sh stop
	$(CHAOS_RUN) --seconds=$${CHAOS_SECONDS:-1200} --out=bench/results/chaos.json

# Part of make test: three minutes of faults at a fixed seed, then the checker.
chaos-smoke: build crds
	@scripts/operator.sh stop
	$(CHAOS_RUN) --seconds=180 --out=$(BUILD_DIR)/chaos-smoke.json

previous-operator:
	@scripts/previous-operator.sh $(BUILD_DIR)

# The shipped alerts and dashboard: promtool check/test rules, and the dashboard's conventions.
monitoring:
	@tests/monitoring/run.sh

# The manifests as a platform team checks them: helm lint, kubeconform on the chart, base, overlays
# and samples (tests/deploy/lint.sh).
lint-deploy: cluster-binaries
	@tests/deploy/lint.sh

# One step after another (scripts/steps.sh), with the seconds each took at the end, some in the
# background from there on. Sharing the CPU evenly with the steps in front (@bg: they wait on
# downloads and links): the Go builds the cluster suites need (Kubernetes, the real node, Karpenter)
# from the start, the real node and Karpenter brought up as soon as they and the node's images can
# be, until integration and e2e-all wait for them, and the benchmarks' peers (the MPI
# Operator, Kueue) beside the cluster suites, until bench-smoke does. On the CPU the cluster suites
# leave idle (@idle: they wait on the API server, real containers and Karpenter, and slow down with
# less): the unit tests, and the previous release's operator, until chaos-smoke waits for it.
TEST_STEPS := deps node-binaries@bg build e2e-nodes@bg build-tests unit@idle integration previous-operator@idle bench-binaries@bg \
  monitoring lint-deploy e2e-all chaos-smoke bench-smoke
test:
	@MAKE="$(MAKE)" STEPS_BG_MAKEFLAGS="-o build -o build-tests -o $(BUILD_DIR)/build.ninja" scripts/steps.sh $(TEST_STEPS)

# The demo needs Valley's binaries, not its tests: about half the compile time of a fresh machine.
# The Go builds (the control plane's, then the real node's) start beside the C++ compile: their
# module downloads wait on the network, not the CPU, and the story's real node needs them last.
DEMO_STEPS := deps demo-go-binaries@bg demo-binaries crds demo-story
demo:
	@MAKE="$(MAKE)" scripts/steps.sh $(DEMO_STEPS)

demo-binaries: $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target valley-operator valleyctl valley-io valley-train

demo-go-binaries:
	@tests/cluster/build-binaries.sh --node

demo-story:
	@scripts/demo.sh

# What make demo left on the cluster (its labelled namespaces, Tenants, PricingPolicy, its operator,
# S3 stores and real node); the cluster stays up.
demo-clean:
	@scripts/demo-clean.sh

bench: deps build bench-binaries crds
	@bench/run.sh

# The economics sweep (issue 41): 33 trace slices x naive, backfill, valley-v2, valley, against the
# LP bound; the distribution of each figure in bench/results/sweep/sweep.md. Then the same slices on
# capacity bought from zero (issue 72: bench/sim/inputs/cloud.yaml), the autoscaled backfill against
# valley: bench/results/sweep-cloud/cloud.md. And Valley against the peer modelled as real Kueue runs
# MPIJobs (valley-sim --peer kueue, what bench/live checks against live Kueue): bench/results/sweep-kueue.
bench-sweep: deps build
	@bench/sim/sweep.sh
	@SWEEP_CLOUD=bench/sim/inputs/cloud.yaml bench/sim/sweep.sh bench/results/sweep-cloud
	@SWEEP_POLICIES=backfill,valley bench/sim/sweep.sh bench/results/sweep-kueue --peer kueue

# What the planner's aging step moves (issue 73): Valley over the sweep's contended Philly slices with
# aging off and at an hour, beside bench-sweep's Valley at the default 10 minutes; the scheduler's
# KPIs, cost and JCT of each in bench/results/knobs/knobs.md.
bench-knobs: deps build
	@bench/sim/knobs.sh

# The same sweep on cluster-shared.yaml: a quarter of the spot A100s time-sliced two ways, where jobs
# that allow sharing pair by Gavel's measured rates (issue 41's sharing lever).
bench-sweep-shared: deps build
	@SWEEP_CLUSTER=bench/sim/inputs/cluster-shared.yaml SWEEP_SPOT=bench/sim/inputs/spot-shared.yaml bench/sim/sweep.sh bench/results/sweep-shared

# Live economics (issue 75): trace slices compressed in time through real Kueue and through Valley
# on the local cluster, metered independently, beside valley-sim's prediction of both
# (bench/results/live/live.md), on the local cluster (brought up if it is not).
bench-live: deps build bench-binaries cluster-up crds
	@bench/live/run.sh

# A tiny run of each benchmark program (CI): that they work end to end, never how fast.
bench-smoke: build bench-binaries crds
	@bench/smoke.sh

clean:
	rm -rf $(BUILD_DIR) $(TEST_DIR) build-fuzz
	git worktree prune  # the previous release's source lived in $(BUILD_DIR)/previous
