// The plan admits an MPI gang only where its launcher can go, and honours a master template that
// allows only spot nodes for a task that writes no checkpoint (the spot rule keeps it off spot
// otherwise).
#include <gtest/gtest.h>

#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {

using namespace fixtures;

const Taint kSpotTaint{"spot", "true", "NoSchedule"};

Node spot_node(const std::string& name) {
  Node n = nvidia(name, 4, "spot");
  n.labels = {{"pool", "spot-a100"}};
  n.taints = {kSpotTaint};
  return n;
}
Node stable_node(const std::string& name, const std::string& pool) {
  Node n = nvidia(name, 4);
  n.labels = {{"pool", pool}};
  return n;
}

// A task of 2 workers without checkpoints whose master and worker templates pin the spot pool.
Task pinned_to_spot_pool() {
  Task t = task("t", 0, 2, 2);
  t.node_selector = {{"pool", "spot-a100"}};
  t.tolerations = {{"spot", "Equal", "true", "NoSchedule"}};
  Task::Launcher l;
  l.node_selector = t.node_selector;
  l.tolerations = t.tolerations;
  l.room = {{"pods", 1}};
  t.launcher = l;
  return t;
}

TEST(PlannerLauncher, ATemplateThatAllowsOnlySpotNodesIsHonouredForAnUncheckpointedTask) {
  auto ds = plan({spot_node("s1")}, {pinned_to_spot_pool()}, kNow, Config{});
  ASSERT_EQ(ds[0].action, Action::Admit) << ds[0].reason;
  EXPECT_TRUE(ds[0].launcher_on_spot);
  // A stable node the template allows too: the spot rule keeps the launcher there.
  Node stable = stable_node("o1", "spot-a100");
  auto mixed = plan({spot_node("s1"), stable}, {pinned_to_spot_pool()}, kNow, Config{});
  ASSERT_GT(mixed[0].workers, 0) << mixed[0].reason;
  EXPECT_FALSE(mixed[0].launcher_on_spot);
  // A task that checkpoints is not kept off spot at all: nothing to honour.
  Task checkpointed = pinned_to_spot_pool();
  checkpointed.checkpointed = true;
  EXPECT_FALSE(plan({spot_node("s1")}, {checkpointed}, kNow, Config{})[0].launcher_on_spot);
  // The flag stays with the running task (its next epoch's launcher goes there too).
  Task running = apply(pinned_to_spot_pool(), ds[0], kNow);
  auto again = plan({spot_node("s1")}, {running}, kNow, Config{});
  EXPECT_EQ(again[0].action, Action::Keep);
  EXPECT_TRUE(again[0].launcher_on_spot);
}

TEST(PlannerLauncher, AGangWhoseLauncherNoNodeCanHoldWaitsUnplaceableAndHoldsNothing) {
  // The master template pins a pool that does not exist; the workers could run.
  Task t = task("t", 0, 2, 2);
  Task::Launcher l;
  l.node_selector = {{"pool", "cpu-nodes"}};
  t.launcher = l;
  auto ds = plan({stable_node("o1", "a100")}, {t}, kNow, Config{});
  EXPECT_EQ(ds[0].action, Action::Wait);
  EXPECT_EQ(ds[0].workers, 0);
  EXPECT_NE(ds[0].reason.find("Unplaceable: no node Valley plans on may hold its launcher (nodeSelector pool=cpu-nodes"), std::string::npos)
      << ds[0].reason;
  // Only tainted nodes it does not tolerate: the same.
  Task plain = task("p", 0, 1, 1);
  plain.checkpointed = true;  // its workers may go to spot, and tolerate the taint; its launcher does not
  plain.tolerations = {{"spot", "Equal", "true", "NoSchedule"}};
  plain.launcher = Task::Launcher{};
  auto tainted = plan({spot_node("s1")}, {plain}, kNow, Config{});
  EXPECT_EQ(tainted[0].workers, 0);
  EXPECT_NE(tainted[0].reason.find("Unplaceable"), std::string::npos) << tainted[0].reason;
  // Its CPU request larger than any node it may use.
  Task big = task("b", 0, 1, 1);
  big.launcher = Task::Launcher{{}, {}, {}, {{"cpu", 64'000}, {"pods", 1}}};
  Node small = stable_node("o1", "a100");
  small.room_capacity = {{"cpu", 8'000}, {"pods", 110}};
  auto ds_big = plan({small}, {big}, kNow, Config{});
  EXPECT_EQ(ds_big[0].workers, 0);
  EXPECT_NE(ds_big[0].reason.find("its launcher needs 64 CPUs; the largest node it may use (off spot: the task writes no checkpoint) has 8"),
            std::string::npos)
      << ds_big[0].reason;
  // The operator's launcher pool is required as well.
  Config pooled;
  pooled.launcher_pool = {{"role", "launchers"}};
  EXPECT_EQ(plan({stable_node("o1", "a100")}, {plain}, kNow, pooled)[0].workers, 0);
  Node launchers = node("cpu-1", "", "on-demand", {});
  launchers.labels = {{"role", "launchers"}};
  EXPECT_EQ(plan({stable_node("o1", "a100"), launchers}, {plain}, kNow, pooled)[0].workers, 1);
  // A plan that does not see the launchers' nodes (the simulator) does not check them.
  Config unseen;
  unseen.launcher_nodes_known = false;
  EXPECT_EQ(plan({stable_node("o1", "a100")}, {t}, kNow, unseen)[0].workers, 2);
}

}  // namespace
}  // namespace valley::planner
