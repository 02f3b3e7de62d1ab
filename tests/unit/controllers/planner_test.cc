#include "controllers/planner/planner.h"

#include <gtest/gtest.h>

#include <random>

namespace valley::planner {
namespace {
using namespace std::chrono_literals;

const SystemTime kNow = SystemTime(std::chrono::seconds(1795316645));

Node node(const std::string& name, const std::string& vendor, const std::string& cls, std::map<std::string, int64_t> free) {
  Node n;
  n.name = name;
  n.vendor = vendor;
  n.capacity_class = cls;
  n.free = free;
  n.capacity = std::move(free);
  return n;
}
Node nvidia(const std::string& name, int gpus, const std::string& cls = "on-demand") {
  return node(name, "nvidia", cls, {{"nvidia.com/gpu", gpus}});
}
Node amd(const std::string& name, int gpus) { return node(name, "amd", "on-demand", {{"amd.com/gpu", gpus}}); }

Task task(const std::string& key, int priority, int min, int max, int gpu_milli = 1000) {
  Task t;
  t.key = key;
  t.priority = priority;
  t.min_workers = min;
  t.max_workers = max;
  t.gpu_milli = gpu_milli;
  t.created = kNow - 60s;
  return t;
}

// The planner as before growth had to pay: every task grows to max whenever GPUs are free. Most
// tests here are about admission, shrinking and preemption mechanics, which that makes plain.
std::vector<Decision> greedy_plan(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now, Config c = {}) {
  c.min_marginal_efficiency = 0;
  return plan(nodes, tasks, now, c);
}

// Turns a decision into the task's next state, as the controller would after carrying it out.
Task apply(Task t, const Decision& d, SystemTime when) {
  bool resized = t.admitted && d.workers != static_cast<int>(t.workers.size());
  t.admitted = d.workers > 0;
  t.workers = d.placement;
  if (resized) t.last_resize = when;
  return t;
}

const Decision& find(const std::vector<Decision>& ds, const std::string& key) {
  for (const auto& d : ds)
    if (d.key == key) return d;
  throw std::runtime_error("no decision for " + key);
}

TEST(Planner, AdmitsAtMaxWhenItAllFitsOnFewestNodes) {
  auto ds = greedy_plan({nvidia("n1", 8), nvidia("n2", 8), nvidia("n3", 8)}, {task("a", 0, 2, 16)}, kNow);
  EXPECT_EQ(ds[0].action, Action::Admit);
  EXPECT_EQ(ds[0].workers, 16);
  std::set<std::string> nodes;
  for (const auto& w : ds[0].placement) nodes.insert(w.node);
  EXPECT_EQ(nodes.size(), 2u);  // 16 one-GPU workers on two 8-GPU nodes, not spread over three
}

TEST(Planner, GangIsAllOrNothing) {
  auto ds = greedy_plan({nvidia("n1", 8), nvidia("n2", 8), nvidia("n3", 8), nvidia("n4", 8)},
                 {task("a", 0, 20, 20), task("b", 0, 20, 20)}, kNow);
  EXPECT_EQ(find(ds, "a").action, Action::Admit);
  const Decision& b = find(ds, "b");
  EXPECT_EQ(b.action, Action::Wait);
  EXPECT_TRUE(b.placement.empty());
  EXPECT_EQ(b.queue_position, 1);
  EXPECT_EQ(b.reason, "InsufficientCapacity: needs 20 GPUs (20 workers x 1), 12 free");
}

TEST(Planner, HigherPriorityShrinksLowerThenLowerGrowsBack) {
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8), nvidia("n3", 8), nvidia("n4", 8)};
  Task a = task("a", 10, 2, 32);
  auto d1 = greedy_plan(nodes, {a}, kNow);
  ASSERT_EQ(d1[0].workers, 32);
  a = apply(a, d1[0], kNow);

  Task b = task("b", 50, 8, 8);
  auto d2 = greedy_plan(nodes, {a, b}, kNow + 1h);
  EXPECT_EQ(find(d2, "a").action, Action::Shrink);
  EXPECT_EQ(find(d2, "a").workers, 24);  // gave up exactly what b needs, not more
  EXPECT_EQ(find(d2, "b").action, Action::Admit);
  EXPECT_EQ(find(d2, "b").workers, 8);
  a = apply(a, find(d2, "a"), kNow + 1h);

  // b finished: a grows back once its resize interval has passed.
  EXPECT_EQ(greedy_plan(nodes, {a}, kNow + 1h + 10s)[0].action, Action::Keep);
  auto d3 = greedy_plan(nodes, {a}, kNow + 2h);
  EXPECT_EQ(d3[0].action, Action::Grow);
  EXPECT_EQ(d3[0].workers, 32);
}

