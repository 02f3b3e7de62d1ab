// Price-first placement, reduceCost's cheapest reachable option (patience and deadlines), and growth
// that has to pay: the planner's economics, and the scaling model it learns from.
#include <gtest/gtest.h>

#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {
using namespace std::chrono_literals;
using fixtures::measured;

const SystemTime kNow = SystemTime(std::chrono::seconds(1795316645));

Node pool_node(const std::string& name, const std::string& vendor, const std::string& cls, int gpus, int64_t price,
               int64_t kw_milli = 0) {
  Node n;
  n.name = name;
  n.vendor = vendor;
  n.capacity_class = cls;
  n.free = n.capacity = {{vendor + ".com/gpu", gpus}};
  n.price_micros = price;
  n.kw_milli = kw_milli;
  return n;
}

Task ranged_task(const std::string& key, int min, int max) {
  Task t;
  t.key = key;
  t.min_workers = min;
  t.max_workers = max;
  t.created = kNow - 60s;
  return t;
}

std::map<std::string, int> workers_by_node(const Decision& d) {
  std::map<std::string, int> m;
  for (const auto& w : d.placement) ++m[w.node];
  return m;
}

// --- placement by price -------------------------------------------------------------------------

TEST(PlacementByPrice, CheapestVendorWinsAndAGangStaysOnOneVendor) {
  // MI250X on demand (1.60) is cheaper than A100 on demand (2.40): an amdSupport task goes there,
  // reduceCost or not; a task that may not use AMD never does.
  std::vector<Node> nodes = {pool_node("a100", "nvidia", "on-demand", 8, 2'400'000), pool_node("mi250", "amd", "on-demand", 8, 1'600'000)};
  Task portable = ranged_task("portable", 4, 4), cuda = ranged_task("cuda", 2, 2);
  portable.vendors = {"nvidia", "amd"};
  auto ds = plan(nodes, {portable, cuda}, kNow);
  EXPECT_EQ(workers_by_node(ds[0]), (std::map<std::string, int>{{"mi250", 4}}));
  EXPECT_EQ(workers_by_node(ds[1]), (std::map<std::string, int>{{"a100", 2}}));
  EXPECT_EQ(ds[0].price_micros, 1'600'000);
  // When the AMD pool is dearer, NVIDIA wins (no global "AMD is cheaper" switch).
  nodes[1].price_micros = 3'000'000;
  EXPECT_EQ(workers_by_node(plan(nodes, {portable}, kNow)[0]), (std::map<std::string, int>{{"a100", 4}}));
  // A gang larger than the cheap vendor's free GPUs does not spill onto the other vendor.
  nodes[1].price_micros = 1'600'000;
  Task big = ranged_task("big", 12, 12);
  big.vendors = {"nvidia", "amd"};
  nodes.push_back(pool_node("a100-2", "nvidia", "on-demand", 8, 2'400'000));
  auto d = plan(nodes, {big}, kNow)[0];
  EXPECT_EQ(d.action, Action::Admit);
  EXPECT_EQ(workers_by_node(d), (std::map<std::string, int>{{"a100", 8}, {"a100-2", 4}}));
}

