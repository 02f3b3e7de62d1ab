// The growth rule as a user of an elastic task judges it: linear is what a worker does at the task's
// own minimum, a dip does not hide a larger size that pays, a prior stops leading where the task
// outgrows it, pooled curves join where they meet, and a growth step pays for the price it takes.
#include <gtest/gtest.h>

#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {
using namespace fixtures;

constexpr double kMin = 0.8;

TEST(GrowthRule, LinearIsWhatAWorkerDoesAtTheTasksOwnMinimum) {
  // A pooled curve down to one GPU: one worker alone does 1.0, but at 16 each does 0.5.
  Scaling s = measured({{1, 1.0}, {16, 8.0}, {32, 15.0}});
  EXPECT_DOUBLE_EQ(linear_rate(s, 1), 1.0);
  EXPECT_DOUBLE_EQ(linear_rate(s, 16), 0.5);
  EXPECT_DOUBLE_EQ(linear_rate(s, 0), 1.0);  // below every measurement: the smallest size's rate
  // From 16 to 32 adds 7.0 for 16 workers: 0.875 of linear at 16 (pays), though only 0.44 of one
  // GPU's rate (which would not).
  EXPECT_DOUBLE_EQ(step_marginal(s, 16, 32, 16), 0.875);
  EXPECT_EQ(paying_size(s, 16, 16, 32, 1, 0.25, kMin), 32);
  // A step above every measurement is the task's own to measure.
  EXPECT_DOUBLE_EQ(step_marginal(s, 32, 40, 16), 1.0);
}

TEST(GrowthRule, ADipWhereTheGangFirstSpansTwoNodesDoesNotHideALargerSizeThatPays) {
  // 8 workers barely beat 4 (two nodes, slow links), 16 and 32 scale again.
  Scaling s = measured({{4, 4.0}, {8, 5.0}, {16, 13.0}, {32, 27.0}});
  EXPECT_EQ(paying_size(s, 0, 4, 32, 1, 0.25, kMin), 32);
  EXPECT_EQ(paying_size(s, 8, 4, 32, 1, 0.25, kMin), 32);  // from the dip, on to where it pays
  // 16 alone does not pay from 4 (0.75), but 32 does (0.82): judged from the size reached.
  EXPECT_EQ(paying_size(measured({{4, 4.0}, {8, 5.0}, {16, 13.0}, {32, 27.0}}), 4, 4, 64, 1, 0.25, kMin), 32);
  // Nothing above 32 measured: at 32 it explores one step up; at max it stays.
  EXPECT_EQ(paying_size(s, 32, 4, 64, 1, 0.25, kMin), 40);
  EXPECT_EQ(paying_size(s, 32, 4, 32, 1, 0.25, kMin), 32);
  // A measured size above max speaks for max, interpolated: 4 -> 24 reads 20.0, 0.8 of linear.
  EXPECT_EQ(paying_size(s, 4, 4, 24, 1, 0.25, kMin), 24);
  // A size measured above the one reached that did not pay is given back, and never explored again.
  Scaling flat = measured({{4, 4.0}, {8, 7.6}, {12, 8.0}});
  EXPECT_EQ(paying_size(flat, 12, 4, 32, 1, 0.25, kMin), 8);
  EXPECT_EQ(paying_size(flat, 8, 4, 32, 1, 0.25, kMin), 8);
  // Exploring above every measurement and not measured there yet: it waits for the measurement.
  EXPECT_EQ(paying_size(measured({{4, 4.0}, {8, 7.6}}), 10, 4, 32, 1, 0.25, kMin), 10);
}