TEST(Planner, PreemptsOnlyWhenShrinkingIsNotEnoughAndReduceCostFirst) {
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8)};
  Task cheap = task("cheap", 10, 4, 4);
  cheap.reduce_cost = true;
  Task normal = task("normal", 10, 4, 4);
  cheap = apply(cheap, greedy_plan(nodes, {cheap}, kNow)[0], kNow);
  auto both = greedy_plan(nodes, {cheap, normal}, kNow);
  normal = apply(normal, find(both, "normal"), kNow);
  ASSERT_EQ(cheap.workers.size(), 4u);
  ASSERT_EQ(normal.workers.size(), 4u);
  // 8 of 16 GPUs free. A 4-worker important task fits without touching anyone.
  auto fits = greedy_plan(nodes, {cheap, normal, task("vip", 90, 4, 4)}, kNow);
  EXPECT_EQ(find(fits, "cheap").action, Action::Keep);
  EXPECT_EQ(find(fits, "normal").action, Action::Keep);
  // Both are at min, so 12 workers need a preemption: the reduceCost task goes first, and alone.
  auto ds = greedy_plan(nodes, {cheap, normal, task("vip", 90, 12, 12)}, kNow);
  EXPECT_EQ(find(ds, "cheap").action, Action::Preempt);
  EXPECT_EQ(find(ds, "normal").action, Action::Keep);
  EXPECT_EQ(find(ds, "vip").action, Action::Admit);
  // 16 need both.
  auto all = greedy_plan(nodes, {cheap, normal, task("vip", 90, 16, 16)}, kNow);
  EXPECT_EQ(find(all, "cheap").action, Action::Preempt);
  EXPECT_EQ(find(all, "normal").action, Action::Preempt);
  EXPECT_NE(find(all, "normal").reason.find("preempted for vip"), std::string::npos);
}

TEST(Planner, TasksOnGpusTheNewcomerCannotUseAreLeftAlone) {
  std::vector<Node> nodes = {nvidia("n1", 8), amd("m1", 8)};
  nodes[0].price_micros = 2'400'000;
  nodes[1].price_micros = 1'600'000;
  Task on_amd = task("amd-job", 10, 2, 8);
  on_amd.amd_support = on_amd.reduce_cost = true;
  Task on_nv = task("nv-job", 20, 2, 8);
  auto first = greedy_plan(nodes, {on_amd, on_nv}, kNow);
  on_amd = apply(on_amd, find(first, "amd-job"), kNow);
  on_nv = apply(on_nv, find(first, "nv-job"), kNow);
  ASSERT_EQ(on_amd.workers.size(), 8u);
  ASSERT_EQ(on_nv.workers.size(), 8u);
  auto ds = greedy_plan(nodes, {on_amd, on_nv, task("vip", 90, 4, 4)}, kNow);
  EXPECT_EQ(find(ds, "amd-job").action, Action::Keep);  // cheapest, but its GPUs are AMD
  EXPECT_EQ(find(ds, "nv-job").action, Action::Shrink);
  EXPECT_EQ(find(ds, "nv-job").workers, 4);
}

TEST(Planner, EqualPriorityNeverPreempts) {
  std::vector<Node> nodes = {nvidia("n1", 8)};
  Task a = apply(task("a", 10, 8, 8), greedy_plan(nodes, {task("a", 10, 8, 8)}, kNow)[0], kNow);
  auto ds = greedy_plan(nodes, {a, task("b", 10, 1, 1)}, kNow);
  EXPECT_EQ(find(ds, "a").action, Action::Keep);
  EXPECT_EQ(find(ds, "b").action, Action::Wait);
}

TEST(Planner, AmdNodesOnlyForAmdSupportAndGangsNeverMixVendors) {
  std::vector<Node> nodes = {nvidia("n1", 4), amd("m1", 8)};
  EXPECT_EQ(greedy_plan(nodes, {task("a", 0, 6, 6)}, kNow)[0].action, Action::Wait);
  Task a = task("a", 0, 6, 6);
  a.amd_support = true;
  auto ds = greedy_plan(nodes, {a}, kNow);
  ASSERT_EQ(ds[0].action, Action::Admit);
  for (const auto& w : ds[0].placement) EXPECT_EQ(w.gpu_resource, "amd.com/gpu");
  // 4 NVIDIA + 8 AMD = 12 GPUs, but a 10-worker gang cannot span both.
  Task big = task("big", 0, 10, 10);
  big.amd_support = true;
  EXPECT_EQ(greedy_plan(nodes, {big}, kNow)[0].action, Action::Wait);
}

TEST(Planner, AmdTasksGoToAmdWhenItIsCheaper) {
  Task a = task("a", 0, 2, 2);
  a.amd_support = a.reduce_cost = true;
  Node n1 = nvidia("n1", 8), m1 = amd("m1", 8);
  n1.price_micros = 2'400'000;
  m1.price_micros = 1'600'000;
  auto ds = greedy_plan({n1, m1}, {a}, kNow);
  EXPECT_EQ(ds[0].placement[0].node, "m1");
}

