// The planner with tenants: quotas, borrowing, reclaim, fair share, budgets; and its properties.
#include "controllers/planner/planner.h"

#include <gtest/gtest.h>

#include <random>

#include "controllers/planner/fair_share.h"
#include "tests/unit/controllers/planner_fixtures.h"

// --- Tenants: quotas, borrowing, reclaim, fair share, budgets ---

namespace valley::planner {
namespace {
using namespace fixtures;
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
  EXPECT_EQ(find(ds, "a/train").reason, "shrunk for another namespace's task: tenant b reclaims its quota lent to a");
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
using namespace fixtures;

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
    HeldByPlanned returned;
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

// --- Gangs bigger than a tenant's nominal in any one pool ---

// Two NVIDIA pools (on demand and spot), two nodes of 8 each; a and b have `nominal` in each.
struct TwoPools {
  std::vector<Node> nodes = {nvidia("od1", 8), nvidia("od2", 8), nvidia("sp1", 8, "spot"), nvidia("sp2", 8, "spot")};
  Config config;
  explicit TwoPools(int64_t nominal) {
    config.min_marginal_efficiency = 0;
    for (const char* t : {"a", "b"})
      for (const char* pool : {"nvidia/on-demand", "nvidia/spot"}) config.tenants[t].quota[pool] = PoolQuota{nominal * 1000, std::nullopt, std::nullopt};
  }
};
Task checkpointed(Task t) {
  t.checkpointed = true;  // may run on spot
  return t;
}

TEST(PlannerBigGangs, AGangLargerThanAnyOnePoolsNominalReclaimsAcrossPoolsByShrinking) {
  TwoPools p(8);
  Task b = of("b", checkpointed(task("b/wide", 50, 4, 32)));
  auto ds = plan(p.nodes, {b}, kNow - 1h, p.config);
  ASSERT_EQ(ds[0].workers, 32);  // all of a's idle nominal is lent
  b = apply(b, ds[0], kNow - 1h);
  // a's 12-worker gang: 8 of nominal in each pool, neither alone holds it; both together do.
  ds = plan(p.nodes, {b, of("a", checkpointed(task("a/gang", 0, 12, 12)))}, kNow, p.config);
  const Decision& a = find(ds, "a/gang");
  ASSERT_EQ(a.action, Action::Admit) << a.reason;
  EXPECT_EQ(a.workers, 12);
  EXPECT_EQ(a.reason, "minimum gang of 12 fits; its GPUs come back from another namespace's task of tenant b shrunk 32 -> 20");
  EXPECT_EQ(find(ds, "b/wide").action, Action::Shrink);  // shrunk, not preempted
  EXPECT_EQ(find(ds, "b/wide").workers, 20);  // its 16 of nominal and 4 of what a does not use
  EXPECT_EQ(find(ds, "b/wide").reason, "shrunk for another namespace's task: tenant a reclaims its quota lent to b");
}

TEST(PlannerBigGangs, AGangMayStartPartlyOnNominalAndPartlyOnBorrowedCapacityWithinItsFairShare) {
  // One pool of 24: a is guaranteed 8, b nothing; b's elastic task holds all 24.
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8), nvidia("n3", 8)};
  Config c = two_teams(8, 0);
  Task b = of("b", task("b/wide", 50, 4, 24));
  b = apply(b, plan(nodes, {b}, kNow - 1h, c)[0], kNow - 1h);
  ASSERT_EQ(b.workers.size(), 24u);
  // a's 12: its 8 back, and 4 borrowed from b, which holds twice its fair share (12 of 24).
  auto ds = plan(nodes, {b, of("a", task("a/gang", 0, 12, 12))}, kNow, c);
  ASSERT_EQ(find(ds, "a/gang").action, Action::Admit) << find(ds, "a/gang").reason;
  EXPECT_EQ(find(ds, "b/wide").workers, 12);
  // With a weight that makes its fair share 4 GPUs, a claims its nominal only: 8 do not hold 12.
  c.tenants["a"].weight = 0.2;
  ds = plan(nodes, {b, of("a", task("a/gang", 0, 12, 12))}, kNow, c);
  EXPECT_EQ(find(ds, "a/gang").action, Action::Wait);
  EXPECT_EQ(find(ds, "b/wide").action, Action::Keep);
  EXPECT_EQ(find(ds, "a/gang").reason,
            "InsufficientCapacity: needs 12 GPUs (12 workers x 1), 0 free; tenant a: unused nominal 8 on nvidia/on-demand; fair share 4 GPUs, holds 0");
}

TEST(PlannerBigGangs, AFairShareClaimTakesOnlyWhatTenantsBeyondTheirShareBorrow) {
  // Three tenants on 24 GPUs, weights equal. c holds its nominal 8 exactly; b borrows 16.
  std::vector<Node> nodes = {nvidia("n1", 8), nvidia("n2", 8), nvidia("n3", 8)};
  Config cfg = two_teams(0, 0);
  cfg.tenants["c"].quota["nvidia/on-demand"] = PoolQuota{8000, std::nullopt, std::nullopt};
  Task c = of("c", task("c/own", 0, 8, 8)), b = of("b", task("b/wide", 90, 8, 16));
  auto ds = plan(nodes, {c, b}, kNow - 1h, cfg);
  c = apply(c, find(ds, "c/own"), kNow - 1h);
  b = apply(b, find(ds, "b/wide"), kNow - 1h);
  ASSERT_EQ(b.workers.size() + c.workers.size(), 24u);
  // a (fair share 8 of 24) wants 8: b, beyond its fair share and only borrowing, gives 8 back by
  // shrinking; c, inside its nominal, is not touched although its priority is the lowest.
  ds = plan(nodes, {c, b, of("a", task("a/eight", 100, 8, 8))}, kNow, cfg);
  EXPECT_EQ(find(ds, "a/eight").action, Action::Admit) << find(ds, "a/eight").reason;
  EXPECT_EQ(find(ds, "b/wide").workers, 8);
  EXPECT_EQ(find(ds, "c/own").action, Action::Keep);
  // A gang beyond a's fair share waits rather than take from anyone.
  ds = plan(nodes, {c, b, of("a", task("a/sixteen", 100, 16, 16))}, kNow, cfg);
  EXPECT_EQ(find(ds, "a/sixteen").action, Action::Wait);
  EXPECT_EQ(find(ds, "b/wide").action, Action::Keep);
}

TEST(FairShares, WhatSatisfiedTenantsLeaveGoesToTheRestByWeight) {
  // 100 by weight 1:1:2: a wants only 10, so b and c share the 90 left 1:2.
  auto fair = fair_shares(100, {{"a", {1, 10}}, {"b", {1, 100}}, {"c", {2, 100}}});
  EXPECT_EQ(fair["a"], 10);
  EXPECT_EQ(fair["b"], 30);
  EXPECT_EQ(fair["c"], 60);
  // Everyone wants less than there is: each gets what it wants; no demand, no share.
  fair = fair_shares(100, {{"a", {1, 10}}, {"b", {5, 20}}, {"c", {1, 0}}});
  EXPECT_EQ(fair["a"], 10);
  EXPECT_EQ(fair["b"], 20);
  EXPECT_EQ(fair["c"], 0);
}

}  // namespace
}  // namespace valley::planner