TEST(GrowthRule, APriorLeadsOnlyUpToTheLargestSizeItsKindMeasured) {
  Config c;
  c.min_marginal_efficiency = kMin;
  Task t = task("t", 0, 8, 128);
  t.prior_scaling = std::make_shared<const Scaling>(measured({{8, 8.0}, {16, 15.5}}));
  bool by_prior = false;
  EXPECT_EQ(&scaling_evidence(t, 16, c, &by_prior), t.prior_scaling.get());
  EXPECT_TRUE(by_prior);
  EXPECT_EQ(target_size(t, 0, c), 16);   // admitted at what its kind proved
  EXPECT_EQ(target_size(t, 16, c), 20);  // and explores above it
  // Running at 20, larger than its kind ever ran: its own measurement leads from here.
  t.scaling = measured({{20, 19.0}});
  EXPECT_EQ(&scaling_evidence(t, 20, c, &by_prior), &t.scaling);
  EXPECT_FALSE(by_prior);
  EXPECT_EQ(target_size(t, 20, c), 25);
  // Without a prior, a single own size explores from there too.
  t.prior_scaling = nullptr;
  EXPECT_EQ(target_size(t, 20, c), 25);
}

TEST(GrowthRule, PooledCurvesJoinAtThePoolsRateWhereTheyMeet) {
  ScalingPriors priors;
  // A small task measured 1 and 4 (per worker 1.0 then 0.9); a larger one 8 and 16 (relative to its
  // own 8: per worker 1.0 then 0.75). The larger one's curve joins at the pool's rate at 8,
  // extrapolated from 1 -> 4 at the last marginal (0.867 of linear): 3.6 + 4 x 0.867 = 7.07.
  priors.record("img", "small", measured({{1, 1.0}, {4, 3.6}}));
  priors.record("img", "large", measured({{8, 80.0}, {16, 120.0}}));
  auto pooled = priors.pooled("img");
  ASSERT_TRUE(pooled);
  ASSERT_EQ(pooled->size(), 4u);
  const double at8 = 3.6 + 4 * (2.6 / 3.0);
  EXPECT_NEAR((*pooled)[2].rate, at8, 1e-9);
  EXPECT_NEAR((*pooled)[3].rate, at8 * 0.75 * 2, 1e-9);
  // A task that joins where the pool has no point of its own is not taken as if it started afresh.
  EXPECT_LT((*pooled)[2].rate / 8, 1.0);
}

TEST(GrowthRule, AGrowthStepTakesNoDearerCapacityThanItsMarginalSpeedupPays) {
  Config c;
  c.min_marginal_efficiency = kMin;
  Task t = task("t", 0, 2, 8);
  // Linear so far: the step may take capacity up to 1/0.8 of what it runs on.
  t.scaling = measured({{2, 2.0}, {4, 4.0}});
  EXPECT_EQ(growth_price_cap(t, 2, 4, 1'000'000, c), 1'250'000);
  // A step at 0.8 of linear pays only at the price it runs on.
  t.scaling = measured({{2, 2.0}, {4, 3.6}});
  EXPECT_EQ(growth_price_cap(t, 2, 4, 1'000'000, c), 1'000'000);
  // Speed over cost, or growth not priced: no cap.
  t.priority = c.fastest_priority;
  EXPECT_FALSE(growth_price_cap(t, 2, 4, 1'000'000, c));
  t.priority = 0;
  c.min_marginal_efficiency = 0;
  EXPECT_FALSE(growth_price_cap(t, 2, 4, 1'000'000, c));
  // In a plan: a task on a 1.00 node grows onto a 1.20 node while its step is linear, not onto 2.00.
  c.min_marginal_efficiency = kMin;
  Node cheap = nvidia("cheap", 2), fair = nvidia("fair", 2), dear = nvidia("dear", 2);
  cheap.price_micros = 1'000'000;
  fair.price_micros = 1'200'000;
  dear.price_micros = 2'000'000;
  t.scaling = measured({{2, 2.0}});
  t.admitted = true;
  t.workers = {{"cheap", "nvidia.com/gpu", 1}, {"cheap", "nvidia.com/gpu", 1}};
  cheap.free = {{"nvidia.com/gpu", 0}};
  auto d = plan({cheap, dear}, {t}, kNow, c)[0];
  EXPECT_EQ(d.action, Action::Keep) << d.reason;
  d = plan({cheap, fair, dear}, {t}, kNow, c)[0];
  EXPECT_EQ(d.action, Action::Grow) << d.reason;
  EXPECT_EQ(d.workers, 3);
}

}  // namespace
}  // namespace valley::planner