TEST(Planner, FractionalGpusUseTheSmallestFreeMigSliceThenWholeGpus) {
  Node mig = node("mig", "nvidia", "on-demand", {{"nvidia.com/mig-1g.10gb", 2}, {"nvidia.com/mig-3g.40gb", 1}});
  auto ds = greedy_plan({mig}, {task("a", 0, 3, 3, 100)}, kNow);
  ASSERT_EQ(ds[0].action, Action::Admit);
  EXPECT_EQ(ds[0].placement[0].gpu_resource, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(ds[0].placement[2].gpu_resource, "nvidia.com/mig-3g.40gb");  // 1g slices used up
  EXPECT_EQ(greedy_plan({mig}, {task("b", 0, 1, 1, 500)}, kNow)[0].action, Action::Wait);  // no 4g slice, no whole GPU
  EXPECT_EQ(worker_shape(500, nvidia("n", 1))->gpu_resource, "nvidia.com/gpu");
  // A time-sliced node beats wasting a whole GPU on half of one.
  Node shared = node("shared", "nvidia", "on-demand", {{"nvidia.com/gpu.shared", 4}});
  auto half = greedy_plan({nvidia("whole", 8), shared}, {task("c", 0, 2, 2, 500)}, kNow);
  ASSERT_EQ(half[0].action, Action::Admit);
  EXPECT_EQ(half[0].placement[0].gpu_resource, "nvidia.com/gpu.shared");
  EXPECT_EQ(half[0].placement[0].node, "shared");
}

TEST(Planner, TaintsSelectorsAndUnschedulableNodesAreHonoured) {
  Node tainted = nvidia("t", 8);
  tainted.taints.push_back({"dedicated", "team-b", "NoSchedule"});
  Node cordoned = nvidia("c", 8);
  cordoned.schedulable = false;
  Node labelled = nvidia("l", 8);
  labelled.labels["zone"] = "b";
  EXPECT_EQ(greedy_plan({tainted, cordoned}, {task("a", 0, 1, 1)}, kNow)[0].action, Action::Wait);
  Task tol = task("a", 0, 1, 1);
  tol.tolerations.push_back({"dedicated", "Equal", "team-b", "NoSchedule"});
  EXPECT_EQ(greedy_plan({tainted}, {tol}, kNow)[0].placement[0].node, "t");
  Task sel = task("a", 0, 1, 1);
  sel.node_selector["zone"] = "b";
  EXPECT_EQ(greedy_plan({nvidia("a-first", 8), labelled}, {sel}, kNow)[0].placement[0].node, "l");
}

TEST(Planner, AntiThrashNeedsIntervalAndWorthwhileGain) {
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 1)};
  Task a = task("a", 0, 8, 16);
  a = apply(a, greedy_plan({nvidia("n1", 8)}, {a}, kNow)[0], kNow);  // admitted at 8 on n1
  a.last_resize = kNow - 1h;
  // One more GPU would be a 12% gain: not worth a checkpoint-restart (default 25%).
  EXPECT_EQ(greedy_plan(nodes, {a}, kNow)[0].action, Action::Keep);
  Config eager;
  eager.min_gain_fraction = 0;
  EXPECT_EQ(greedy_plan(nodes, {a}, kNow, eager)[0].action, Action::Grow);
  // Within the interval, not even a big gain.
  a.last_resize = kNow - 10s;
  EXPECT_EQ(greedy_plan({nvidia("n1", 8), nvidia("n2", 8)}, {a}, kNow)[0].action, Action::Keep);
}

TEST(Planner, AgingLetsALongWaitingTaskOvertakeNewerHigherPriorityOnes) {
  Task old_low = task("old", 0, 8, 8);
  old_low.created = kNow - 10h;  // 60 aging steps
  Task new_high = task("new", 50, 8, 8);
  auto ds = greedy_plan({nvidia("n1", 8)}, {new_high, old_low}, kNow);
  EXPECT_EQ(find(ds, "old").action, Action::Admit);
  EXPECT_EQ(find(ds, "new").action, Action::Wait);
}

TEST(Planner, AvoidedNodesAreNotUsedAndWorkersThereAreReplaced) {
  Task a = task("a", 0, 2, 2);
  a.avoid_nodes = {"n1"};
  auto ds = greedy_plan({nvidia("n1", 8), nvidia("n2", 8)}, {a}, kNow);
  for (const auto& w : ds[0].placement) EXPECT_EQ(w.node, "n2");
  Task b = apply(task("b", 0, 2, 2), greedy_plan({nvidia("n1", 8)}, {task("b", 0, 2, 2)}, kNow)[0], kNow);
  b.avoid_nodes = {"n1"};
  auto moved = greedy_plan({nvidia("n1", 8), nvidia("n2", 8)}, {b}, kNow);
  EXPECT_EQ(moved[0].workers, 2);
  for (const auto& w : moved[0].placement) EXPECT_EQ(w.node, "n2");
}

TEST(Planner, PinnedSizeWins) {
  Task a = task("a", 0, 2, 8);
  a.pinned_workers = 3;
  EXPECT_EQ(greedy_plan({nvidia("n1", 8)}, {a}, kNow)[0].workers, 3);
}

TEST(Planner, WorkersOnALostNodeAreReplacedOrTheTaskWaits) {
  Task a = task("a", 0, 4, 4);
  a = apply(a, greedy_plan({nvidia("n1", 4)}, {a}, kNow)[0], kNow);
  auto ds = greedy_plan({nvidia("n2", 8)}, {a}, kNow);  // n1 is gone
  EXPECT_EQ(ds[0].action, Action::Grow);
  EXPECT_EQ(ds[0].workers, 4);
  EXPECT_EQ(ds[0].placement[0].node, "n2");
  EXPECT_EQ(greedy_plan({nvidia("n2", 2)}, {a}, kNow)[0].action, Action::Preempt);
}

