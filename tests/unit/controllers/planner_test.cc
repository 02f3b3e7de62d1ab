#include "controllers/planner/planner.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {
using namespace fixtures;
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

// Kueue preempts inside one flavor, the first in its order where that makes the gang fit; Valley
// takes the newest lower-priority task wherever it runs (here the one whose pool has room beside it).
TEST(Planner, PreemptionInPoolOrderTakesTheCheapestPoolsVictimsOnly) {
  Node spot = nvidia("s1", 8, "spot"), od = nvidia("o1", 8);
  spot.price_micros = 1'000'000;
  od.price_micros = 2'400'000;
  Task older = task("older", 10, 8, 8), newer = task("newer", 10, 4, 4), vip = task("vip", 50, 8, 8);
  older.admitted = newer.admitted = true;
  older.workers.assign(8, Task::Worker{"s1", "nvidia.com/gpu", 1});
  newer.workers.assign(4, Task::Worker{"o1", "nvidia.com/gpu", 1});
  newer.created = older.created + 30s;
  const auto valley = greedy_plan({spot, od}, {older, newer, vip}, kNow);
  EXPECT_EQ(find(valley, "newer").action, Action::Preempt);
  EXPECT_EQ(find(valley, "older").action, Action::Keep);
  ASSERT_EQ(find(valley, "vip").action, Action::Admit);
  for (const auto& w : find(valley, "vip").placement) EXPECT_EQ(w.node, "o1");
  Config kueue;
  kueue.preempt_in_pool_order = true;
  const auto in_order = greedy_plan({spot, od}, {older, newer, vip}, kNow, kueue);
  EXPECT_EQ(find(in_order, "older").action, Action::Preempt);
  EXPECT_EQ(find(in_order, "newer").action, Action::Keep);
  ASSERT_EQ(find(in_order, "vip").action, Action::Admit);
  for (const auto& w : find(in_order, "vip").placement) EXPECT_EQ(w.node, "s1");
  // No pool where preempting is enough: nothing is preempted.
  const auto too_big = greedy_plan({spot, od}, {older, newer, task("huge", 50, 12, 12)}, kNow, kueue);
  EXPECT_EQ(find(too_big, "older").action, Action::Keep);
  EXPECT_EQ(find(too_big, "newer").action, Action::Keep);
  EXPECT_EQ(find(too_big, "huge").action, Action::Wait);
}

TEST(Planner, TasksOnGpusTheNewcomerCannotUseAreLeftAlone) {
  std::vector<Node> nodes = {nvidia("n1", 8), amd("m1", 8)};
  nodes[0].price_micros = 2'400'000;
  nodes[1].price_micros = 1'600'000;
  Task on_amd = task("amd-job", 10, 2, 8);
  on_amd.vendors = {"nvidia", "amd"};
  on_amd.reduce_cost = true;
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
  a.vendors = {"nvidia", "amd"};
  auto ds = greedy_plan(nodes, {a}, kNow);
  ASSERT_EQ(ds[0].action, Action::Admit);
  for (const auto& w : ds[0].placement) EXPECT_EQ(w.gpu_resource, "amd.com/gpu");
  // 4 NVIDIA + 8 AMD = 12 GPUs, but a 10-worker gang cannot span both.
  Task big = task("big", 0, 10, 10);
  big.vendors = {"nvidia", "amd"};
  EXPECT_EQ(greedy_plan(nodes, {big}, kNow)[0].action, Action::Wait);
}

