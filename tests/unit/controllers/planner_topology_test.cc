// The planner with topology levels: a gang in the narrowest domain it can, a task's required or
// preferred level, growth and replacement inside its own domain.
#include "controllers/planner/planner.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {
using namespace fixtures;
using namespace std::chrono_literals;

// An NVIDIA node of `gpus` in rack `rack` (label topology.kubernetes.io/rack).
Node in_rack(const std::string& name, int gpus, const std::string& rack) {
  Node n = nvidia(name, gpus);
  n.labels["topology.kubernetes.io/rack"] = rack;
  return n;
}
Config racks() {
  Config c;
  c.min_marginal_efficiency = 0;
  c.topology = {{"rack", "topology.kubernetes.io/rack"}};
  return c;
}
Task ruled(Task t, const std::string& level, bool required) {
  t.topology = TopologyRule{level, required};
  return t;
}
std::set<std::string> racks_of(const Decision& d, const std::vector<Node>& nodes) {
  std::set<std::string> out;
  for (const auto& w : d.placement)
    for (const auto& n : nodes)
      if (n.name == w.node) out.insert(n.labels.at("topology.kubernetes.io/rack"));
  return out;
}

TEST(PlannerTopology, AmongEqualPricesAGangTakesTheRackItAlreadyHas) {
  // By name alone the second node would be b (rack r2); c shares a's rack.
  std::vector<Node> nodes = {in_rack("a", 4, "r1"), in_rack("b", 4, "r2"), in_rack("c", 4, "r1")};
  auto ds = plan(nodes, {task("t", 0, 8, 8)}, kNow, racks());
  ASSERT_EQ(ds[0].action, Action::Admit);
  EXPECT_EQ(racks_of(ds[0], nodes), std::set<std::string>{"r1"});
  // Without levels, nothing above the node is known: name order decides.
  Config plain = racks();
  plain.topology.clear();
  ds = plan(nodes, {task("t", 0, 8, 8)}, kNow, plain);
  EXPECT_EQ(racks_of(ds[0], nodes), (std::set<std::string>{"r1", "r2"}));
}

TEST(PlannerTopology, ARequiredLevelTakesTheOneDomainThatHoldsTheGangOrWaitsSayingWhy) {
  // r1 has 6 free, r2 has 8: a required rack of 8 goes to r2 although r1 comes first by name.
  std::vector<Node> nodes = {in_rack("a", 4, "r1"), in_rack("b", 2, "r1"), in_rack("c", 4, "r2"), in_rack("d", 4, "r2")};
  auto ds = plan(nodes, {ruled(task("t", 0, 8, 8), "rack", true)}, kNow, racks());
  ASSERT_EQ(ds[0].action, Action::Admit);
  EXPECT_EQ(racks_of(ds[0], nodes), std::set<std::string>{"r2"});
  // 10 fit in the cluster but no rack ever holds them: it waits, and says what it would need.
  ds = plan(nodes, {ruled(task("t", 0, 10, 10), "rack", true)}, kNow, racks());
  EXPECT_EQ(ds[0].action, Action::Wait);
  EXPECT_EQ(ds[0].reason, "Unplaceable: needs 10 workers in one rack (spec.topology.required); the largest rack it may use, r2, holds 8");
  // r2 could hold 8 but has 6 free now (as r1): it waits for room there.
  std::vector<Node> busy = nodes;
  busy[2].free["nvidia.com/gpu"] = 2;
  ds = plan(busy, {ruled(task("t", 0, 8, 8), "rack", true)}, kNow, racks());
  EXPECT_EQ(ds[0].action, Action::Wait);
  EXPECT_EQ(ds[0].reason,
            "InsufficientCapacity: needs 8 GPUs (8 workers x 1), 12 free; topology: all in one rack (required), and no rack has room for them");
  // Preferred: spread over both racks rather than wait.
  ds = plan(nodes, {ruled(task("t", 0, 10, 10), "rack", false)}, kNow, racks());
  EXPECT_EQ(ds[0].action, Action::Admit);
  EXPECT_EQ(racks_of(ds[0], nodes), (std::set<std::string>{"r1", "r2"}));
}