// A node whose heartbeat is late (NotReady, tainted unreachable) still runs its pods: within the
// lifecycle's grace its workers stay, and its GPUs are not given to anyone else when it is Ready
// again. (The N=1,000 control-plane run found the planner moving them at the first missed heartbeat
// while the pods stayed, then placing other tasks onto GPUs they still held.)
TEST(Planner, WorkersOnANodeBrieflyNotReadyStayAndHoldTheirGpus) {
  Config c;
  c.node_not_ready_grace = 30s;
  const Task a = apply(task("a", 0, 4, 4), greedy_plan({nvidia("n1", 4)}, {task("a", 0, 4, 4)}, kNow)[0], kNow);
  // The controller gives a planned task's own workers back: n1 shows its 4 GPUs free.
  Node late = nvidia("n1", 4);
  late.ready = false;
  late.schedulable = false;
  late.not_ready_since = kNow - 10s;
  late.taints.push_back({"node.kubernetes.io/unreachable", "", "NoSchedule"});
  late.taints.push_back({"node.kubernetes.io/unreachable", "", "NoExecute"});
  auto ds = greedy_plan({late, nvidia("n2", 4)}, {a, task("b", 0, 4, 4)}, kNow, c);
  EXPECT_EQ(find(ds, "a").action, Action::Keep);
  ASSERT_EQ(find(ds, "a").placement.size(), 4u);
  for (const auto& w : find(ds, "a").placement) EXPECT_EQ(w.node, "n1");
  for (const auto& w : find(ds, "b").placement) EXPECT_EQ(w.node, "n2");
  // Past the grace the node is lost: a moves, and the GPUs its pods still hold on n1 go to no one.
  late.not_ready_since = kNow - 60s;
  auto lost = greedy_plan({late, nvidia("n2", 4)}, {a}, kNow, c);
  for (const auto& w : lost[0].placement) EXPECT_EQ(w.node, "n2");
  // A NoSchedule taint keeps new pods away; it does not move running ones.
  Node tainted = nvidia("n1", 4);
  tainted.taints.push_back({"dedicated", "team-b", "NoSchedule"});
  EXPECT_EQ(greedy_plan({tainted}, {a}, kNow, c)[0].action, Action::Keep);
  // Workers that move (their node refused them) hold their GPUs until their pods are gone.
  Task avoided = a;
  avoided.avoid_nodes = {"n1"};
  auto moved = greedy_plan({nvidia("n1", 4), nvidia("n2", 4)}, {avoided, task("b", 0, 4, 4)}, kNow, c);
  for (const auto& w : find(moved, "a").placement) EXPECT_EQ(w.node, "n2");
  EXPECT_EQ(find(moved, "b").action, Action::Wait) << "b was placed onto GPUs a's pods still hold";
}

// The placement is by worker index: the controller re-creates a pod only where its index's node
// changed. A lost worker's replacement takes its index; the others keep theirs.
Task on_nodes(Task t, const std::vector<std::string>& nodes) {
  t.admitted = true;
  for (const auto& n : nodes) t.workers.push_back({n, "nvidia.com/gpu", 1});
  return t;
}
std::vector<std::string> nodes_of(const Decision& d) {
  std::vector<std::string> names;
  for (const auto& w : d.placement) names.push_back(w.node);
  return names;
}

TEST(Planner, ALostWorkersReplacementTakesItsIndexAndTheOthersKeepTheirs) {
  const Task a = on_nodes(task("a", 0, 4, 4), {"n1", "n2", "n3", "n4"});
  // n2 is gone; n5 has room. (The controller gives the task's own GPUs back: 1 free on each.)
  auto ds = greedy_plan({nvidia("n1", 1), nvidia("n3", 1), nvidia("n4", 1), nvidia("n5", 1)}, {a}, kNow);
  EXPECT_EQ(nodes_of(ds[0]), (std::vector<std::string>{"n1", "n5", "n3", "n4"}));
  // Refused at n1 and n3 (unbound, pinned): only those two move. A worker bound at an avoided node
  // was taken there after all: it stays.
  Task refused = a;
  refused.avoid_nodes = {"n1", "n3", "n4"};
  refused.workers[3].bound = true;
  auto moved = greedy_plan({nvidia("n1", 1), nvidia("n2", 1), nvidia("n3", 1), nvidia("n4", 1), nvidia("n5", 2)}, {refused}, kNow);
  EXPECT_EQ(nodes_of(moved[0]), (std::vector<std::string>{"n5", "n2", "n5", "n4"}));
  // An elastic task that shrinks instead (nothing free): the kept ones stay at their indexes below
  // the new size; the last one (index 3, beyond it) fills the hole.
  const Task b = on_nodes(task("b", 0, 2, 4), {"n1", "n2", "n3", "n4"});
  auto shrunk = greedy_plan({nvidia("n2", 1), nvidia("n3", 1), nvidia("n4", 1)}, {b}, kNow);
  EXPECT_EQ(nodes_of(shrunk[0]), (std::vector<std::string>{"n4", "n2", "n3"}));
}

TEST(Planner, ALostWorkerRestartsTheTaskAtTheLargestSizeThatFitsNotJustWhatIsLeft) {
  Task a = task("a", 0, 2, 4);
  a = apply(a, greedy_plan({nvidia("s1", 2), nvidia("s2", 2)}, {a}, kNow)[0], kNow);
  ASSERT_EQ(a.workers.size(), 4u);
  a.last_resize = kNow;  // resized a moment ago: a plain grow would have to wait
  Node noticed = nvidia("s2", 2, "spot");
  noticed.schedulable = false;  // termination notice
  // Capacity elsewhere: the restart (which is happening anyway) takes it, off the noticed node.
  auto ds = greedy_plan({nvidia("s1", 0), noticed, nvidia("od1", 4)}, {a}, kNow);
  EXPECT_EQ(ds[0].workers, 4);
  for (const auto& w : ds[0].placement) EXPECT_NE(w.node, "s2");
  EXPECT_NE(ds[0].reason.find("replacing lost workers"), std::string::npos) << ds[0].reason;
  // No capacity elsewhere: it restarts on what is left, down to its minimum.
  auto left = greedy_plan({nvidia("s1", 0), noticed}, {a}, kNow);
  EXPECT_EQ(left[0].action, Action::Shrink);
  EXPECT_EQ(left[0].workers, 2);
  // Below its minimum: it waits, with the capacity it needs in the reason.
  Task b = task("b", 0, 4, 4);
  b = apply(b, greedy_plan({nvidia("s1", 2), nvidia("s2", 2)}, {b}, kNow)[0], kNow);
  auto below = greedy_plan({nvidia("s1", 0), noticed}, {b}, kNow);
  EXPECT_EQ(below[0].action, Action::Preempt);
  EXPECT_NE(below[0].reason.find("InsufficientCapacity"), std::string::npos) << below[0].reason;
}