TEST(Planner, AmdTasksGoToAmdWhenItIsCheaper) {
  Task a = task("a", 0, 2, 2);
  a.vendors = {"nvidia", "amd"};
  a.reduce_cost = true;
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

// A NoExecute taint moves workers not bound yet (the scheduler would not put their pods there);
// bound ones stay until Kubernetes' taint eviction takes their pods, a disruption the lifecycle
// counts. A node view older than the pod's (a bought node's registration taint, already gone when
// the scheduler bound the pod) must not restart a gang as if Valley preempted it.
TEST(Planner, ANoExecuteTaintMovesWorkersNotBoundYetAndLeavesBoundOnesToTheTaintEviction) {
  const Task a = apply(task("a", 0, 4, 4), greedy_plan({nvidia("n1", 4)}, {task("a", 0, 4, 4)}, kNow)[0], kNow);
  Node tainted = nvidia("n1", 4);
  tainted.taints.push_back({"karpenter.sh/unregistered", "", "NoExecute"});
  auto moved = greedy_plan({tainted, nvidia("n2", 4)}, {a}, kNow);
  ASSERT_EQ(moved[0].placement.size(), 4u);
  for (const auto& w : moved[0].placement) EXPECT_EQ(w.node, "n2");
  Task bound = a;
  for (auto& w : bound.workers) w.bound = true;
  auto ds = greedy_plan({tainted, nvidia("n2", 4)}, {bound, task("b", 0, 4, 4)}, kNow);
  EXPECT_EQ(find(ds, "a").action, Action::Keep);
  ASSERT_EQ(find(ds, "a").placement.size(), 4u);
  for (const auto& w : find(ds, "a").placement) EXPECT_EQ(w.node, "n1");
  ASSERT_EQ(find(ds, "b").placement.size(), 4u);
  for (const auto& w : find(ds, "b").placement) EXPECT_EQ(w.node, "n2");
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

// An operator restarted while creating a gang's pods: some indexes have none, and none was lost.
// The plan restores the size the epoch was admitted at (no restart), the new workers in the holes.
TEST(Planner, WorkersNeverCreatedAreRestoredAtTheirIndexesWithoutAResize) {
  Task a = task("a", 0, 2, 8);
  a.admitted = true;
  a.epoch_workers = 6;
  a.last_resize = kNow;  // admitted a moment ago: a plain grow would have to wait
  for (int index : {0, 1, 3, 5}) a.workers.push_back({"n" + std::to_string(index), "nvidia.com/gpu", 1, true, index});
  std::vector<Node> nodes;
  for (int k = 0; k < 6; ++k) nodes.push_back(nvidia("n" + std::to_string(k), 1));
  auto ds = plan(nodes, {a}, kNow, Config{});
  EXPECT_EQ(ds[0].action, Action::Keep) << ds[0].reason;
  ASSERT_EQ(ds[0].workers, 6);
  const auto placed = nodes_of(ds[0]);
  for (int index : {0, 1, 3, 5}) EXPECT_EQ(placed[static_cast<size_t>(index)], "n" + std::to_string(index));
  EXPECT_EQ((std::set<std::string>{placed[2], placed[4]}), (std::set<std::string>{"n2", "n4"}));
  // Room for one more only: it starts at 5 (a resize before it ever ran), never below what it has.
  nodes.erase(nodes.begin() + 4);
  auto fewer = plan(nodes, {a}, kNow, Config{});
  EXPECT_EQ(fewer[0].workers, 5);
  // Without the epoch's size (a plan that does not know it), the gang's minimum is all it asks.
  a.epoch_workers = 0;
  EXPECT_EQ(plan(nodes, {a}, kNow, Config{})[0].workers, 4);
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
  t.vendors = {"nvidia", "amd"};
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
      if (rng() % 2) t.vendors = {"nvidia", "amd"};
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
          if (!runs_on(t, "amd")) {
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
          bool same_pool = tasks[j].gpu_milli == tasks[i].gpu_milli && !runs_on(tasks[i], "amd") && !runs_on(tasks[j], "amd");
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

// A task that lost a worker with its node replaces it only from what is free once every task kept
// its own: the GPU a lower-priority task still holds is not free for it, even though that task is
// planned after it.
TEST(Planner, AReplacementForALostWorkerNeverTakesTheGpuAnotherKeptTaskHolds) {
  Task first = task("ns/first", 90, 2, 2);
  first.admitted = true;
  first.workers = {{"a", "nvidia.com/gpu", 1}, {"gone", "nvidia.com/gpu", 1}};
  Task later = task("ns/later", 10, 1, 1);
  later.admitted = true;
  later.workers = {{"b", "nvidia.com/gpu", 1}};
  // `free` counts what the planned tasks hold as free (the plan places their workers itself).
  auto ds = plan({nvidia("a", 1), nvidia("b", 1)}, {first, later}, kNow);
  EXPECT_EQ(find(ds, "ns/later").action, Action::Keep);
  EXPECT_EQ(find(ds, "ns/later").placement.at(0).node, "b");
  EXPECT_NE(find(ds, "ns/first").action, Action::Grow) << find(ds, "ns/first").reason;
  for (const auto& w : find(ds, "ns/first").placement) EXPECT_NE(w.node, "b") << "b's GPU is later's";
}

}  // namespace
}  // namespace valley::planner