TEST(PlannerTopology, ATaskGrowsAndReplacesLostWorkersInsideItsOwnDomain) {
  std::vector<Node> nodes = {in_rack("a", 2, "r1"), in_rack("b", 4, "r2"), in_rack("c", 4, "r1")};
  // Started in r1 on a (2 of its GPUs), growing to 6: c (r1) rather than b, first by name.
  Task t = ruled(task("t", 0, 2, 6), "rack", true);
  t.admitted = true;
  t.workers = {{"a", "nvidia.com/gpu", 1, true, 0}, {"a", "nvidia.com/gpu", 1, true, 1}};
  t.last_resize = kNow - 1h;
  nodes[0].free["nvidia.com/gpu"] = 0;
  auto ds = plan(nodes, {t}, kNow, racks());
  EXPECT_EQ(ds[0].workers, 6);
  EXPECT_EQ(racks_of(ds[0], nodes), std::set<std::string>{"r1"});
  // Its node a is lost: both replacements stay in r1 (on c), though b (r2) has room.
  std::vector<Node> without_a = {nodes[1], nodes[2]};
  t.workers.push_back({"c", "nvidia.com/gpu", 1, true, 2});
  without_a[1].free["nvidia.com/gpu"] = 3;
  ds = plan(without_a, {ruled(t, "rack", true)}, kNow, racks());
  EXPECT_EQ(racks_of(ds[0], without_a), std::set<std::string>{"r1"}) << ds[0].reason;
}

// Admitted at its minimum on the tightest node, then grown worker by worker: it starts at 4 anyway,
// so it starts on the one node that holds all 4.
TEST(PlannerTopology, AGangThatGrewWorkerByWorkerStartsOnTheFewestNodes) {
  std::vector<Node> nodes = {in_rack("a", 2, "r1"), in_rack("b", 4, "r1")};
  auto ds = plan(nodes, {task("t", 0, 2, 4)}, kNow, racks());
  ASSERT_EQ(ds[0].workers, 4);
  std::set<std::string> used;
  for (const auto& w : ds[0].placement) used.insert(w.node);
  EXPECT_EQ(used, std::set<std::string>{"b"});
  // Without levels the plan is as it was: the minimum where it fit tightest, the rest beside it.
  Config plain = racks();
  plain.topology.clear();
  ds = plan(nodes, {task("t", 0, 2, 4)}, kNow, plain);
  used.clear();
  for (const auto& w : ds[0].placement) used.insert(w.node);
  EXPECT_EQ(used.size(), 2u);
}

TEST(PlannerTopology, AnUnknownLevelWaitsNamingTheLevelsTheOperatorDeclares) {
  std::vector<Node> nodes = {in_rack("a", 4, "r1"), in_rack("b", 4, "r2")};
  for (bool required : {true, false}) {
    auto ds = plan(nodes, {ruled(task("t", 0, 8, 8), "blok", required)}, kNow, racks());
    EXPECT_EQ(ds[0].action, Action::Wait);
    EXPECT_EQ(ds[0].reason, "Unplaceable: spec.topology names the level \"blok\", which the operator does not declare (its levels: rack)");
  }
}

TEST(PlannerTopology, AShrinkTakesTheWorkerThatLeavesTheRestInFewerDomains) {
  std::vector<Node> nodes = {in_rack("a", 4, "r1"), in_rack("b", 4, "r2")};
  Task t = task("t", 0, 1, 3);  // max lowered to 3 under it
  t.admitted = true;
  t.workers = {{"b", "nvidia.com/gpu", 1, true, 0}, {"a", "nvidia.com/gpu", 1, true, 1}, {"a", "nvidia.com/gpu", 1, true, 2},
               {"a", "nvidia.com/gpu", 1, true, 3}};
  t.last_resize = kNow - 1h;
  nodes[0].free["nvidia.com/gpu"] = 1;
  nodes[1].free["nvidia.com/gpu"] = 3;
  auto ds = plan(nodes, {t}, kNow, racks());
  ASSERT_EQ(ds[0].workers, 3);
  EXPECT_EQ(racks_of(ds[0], nodes), std::set<std::string>{"r1"});
  // A task resized in place keeps its workers' indexes: its highest one goes.
  t.hot_elastic = true;
  ds = plan(nodes, {t}, kNow, racks());
  EXPECT_EQ(racks_of(ds[0], nodes), (std::set<std::string>{"r1", "r2"}));
}

}  // namespace
}  // namespace valley::planner