TEST(Planner, ReduceCostWaitsForOffPeakUnlessSpotOrIdleCapacityTakesIt) {
  Task cheap = task("cheap", 0, 2, 2);
  cheap.reduce_cost = true;
  Task busy = task("busy", 50, 6, 6);
  busy = apply(busy, greedy_plan({nvidia("od1", 8)}, {busy}, kNow)[0], kNow);  // 6 of 8 on-demand GPUs taken
  Config peak;  // Valley before price-first placement (valley-sim's valley-v1)
  peak.reduce_cost = ReduceCostRule::OffPeakOrIdle;
  peak.placement = Placement::PackThenClass;
  peak.off_peak = false;
  peak.next_off_peak = "2026-11-22T15:00:00Z";
  peak.idle_percent = 50;
  auto ds = greedy_plan({nvidia("od1", 8)}, {busy, cheap}, kNow, peak);
  const Decision& waits = find(ds, "cheap");
  EXPECT_EQ(waits.action, Action::Wait);
  EXPECT_NE(waits.reason.find("ReduceCost: waiting for off-peak electricity from 2026-11-22T15:00:00Z"), std::string::npos)
      << waits.reason;
  EXPECT_NE(waits.reason.find("(now 25%)"), std::string::npos) << waits.reason;
  // Spot capacity takes the whole gang: admitted there, never on the on-demand node.
  ds = greedy_plan({nvidia("od1", 8), nvidia("sp1", 2, "spot")}, {busy, cheap}, kNow, peak);
  const Decision& spot = find(ds, "cheap");
  EXPECT_EQ(spot.action, Action::Admit);
  for (const auto& w : spot.placement) EXPECT_EQ(w.node, "sp1");
  // Off-peak now, or enough idle GPUs: admitted like anything else.
  Config valley = peak;
  valley.off_peak = true;
  EXPECT_EQ(find(greedy_plan({nvidia("od1", 8)}, {busy, cheap}, kNow, valley), "cheap").action, Action::Admit);
  Config idle = peak;
  idle.idle_percent = 20;
  EXPECT_EQ(find(greedy_plan({nvidia("od1", 8)}, {busy, cheap}, kNow, idle), "cheap").action, Action::Admit);
}

TEST(Planner, ReduceCostPrefersAmdOnlyWhenItIsCheaper) {
  Task t = task("t", 0, 2, 2);
  t.reduce_cost = true;
  t.amd_support = true;
  std::vector<Node> nodes = {nvidia("nv", 8), amd("amd", 8)};
  Config c;  // Valley before price-first placement: a global "AMD is cheaper" switch
  c.placement = Placement::PackThenClass;
  c.amd_cheaper = true;
  EXPECT_EQ(greedy_plan(nodes, {t}, kNow, c)[0].placement[0].node, "amd");
  c.amd_cheaper = false;
  EXPECT_EQ(greedy_plan(nodes, {t}, kNow, c)[0].placement[0].node, "nv");
}

// Random clusters and task mixes: invariants that must always hold.
TEST(PlannerProperties, NeverOvercommitsNeverSplitsAGangPrioritiesHoldDeterministic) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<Node> nodes;
    int n_nodes = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n_nodes; ++i) {
      int kind = static_cast<int>(rng() % 4);
      if (kind == 0) nodes.push_back(amd("amd-" + std::to_string(i), 8));
      else if (kind == 1) nodes.push_back(node("mig-" + std::to_string(i), "nvidia", "on-demand",
                                                {{"nvidia.com/gpu", 4}, {"nvidia.com/mig-1g.10gb", 7}, {"nvidia.com/mig-3g.40gb", 2}}));
      else nodes.push_back(nvidia("nv-" + std::to_string(i), 1 + static_cast<int>(rng() % 8), rng() % 2 ? "spot" : "on-demand"));
    }
    std::vector<Task> tasks;
    int n_tasks = 1 + static_cast<int>(rng() % 10);
    for (int i = 0; i < n_tasks; ++i) {
      int min = 1 + static_cast<int>(rng() % 8);
      Task t = task("t" + std::to_string(i), static_cast<int>(rng() % 4) * 25, min, min + static_cast<int>(rng() % 8),
                    std::vector<int>{1000, 2000, 500, 100}[rng() % 4]);
      t.amd_support = rng() % 2;
      t.reduce_cost = rng() % 3 == 0;
      t.created = kNow - std::chrono::seconds(rng() % 3000);
      tasks.push_back(t);
    }
    // Two rounds: admit, then re-plan with the result as current state.
    for (int step = 0; step < 2; ++step) {
      auto ds = greedy_plan(nodes, tasks, kNow + std::chrono::hours(step));
      ASSERT_EQ(greedy_plan(nodes, tasks, kNow + std::chrono::hours(step)).size(), ds.size());
      // Determinism.
      auto again = greedy_plan(nodes, tasks, kNow + std::chrono::hours(step));
      for (size_t i = 0; i < ds.size(); ++i) {
        ASSERT_EQ(ds[i].workers, again[i].workers);
        ASSERT_EQ(ds[i].placement.size(), again[i].placement.size());
      }
      std::map<std::string, std::map<std::string, int64_t>> used;
      for (size_t i = 0; i < ds.size(); ++i) {
        const auto& d = ds[i];
        const auto& t = tasks[i];
        ASSERT_EQ(static_cast<int>(d.placement.size()), d.workers) << d.key;
        if (d.workers > 0) {
          // Gang: at least min, at most max; one vendor.
          ASSERT_GE(d.workers, t.min_workers) << d.key << " " << to_string(d.action);
          ASSERT_LE(d.workers, t.max_workers) << d.key;
          std::set<std::string> vendors;
          for (const auto& w : d.placement) vendors.insert(w.gpu_resource.substr(0, w.gpu_resource.find('.')));
          ASSERT_EQ(vendors.size(), 1u) << d.key;
          if (!t.amd_support) {
            ASSERT_EQ(*vendors.begin(), "nvidia") << d.key;
          }
        }
        for (const auto& w : d.placement) used[w.node][w.gpu_resource] += w.count;
      }
      for (const auto& n : nodes)
        for (const auto& [res, units] : used[n.name]) ASSERT_LE(units, n.free.count(res) ? n.free.at(res) : 0) << n.name << " " << res;
      // A waiting task never has strictly lower priority tasks holding workers above their min
      // on nodes it could use (here: all NVIDIA whole-GPU tasks compete for the same resources).
      for (size_t i = 0; i < ds.size(); ++i) {
        if (ds[i].action != Action::Wait) continue;
        for (size_t j = 0; j < ds.size(); ++j) {
          if (tasks[j].priority >= tasks[i].priority || ds[j].workers == 0) continue;
          bool same_pool = tasks[j].gpu_milli == tasks[i].gpu_milli && !tasks[i].amd_support && !tasks[j].amd_support;
          if (same_pool && tasks[j].admitted && ds[j].action != Action::Admit) {
            ASSERT_EQ(ds[j].workers, tasks[j].min_workers) << tasks[i].key << " waits while " << tasks[j].key << " holds extra";
          }
        }
      }
      for (size_t i = 0; i < tasks.size(); ++i) tasks[i] = apply(tasks[i], ds[i], kNow + std::chrono::hours(step));
    }
  }
}

}  // namespace
}  // namespace valley::planner