TEST(PlacementByPrice, SpotOnlyForTasksThatCheckpointAndEnergyCountsAtTheCurrentTariff) {
  std::vector<Node> nodes = {pool_node("od", "nvidia", "on-demand", 8, 2'400'000, 560),
                             pool_node("spot", "nvidia", "spot", 8, 950'000, 560)};
  Task saved = ranged_task("saved", 2, 2), plain = ranged_task("plain", 2, 2);
  saved.checkpointed = true;
  // As with a PricingPolicy: spot capacity only for tasks that checkpoint.
  auto plan = [&](const std::vector<Node>& n, const std::vector<Task>& t, SystemTime now, Config c = {}) {
    c.spot_needs_checkpoint = true;
    return planner::plan(n, t, now, c);
  };
  auto ds = plan(nodes, {saved, plain}, kNow);
  EXPECT_EQ(workers_by_node(ds[0]), (std::map<std::string, int>{{"spot", 2}}));
  EXPECT_EQ(workers_by_node(ds[1]), (std::map<std::string, int>{{"od", 2}}));
  // Nothing on demand left: the plain task waits rather than risk its work on spot capacity...
  // (unless its nodeSelector picks the node itself)
  nodes[0].free["nvidia.com/gpu"] = 0;
  EXPECT_EQ(plan(nodes, {plain}, kNow)[0].action, Action::Wait);
  // ...unless it asks for spot itself.
  plain.selects_spot = true;
  EXPECT_EQ(plan(nodes, {plain}, kNow)[0].action, Action::Admit);
  // Without a PricingPolicy nothing makes spot attractive: a plain task only prefers on-demand.
  plain.selects_spot = false;
  EXPECT_EQ(planner::plan(nodes, {plain}, kNow)[0].action, Action::Admit);
  // The price now includes energy: 0.56 kW x 0.14/kWh = 0.0784 a GPU-hour at the peak tariff.
  Config c;
  c.tariff = {{kNow - 1h, 140'000}, {kNow + 1h, 35'000}};
  EXPECT_EQ(price_at(nodes[1], c, kNow), 950'000 + 78'400);
  EXPECT_EQ(price_at(nodes[1], c, kNow + 2h), 950'000 + 19'600);
  EXPECT_EQ(plan(nodes, {saved}, kNow, c)[0].price_micros, 950'000 + 78'400);
}

// --- moves to cheaper capacity ------------------------------------------------------------------

TEST(Moves, ARunningTaskThatCheckpointsMovesToCheaperFreeCapacityOnlyWhenTheSavingPaysForTheRestart) {
  // It started on demand (2.40) while spot (0.95) was full; spot is free now.
  std::vector<Node> nodes = {pool_node("od", "nvidia", "on-demand", 8, 2'400'000), pool_node("spot", "nvidia", "spot", 8, 950'000)};
  Task running = ranged_task("running", 2, 2);
  running.checkpointed = running.admitted = true;
  running.workers = {{"od", "nvidia.com/gpu", 1}, {"od", "nvidia.com/gpu", 1}};
  running.expected_end = kNow + 4h;
  Config c;
  c.spot_needs_checkpoint = true;
  c.move_restart_cost = 5min;
  Decision d = plan(nodes, {running}, kNow, c)[0];
  ASSERT_EQ(d.action, Action::Move) << d.reason;
  EXPECT_EQ(workers_by_node(d), (std::map<std::string, int>{{"spot", 2}}));
  EXPECT_EQ(d.workers, 2);
  EXPECT_NE(d.reason.find("moving to cheaper capacity: 0.9500/GPU-h instead of 2.4000"), std::string::npos) << d.reason;
  // Saving 1.45/GPU-h for a minute does not pay for five minutes held at 0.95: it stays.
  running.expected_end = kNow + 1min;
  EXPECT_EQ(plan(nodes, {running}, kNow, c)[0].action, Action::Keep);
  running.expected_end = kNow + 4h;
  // Moves off (restart cost 0), a task without a checkpoint (it would lose its work) or without an
  // expected end, a hot-elastic task, or no cheaper node free: it stays.
  Config off = c;
  off.move_restart_cost = 0s;
  EXPECT_EQ(plan(nodes, {running}, kNow, off)[0].action, Action::Keep);
  Task plain = running;
  plain.checkpointed = false;
  EXPECT_EQ(plan(nodes, {plain}, kNow, c)[0].action, Action::Keep);
  Task unknown = running;
  unknown.expected_end.reset();
  EXPECT_EQ(plan(nodes, {unknown}, kNow, c)[0].action, Action::Keep);
  Task hot = running;
  hot.hot_elastic = true;
  EXPECT_EQ(plan(nodes, {hot}, kNow, c)[0].action, Action::Keep);
  std::vector<Node> full = nodes;
  full[1].free["nvidia.com/gpu"] = 1;
  EXPECT_EQ(plan(full, {running}, kNow, c)[0].action, Action::Keep);
  // While a task that goes before it waits (a gang larger than what is free), it stays too.
  Task big = ranged_task("big", 20, 20);
  big.priority = 50;
  auto with_big = plan(nodes, {running, big}, kNow, c);
  ASSERT_EQ(with_big[1].action, Action::Wait) << with_big[1].reason;
  EXPECT_EQ(with_big[0].action, Action::Keep) << with_big[0].reason;
  // A waiting task goes first: it takes the spot GPUs and the running one stays.
  Task waiting = ranged_task("waiting", 8, 8);
  waiting.checkpointed = true;
  auto ds = plan(nodes, {running, waiting}, kNow, c);
  EXPECT_EQ(ds[1].action, Action::Admit);
  EXPECT_EQ(ds[0].action, Action::Keep) << ds[0].reason;
}

// --- reduceCost: the cheapest option reachable within its patience ------------------------------

TEST(ReduceCost, WaitsForACheaperPoolThatRunningTasksWillFreeThenTakesIt) {
  // Only on-demand A100 is free; the spot pool is held by a task expected to end in 2 hours.
  std::vector<Node> nodes = {pool_node("od", "nvidia", "on-demand", 8, 2'400'000),
                             pool_node("spot", "nvidia", "spot", 8, 950'000)};
  Task holder = ranged_task("holder", 8, 8);
  holder.checkpointed = true;
  holder.admitted = true;
  for (int i = 0; i < 8; ++i) holder.workers.push_back({"spot", "nvidia.com/gpu", 1});
  holder.expected_end = kNow + 2h;
  Task cheap = ranged_task("cheap", 4, 4);
  cheap.reduce_cost = cheap.checkpointed = true;
  cheap.cheap_until = kNow + 6h;
  auto ds = plan(nodes, {holder, cheap}, kNow);
  const Decision& w = ds[1];
  ASSERT_EQ(w.action, Action::Wait) << w.reason;
  ASSERT_TRUE(w.expected_start);
  EXPECT_EQ(*w.expected_start, kNow + 2h);
  EXPECT_EQ(w.expected_node, "spot");
  EXPECT_NE(w.reason.find("ReduceCost: waiting for nvidia spot at 0.9500/GPU-h"), std::string::npos) << w.reason;
  EXPECT_NE(w.reason.find("now 2.4000/GPU-h"), std::string::npos) << w.reason;
  // If the holder is not expected to end before its patience runs out, spot is not reachable: it starts now.
  holder.expected_end = kNow + 7h;
  EXPECT_EQ(plan(nodes, {holder, cheap}, kNow)[1].action, Action::Admit);
  // Patience over: it takes what is free.
  holder.expected_end = kNow + 2h;
  cheap.cheap_until = kNow - 1s;
  EXPECT_EQ(workers_by_node(plan(nodes, {holder, cheap}, kNow)[1]), (std::map<std::string, int>{{"od", 4}}));
  EXPECT_NE(plan(nodes, {holder, cheap}, kNow)[1].reason.find("its patience let it wait for cheaper capacity until"), std::string::npos);
  // A holder that overruns its expected end is expected to release now: the task keeps waiting
  // while its deadline leaves slack, then takes on-demand and says why.
  holder.expected_end = kNow - 10min;
  cheap.has_deadline = true;
  cheap.cheap_until = kNow + 30s;
  Decision waiting = plan(nodes, {holder, cheap}, kNow)[1];
  ASSERT_EQ(waiting.action, Action::Wait) << waiting.reason;
  EXPECT_EQ(*waiting.expected_start, kNow);
  cheap.cheap_until = kNow - 1s;
  Decision moved = plan(nodes, {holder, cheap}, kNow)[1];
  EXPECT_EQ(workers_by_node(moved), (std::map<std::string, int>{{"od", 4}}));
  EXPECT_NE(moved.reason.find("its deadline let it wait for cheaper capacity until"), std::string::npos) << moved.reason;
  // A task without reduceCost never waits for price.
  Task normal = ranged_task("normal", 4, 4);
  normal.checkpointed = true;
  EXPECT_EQ(plan(nodes, {holder, normal}, kNow)[1].action, Action::Admit);
}

TEST(ReduceCost, WaitsForACheaperTariffWindowWithinItsPatienceOnly) {
  // One pool; energy is 0.14/kWh now (peak) and 0.035 from 3 hours on (valley).
  std::vector<Node> nodes = {pool_node("od", "nvidia", "on-demand", 8, 2'400'000, 560)};
  Config c;
  c.tariff = {{kNow - 1h, 140'000}, {kNow + 3h, 35'000}};
  Task cheap = ranged_task("cheap", 2, 2);
  cheap.reduce_cost = true;
  cheap.cheap_until = kNow + 6h;
  auto d = plan(nodes, {cheap}, kNow, c)[0];
  ASSERT_EQ(d.action, Action::Wait) << d.reason;
  EXPECT_EQ(*d.expected_start, kNow + 3h);
  // The valley window lies beyond its patience: the peak price now is the best it can reach.
  cheap.cheap_until = kNow + 2h;
  EXPECT_EQ(plan(nodes, {cheap}, kNow, c)[0].action, Action::Admit);
  // In the window, it starts.
  cheap.cheap_until = kNow + 6h;
  EXPECT_EQ(plan(nodes, {cheap}, kNow + 3h, c)[0].action, Action::Admit);
  // The valley saves 2.4% (2.4784 -> 2.4196 a GPU-hour): under a policy's 10% minimum it is not
  // worth the wait, over a 2% one it is.
  c.reduce_cost_min_saving_percent = 10;
  EXPECT_EQ(plan(nodes, {cheap}, kNow, c)[0].action, Action::Admit);
  c.reduce_cost_min_saving_percent = 2;
  EXPECT_EQ(plan(nodes, {cheap}, kNow, c)[0].action, Action::Wait);
}

TEST(ReduceCost, AmdSupportAndReduceCostLandsOnTheCheapestPoolNotOnDemandA100) {
  // The bug this replaces: "AMD is cheaper" compared AMD with NVIDIA *spot*, so such a task took
  // on-demand A100 before MI250X. Now: spot A100 if it checkpoints, else MI250X, never on-demand A100.
  std::vector<Node> nodes = {pool_node("a100-od", "nvidia", "on-demand", 8, 2'400'000, 560),
                             pool_node("a100-spot", "nvidia", "spot", 8, 950'000, 560),
                             pool_node("mi250", "amd", "on-demand", 8, 1'600'000, 784)};
  Task t = ranged_task("t", 4, 4);
  t.vendors = {"nvidia", "amd"};
  t.reduce_cost = true;
  t.cheap_until = kNow + 6h;
  Config c;  // as with a PricingPolicy
  c.spot_needs_checkpoint = true;
  EXPECT_EQ(workers_by_node(plan(nodes, {t}, kNow, c)[0]), (std::map<std::string, int>{{"mi250", 4}}));
  t.checkpointed = true;
  EXPECT_EQ(workers_by_node(plan(nodes, {t}, kNow, c)[0]), (std::map<std::string, int>{{"a100-spot", 4}}));
}

// --- growth that pays ---------------------------------------------------------------------------

TEST(Scaling, ObservationsAreRunningMeansPerSizeAndRoundTripThroughStatus) {
  Scaling s;
  s = observe(s, 4, 2.0);
  s = observe(s, 2, 1.0);
  s = observe(s, 4, 4.0);
  s = observe(s, 3, -1);  // ignored
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].workers, 2);
  EXPECT_DOUBLE_EQ(s[1].rate, 3.0);
  EXPECT_EQ(s[1].samples, 2);
  Scaling back = scaling_from(scaling_json(s));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(back[1].rate, 3.0);
  EXPECT_EQ(back[1].samples, 2);
  // Hostile status: skipped, never thrown.
  EXPECT_TRUE(scaling_from(nlohmann::json::parse(R"([{"workers":"4"},{"workers":0,"stepsPerSecond":1},3,null])")).empty());
  EXPECT_DOUBLE_EQ(*progress_rate(100, "2026-11-23T10:00:00Z", 400, "2026-11-23T10:05:00Z"), 1.0);
  EXPECT_FALSE(progress_rate(400, "2026-11-23T10:00:00Z", 100, "2026-11-23T10:05:00Z"));
  EXPECT_FALSE(progress_rate(100, "2026-11-23T10:05:00Z", 400, "2026-11-23T10:05:00Z"));
}

// A synthetic workload: how many steps per second it makes at n workers.
TEST(Scaling, GrowsOneStepAtATimeWhileItPaysAndGivesBackWhatDidNot) {
  const double kMin = 0.8;
  // Nothing measured: run at min, and wait for a measurement before growing.
  EXPECT_EQ(paying_size({}, 0, 2, 16, 1, 0.25, kMin), 2);
  EXPECT_EQ(paying_size({}, 2, 2, 16, 1, 0.25, kMin), 2);
  // Measured at 2: explore one step up (2 -> 3).
  EXPECT_EQ(paying_size(measured({{2, 2.0}}), 2, 2, 16, 1, 0.25, kMin), 3);
  // 3 paid (marginal 0.95 of linear): explore to 4.
  EXPECT_EQ(paying_size(measured({{2, 2.0}, {3, 2.95}}), 3, 2, 16, 1, 0.25, kMin), 4);
  // Running at 4, not measured yet: stay.
  EXPECT_EQ(paying_size(measured({{2, 2.0}, {3, 2.95}}), 4, 2, 16, 1, 0.25, kMin), 4);
  // 4 did not pay (marginal 0.2): back to 3, and a new admission starts at 3.
  Scaling flat = measured({{2, 2.0}, {3, 2.95}, {4, 3.15}});
  EXPECT_EQ(paying_size(flat, 4, 2, 16, 1, 0.25, kMin), 3);
  EXPECT_EQ(paying_size(flat, 0, 2, 16, 1, 0.25, kMin), 3);
  EXPECT_EQ(paying_size(flat, 3, 2, 16, 1, 0.25, kMin), 3);
  // Restarted smaller after a spot loss: grow back to the proven size.
  EXPECT_EQ(paying_size(flat, 2, 2, 16, 1, 0.25, kMin), 3);
  // Linear scaling all the way: up to max, never past it; the step follows the anti-thrash rule.
  EXPECT_EQ(paying_size(measured({{8, 8.0}}), 8, 8, 16, 1, 0.25, kMin), 10);
  EXPECT_EQ(paying_size(measured({{8, 8.0}, {16, 16.0}}), 16, 8, 16, 1, 0.25, kMin), 16);
  // A threshold of 0.8: 0.79 of linear does not pay, 0.81 does.
  EXPECT_EQ(paying_size(measured({{4, 4.0}, {5, 4.79}}), 5, 4, 8, 1, 0.25, kMin), 4);
  EXPECT_EQ(paying_size(measured({{4, 4.0}, {5, 4.81}}), 5, 4, 8, 1, 0.25, kMin), 7);  // step from 5: ceil(25%) = 2
}

TEST(Scaling, SpeedupRatioInterpolatesAndExtrapolatesAtTheLastMarginal) {
  Scaling s = measured({{2, 2.0}, {4, 3.0}});
  EXPECT_DOUBLE_EQ(speedup_ratio(s, 2, 4, 0.9), 1.5);
  EXPECT_DOUBLE_EQ(speedup_ratio(s, 2, 3, 0.9), 1.25);
  EXPECT_DOUBLE_EQ(speedup_ratio(s, 2, 1, 0.9), 0.5);       // below: linear
  EXPECT_DOUBLE_EQ(speedup_ratio(s, 4, 6, 0.9), 4.0 / 3.0);  // above: the last marginal (0.5 of linear)
  EXPECT_DOUBLE_EQ(speedup_ratio({}, 1, 3, 0.9), 2.8);       // nothing measured: the prior
}

TEST(Growth, APlannedTaskGrowsOnlyWhileMeasuredSpeedupPaysAndFastestTasksGrowAnyway) {
  Config priced;
  priced.min_marginal_efficiency = 0.8;  // what a PricingPolicy sets by default
  auto plan = [&](const std::vector<Node>& n, const std::vector<Task>& t, SystemTime now, Config c = {}) {
    if (c.min_marginal_efficiency == 0 && c.fastest_priority == 101) c = priced;
    return planner::plan(n, t, now, c);
  };
  std::vector<Node> nodes = {pool_node("n1", "nvidia", "on-demand", 8, 2'400'000), pool_node("n2", "nvidia", "on-demand", 8, 2'400'000)};
  Task t = ranged_task("t", 4, 16);
  // New: admitted at min.
  auto d = plan(nodes, {t}, kNow)[0];
  EXPECT_EQ(d.action, Action::Admit);
  EXPECT_EQ(d.workers, 4);
  // Running at 4, measured: one step up (4 -> 5) once the resize interval allows.
  t.admitted = true;
  t.workers = d.placement;
  t.scaling = measured({{4, 4.0}});
  d = plan(nodes, {t}, kNow)[0];
  EXPECT_EQ(d.action, Action::Grow);
  EXPECT_EQ(d.workers, 5);
  t.last_resize = kNow;
  EXPECT_EQ(plan(nodes, {t}, kNow + 1min)[0].action, Action::Keep);  // anti-thrash
  // Measured at 5: it did not pay; at the next interval it gives the worker back.
  t.workers = d.placement;
  t.scaling = measured({{4, 4.0}, {5, 4.2}});
  d = plan(nodes, {t}, kNow + 10min)[0];
  EXPECT_EQ(d.action, Action::Shrink);
  EXPECT_EQ(d.workers, 4);
  EXPECT_NE(d.reason.find("below 80% of linear"), std::string::npos) << d.reason;
  // Speed over cost: a fastest task (or one at the policy's fast priority) takes max at once.
  Task fast = ranged_task("fast", 4, 16);
  fast.fastest = true;
  EXPECT_EQ(plan(nodes, {fast}, kNow)[0].workers, 16);
  Task urgent = ranged_task("urgent", 4, 16);
  urgent.priority = 95;
  Config c = priced;
  c.fastest_priority = 90;
  EXPECT_EQ(plan(nodes, {urgent}, kNow, c)[0].workers, 16);
  // Growth not priced (no PricingPolicy: min marginal 0): everything to max, as before.
  EXPECT_EQ(planner::plan(nodes, {ranged_task("any", 4, 16)}, kNow)[0].workers, 16);
}

// A growth says which rule moved the task, by how much and where.
TEST(Growth, TheReasonNamesTheRuleTheSizesAndThePool) {
  Config priced;
  priced.min_marginal_efficiency = 0.8;
  std::vector<Node> nodes = {pool_node("n1", "nvidia", "on-demand", 8, 2'400'000), pool_node("n2", "nvidia", "on-demand", 8, 2'400'000)};
  Task t = ranged_task("t", 4, 16);
  t.admitted = true;
  t.workers = planner::plan(nodes, {t}, kNow, priced)[0].placement;
  t.scaling = measured({{4, 4.0}});
  auto d = planner::plan(nodes, {t}, kNow, priced)[0];
  ASSERT_EQ(d.action, Action::Grow);
  EXPECT_EQ(d.reason, "grew 4 -> 5: no two sizes measured yet: one step at a time; 1 worker placed on free nvidia/on-demand");
  t.workers = d.placement;
  t.scaling = measured({{4, 4.0}, {5, 4.95}});
  d = planner::plan(nodes, {t}, kNow, priced)[0];
  ASSERT_EQ(d.action, Action::Grow);
  EXPECT_EQ(d.reason.substr(0, d.reason.find(';')), "grew 5 -> 7: measured speedup from 4 to 5 workers is 0.95 of linear (pays from 0.80)");
  std::string why;
  EXPECT_EQ(target_size(ranged_task("x", 1, 4), 1, Config{}, &why), 4);
  EXPECT_EQ(why, "growth is not priced (no PricingPolicy): grows to max");
}

// Tasks of one kind teach a newcomer where growth pays: it starts there, not at its minimum.
TEST(ScalingPriors, TasksOfOneKindPoolWhatTheyMeasuredAndANewTaskStartsAtTheirPayingSize) {
  ScalingPriors priors;
  EXPECT_EQ(priors.pooled("bert"), nullptr);
  priors.record("bert", "a", measured({{2, 2.0}}));  // one size teaches nothing
  EXPECT_EQ(priors.pooled("bert"), nullptr);
  // Per-worker rates 1, 0.95, 0.9 at 2, 4, 6 (steps per second differ between tasks: only the shape counts).
  priors.record("bert", "a", measured({{2, 20.0}, {4, 38.0}, {6, 54.0}}));
  // Another task of the kind measured from 4: scaled to the pool's 0.95 at 4; 8 barely pays.
  priors.record("bert", "b", measured({{4, 4.0}, {8, 4.4}}));
  priors.record("resnet", "c", measured({{1, 1.0}, {2, 2.0}}));
  auto pooled = priors.pooled("bert");
  ASSERT_TRUE(pooled);
  ASSERT_EQ(pooled->size(), 4u);
  EXPECT_EQ((*pooled)[1].workers, 4);
  EXPECT_NEAR((*pooled)[1].rate / 4, 0.95, 1e-9);          // both tasks' 4: 0.95
  EXPECT_NEAR((*pooled)[3].rate / 8, 0.95 * 0.55, 1e-9);   // b's 8 relative to its 4, on the pool's scale
  EXPECT_EQ((*pooled)[1].samples, 2);
  // A new bert task (2..16) starts where the pooled chain stops paying at 80% of linear: 6.
  Config priced;
  priced.min_marginal_efficiency = 0.8;
  Task t = ranged_task("new", 2, 16);
  t.prior_scaling = pooled;
  EXPECT_EQ(target_size(t, 0, priced), 6);
  std::vector<Node> nodes = {pool_node("n1", "nvidia", "on-demand", 8, 2'400'000), pool_node("n2", "nvidia", "on-demand", 8, 2'400'000)};
  EXPECT_EQ(planner::plan(nodes, {t}, kNow, priced)[0].workers, 6);
  // Its own two sizes outrank the prior; without priors (valley-v2) it starts at its minimum.
  t.scaling = measured({{2, 2.0}, {3, 2.1}});
  EXPECT_EQ(target_size(t, 0, priced), 2);
  t.scaling.clear();
  priced.scaling_priors = false;
  EXPECT_EQ(target_size(t, 0, priced), 2);
  // A task's newer measurements replace its older ones.
  priors.record("resnet", "c", measured({{1, 1.0}, {2, 1.2}}));
  EXPECT_NEAR((*priors.pooled("resnet"))[1].rate, 1.2, 1e-9);
}

}  // namespace
}  // namespace valley::planner