namespace valley::planner {
namespace {

TEST(Planner, CheckpointedTasksGoToSpotThenTheCheapestOthersKeepOffSpot) {
  Node od = nvidia("a-od", 8), spot_dear = nvidia("b-spot", 8, "spot"), spot_cheap = nvidia("c-spot", 8, "spot");
  od.price_micros = 2'400'000;
  spot_dear.price_micros = 1'200'000;
  spot_cheap.price_micros = 950'000;
  Task saved = task("saved", 0, 4, 4), plain = task("plain", 0, 4, 4);
  saved.checkpointed = true;
  Config priced;  // as with a PricingPolicy: spot capacity only for tasks that checkpoint
  priced.spot_needs_checkpoint = true;
  auto ds = greedy_plan({od, spot_dear, spot_cheap}, {saved, plain}, kNow, priced);
  for (const auto& w : find(ds, "saved").placement) EXPECT_EQ(w.node, "c-spot");
  for (const auto& w : find(ds, "plain").placement) EXPECT_EQ(w.node, "a-od");
  // Price comes before packing: the cheap node is filled first, the rest goes on demand.
  Task big = task("big", 0, 12, 12);
  big.checkpointed = true;
  Node od16 = nvidia("d-od", 16);
  od16.price_micros = 2'400'000;
  ds = greedy_plan({od16, spot_cheap}, {big}, kNow);
  std::map<std::string, int> on;
  for (const auto& w : find(ds, "big").placement) ++on[w.node];
  EXPECT_EQ(on["c-spot"], 8);
  EXPECT_EQ(on["d-od"], 4);
  // Packing first (before price-first placement): a gang that fits on one node is not split.
  Config packing;
  packing.placement = Placement::PackThenClass;
  ds = greedy_plan({od16, spot_cheap}, {big}, kNow, packing);
  for (const auto& w : find(ds, "big").placement) EXPECT_EQ(w.node, "d-od");
  // Packing alone (the simulator's peers): packing and name order only.
  Config blind;
  blind.placement = Placement::Pack;
  ds = greedy_plan({od, spot_dear, spot_cheap}, {saved}, kNow, blind);
  for (const auto& w : find(ds, "saved").placement) EXPECT_EQ(w.node, "a-od");
}

}  // namespace
}  // namespace valley::planner

// --- Tenants: quotas, borrowing, reclaim, fair share, budgets ---

namespace valley::planner {
namespace {
using namespace std::chrono_literals;

Task of(const std::string& tenant, Task t) {
  t.tenant = tenant;
  return t;
}
Config two_teams(int64_t a_nominal, int64_t b_nominal, std::optional<int64_t> b_lends = std::nullopt) {
  Config c;
  c.min_marginal_efficiency = 0;  // every task grows to max while GPUs are free
  c.tenants["a"].quota["nvidia/on-demand"] = PoolQuota{a_nominal * 1000, std::nullopt, std::nullopt};
  c.tenants["b"].quota["nvidia/on-demand"] = PoolQuota{b_nominal * 1000, std::nullopt, b_lends ? std::optional<int64_t>(*b_lends * 1000) : std::nullopt};
  return c;
}

TEST(PlannerTenants, IdleQuotaIsLentAndReclaimedByShrinkingTheBorrowerFirst) {
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8)};
  Config c = two_teams(8, 8);
  Task a = of("a", task("a/train", 10, 4, 16));
  auto ds = plan(nodes, {a}, kNow, c);
  EXPECT_EQ(ds[0].workers, 16);  // b's 8 idle GPUs are lent
  a = apply(a, ds[0], kNow - 1h);
  // b's task arrives with a lower priority than a's: its nominal is b's own, so a gives it back,
  // by shrinking (a can run at 4..16), not by being preempted.
  Task b = of("b", task("b/eval", 0, 8, 8));
  ds = plan(nodes, {a, b}, kNow, c);
  EXPECT_EQ(find(ds, "b/eval").action, Action::Admit);
  EXPECT_EQ(find(ds, "a/train").action, Action::Shrink);
  EXPECT_EQ(find(ds, "a/train").workers, 8);
  EXPECT_EQ(find(ds, "a/train").reason, "shrunk for b/eval: tenant b reclaims its quota lent to a");
}

// Plans x and y together and carries the decisions out an hour ago.
void run_both(const std::vector<Node>& nodes, const Config& c, Task& x, Task& y) {
  auto ds = plan(nodes, {x, y}, kNow - 1h, c);
  x = apply(x, find(ds, x.key), kNow - 1h);
  y = apply(y, find(ds, y.key), kNow - 1h);
}

TEST(PlannerTenants, ABorrowerThatCannotShrinkIsPreemptedLowestPriorityFirst) {
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8)};
  Config c = two_teams(8, 8);
  Task a1 = of("a", task("a/one", 50, 8, 8)), a2 = of("a", task("a/two", 20, 8, 8));
  run_both(nodes, c, a1, a2);
  ASSERT_TRUE(a1.admitted && a2.admitted);
  auto ds = plan(nodes, {a1, a2, of("b", task("b/x", 0, 4, 4))}, kNow, c);
  EXPECT_EQ(find(ds, "b/x").action, Action::Admit);
  EXPECT_EQ(find(ds, "a/two").action, Action::Preempt);  // the lower-priority one goes
  EXPECT_EQ(find(ds, "a/one").action, Action::Keep);
}

TEST(PlannerTenants, NothingInsideATenantsNominalIsTakenForAnotherTenant) {
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8)};
  Config c = two_teams(8, 8);
  Task a = of("a", task("a/low", 0, 8, 8)), b1 = of("b", task("b/one", 100, 8, 8));
  run_both(nodes, c, a, b1);
  ASSERT_TRUE(a.admitted && b1.admitted);
  // b is at its nominal; its next task would borrow, and a is within its own: b waits, however
  // low a's priority.
  auto ds = plan(nodes, {a, b1, of("b", task("b/two", 100, 4, 4))}, kNow, c);
  EXPECT_EQ(find(ds, "b/two").action, Action::Wait);
  EXPECT_EQ(find(ds, "a/low").action, Action::Keep);
}

TEST(PlannerTenants, ALendingLimitKeepsPartOfTheNominalForItsOwner) {
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8)};
  Config c = two_teams(8, 8, /*b_lends=*/2);
  auto ds = plan(nodes, {of("a", task("a/train", 0, 1, 16))}, kNow, c);
  EXPECT_EQ(ds[0].workers, 10);  // its 8 and the 2 b lends
}

TEST(PlannerTenants, FairShareOrdersTenantsBeforePriority) {
  std::vector<Node> nodes = {nvidia("n1", 8)};
  Config c = two_teams(0, 0);  // no guarantees: who goes first is the fair share's call
  c.tenants["a"].decayed_gpu_hours = 500;  // a used a lot lately
  c.tenants["b"].decayed_gpu_hours = 10;
  auto ds = plan(nodes, {of("a", task("a/urgent", 100, 8, 8)), of("b", task("b/batch", 0, 8, 8))}, kNow, c);
  EXPECT_EQ(find(ds, "b/batch").action, Action::Admit);
  EXPECT_EQ(find(ds, "a/urgent").action, Action::Wait);
  // A heavier weight buys b's usage back for a.
  c.tenants["a"].weight = 100;
  ds = plan(nodes, {of("a", task("a/urgent", 100, 8, 8)), of("b", task("b/batch", 0, 8, 8))}, kNow, c);
  EXPECT_EQ(find(ds, "a/urgent").action, Action::Admit);
}

TEST(PlannerTenants, FairShareCountsWhatATenantWasJustGiven) {
  // Equal usage and weight: admissions alternate, each admission raising that tenant's share.
  std::vector<Node> nodes = {nvidia("n1", 4)};
  Config c = two_teams(0, 0);
  std::vector<Task> tasks;
  for (int k = 0; k < 3; ++k) {
    tasks.push_back(of("a", task("a/" + std::to_string(k), 50, 1, 1)));
    tasks.push_back(of("b", task("b/" + std::to_string(k), 0, 1, 1)));
  }
  auto ds = plan(nodes, tasks, kNow, c);
  int a = 0, b = 0;
  for (const auto& d : ds)
    if (d.action == Action::Admit) (d.key[0] == 'a' ? a : b) += 1;
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 2);
}

TEST(PlannerTenants, ASpentBudgetHoldsNewWorkAndSuspendStopsRunningWork) {
  std::vector<Node> nodes = {nvidia("n1", 8)};
  Config c = two_teams(4, 4);
  c.tenants["a"].hold = "TenantBudget: a spent 500.00 of 500.00 USD this month; resets 2026-12-01T00:00:00+01:00";
  Task running = of("a", task("a/run", 0, 2, 2));
  running.admitted = true;
  running.workers = {{"n1", "nvidia.com/gpu", 1}, {"n1", "nvidia.com/gpu", 1}};
  auto ds = plan(nodes, {running, of("a", task("a/new", 0, 1, 1))}, kNow, c);
  EXPECT_EQ(find(ds, "a/new").action, Action::Wait);
  EXPECT_EQ(find(ds, "a/new").reason, c.tenants["a"].hold);
  EXPECT_EQ(find(ds, "a/run").action, Action::Keep);  // Wait: what runs goes on
  c.tenants["a"].stop = true;
  ds = plan(nodes, {running}, kNow, c);
  EXPECT_EQ(ds[0].action, Action::Preempt);
  EXPECT_EQ(ds[0].reason, c.tenants["a"].hold);
}

TEST(PlannerTenants, WorkWithoutATenantRunsOnIdleCapacityAndIsReclaimedFirst) {
  std::vector<Node> nodes = {nvidia("n1", 8)};
  Config c = two_teams(8, 0);
  Task loose = task("x/loose", 100, 1, 8);  // no tenant
  auto ds = plan(nodes, {loose}, kNow, c);
  EXPECT_EQ(ds[0].workers, 8);
  loose = apply(loose, ds[0], kNow - 1h);
  ds = plan(nodes, {loose, of("a", task("a/job", 0, 6, 6))}, kNow, c);
  EXPECT_EQ(find(ds, "a/job").action, Action::Admit);
  EXPECT_EQ(find(ds, "x/loose").workers, 2);
}

// Utilization in sizing: an idlePolicy of Shrink sizes the task at min; without measured
// progress, saturated GPUs grow it one step and others keep it at its size; not running, or
// without utilization, it sizes as before.
TEST(Planner, IdleTasksShrinkToMinAndBusyOnesWithoutProgressRecordsGrowAStep) {
  Config c;
  c.min_marginal_efficiency = 0.8;
  Task t = task("ns/idle", 10, 2, 8);
  EXPECT_EQ(target_size(t, 4, c), 4);  // no evidence at all: stays
  t.gpu_percent = 12;
  EXPECT_EQ(target_size(t, 4, c), 4);
  t.gpu_percent = 95;
  EXPECT_EQ(target_size(t, 4, c), 5);  // saturated: one step up
  EXPECT_EQ(target_size(t, 8, c), 8);
  EXPECT_EQ(target_size(t, 0, c), 2);  // not running yet: min
  t.scaling = {{4, 10.0, 3}, {5, 10.1, 3}};  // measured: the step did not pay
  EXPECT_EQ(target_size(t, 5, c), 4);
  t.scaling.clear();
  t.idle = "GPU utilization below 5% since ...";
  EXPECT_EQ(target_size(t, 4, c), 2);
  t.fastest = true;
  EXPECT_EQ(target_size(t, 4, c), 2);  // the user's idle policy wins over speed
}

}  // namespace
}  // namespace valley::planner

namespace valley::planner {
namespace {

// The operator plans over the snapshot's nodes as they are and gives back what the planned tasks'
// current workers hold on the side: the same plan as over nodes whose free GPUs include it.
TEST(PlannerProperties, GivingBackOnTheSideEqualsAddingToFree) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<Node> nodes;
    const int n_nodes = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n_nodes; ++i) {
      if (rng() % 3 == 0)
        nodes.push_back(node("mig-" + std::to_string(i), "nvidia", "on-demand", {{"nvidia.com/mig-1g.10gb", static_cast<int64_t>(rng() % 4)}}));
      else
        nodes.push_back(nvidia("nv-" + std::to_string(i), static_cast<int>(rng() % 5)));
    }
    Returned returned;
    for (const auto& n : nodes)
      if (rng() % 2) returned[n.name][rng() % 2 ? "nvidia.com/gpu" : "nvidia.com/mig-1g.10gb"] += static_cast<int64_t>(rng() % 4);
    std::vector<Node> added = nodes;
    for (auto& n : added)
      if (auto it = returned.find(n.name); it != returned.end())
        for (const auto& [r, units] : it->second)
          if (units != 0) n.free[r] += units;
    std::vector<Task> tasks;
    for (int i = 0; i < 1 + static_cast<int>(rng() % 6); ++i) {
      Task t = task("t" + std::to_string(i), static_cast<int>(rng() % 3) * 10, 1 + static_cast<int>(rng() % 3), 4,
                    std::vector<int>{1000, 2000, 100}[rng() % 3]);
      if (rng() % 2 && !nodes.empty()) {  // running somewhere already
        t.admitted = true;
        t.workers.push_back({nodes[rng() % nodes.size()].name, "nvidia.com/gpu", 1});
      }
      tasks.push_back(t);
    }
    std::vector<const Node*> shared;
    for (const auto& n : nodes) shared.push_back(&n);
    const auto want = plan(added, tasks, kNow);
    const auto got = plan(shared, returned, tasks, kNow);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].action, want[i].action) << round << " " << got[i].key;
      EXPECT_EQ(got[i].reason, want[i].reason) << round << " " << got[i].key;
      ASSERT_EQ(got[i].placement.size(), want[i].placement.size()) << round << " " << got[i].key;
      for (size_t k = 0; k < got[i].placement.size(); ++k) {
        EXPECT_EQ(got[i].placement[k].node, want[i].placement[k].node);
        EXPECT_EQ(got[i].placement[k].gpu_resource, want[i].placement[k].gpu_resource);
        EXPECT_EQ(got[i].placement[k].count, want[i].placement[k].count);
      }
    }
  }
}

}  // namespace
}  // namespace valley::planner
