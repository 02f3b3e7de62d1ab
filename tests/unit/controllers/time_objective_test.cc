// The objective of a task that did not ask to wait (no reduceCost): time over money at its priority
// band's exchange rate. It starts as large as free GPUs and its kind's measurements allow, grows
// from the band's threshold, and is not shrunk for cost alone; a reduceCost task of the same kind
// keeps the cost rule (start small, grow only where the speedup pays).
#include <gtest/gtest.h>

#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {
using namespace fixtures;

Config bands() {
  Config c;
  c.min_marginal_efficiency = 0.8;
  c.fastest_priority = 90;
  c.time_bands = {{0, 0.5}, {70, 0.3}};
  return c;
}

TEST(TimelySize, SizesNotMeasuredYetAreTakenToPay) {
  EXPECT_EQ(timely_size({}, 0, 2, 8, 0.5), 8);  // nothing measured: max
  EXPECT_EQ(timely_size({}, 4, 2, 8, 0.5), 8);
  // 4 -> 8 adds 0.3 of linear: below 0.5 it stays at 4, from 0.25 it goes on to max.
  const Scaling s = measured({{4, 4.0}, {8, 5.2}});
  EXPECT_EQ(timely_size(s, 0, 4, 16, 0.5), 4);
  EXPECT_EQ(timely_size(s, 0, 4, 16, 0.25), 16);
  // Running at 8, measured not to pay there: kept (no restart for cost alone).
  EXPECT_EQ(timely_size(s, 8, 4, 16, 0.5), 8);
  // A dip where the gang first spans two nodes does not hide the larger size that pays.
  EXPECT_EQ(timely_size(measured({{4, 4.0}, {8, 5.0}, {16, 13.0}}), 0, 4, 32, 0.5), 32);
  // Measured at one size only: nothing above it fell short.
  EXPECT_EQ(timely_size(measured({{4, 4.0}}), 4, 2, 8, 0.5), 8);
}

TEST(TimeBands, TheBandOfItsPriorityDecidesAndReduceCostKeepsTheCostRule) {
  const Config c = bands();
  Task t = task("t", 69, 2, 8);
  ASSERT_NE(time_band(t, c), nullptr);
  EXPECT_DOUBLE_EQ(growth_threshold(t, c), 0.5);
  t.priority = 70;
  EXPECT_DOUBLE_EQ(growth_threshold(t, c), 0.3);
  t.reduce_cost = true;
  EXPECT_EQ(time_band(t, c), nullptr);
  EXPECT_DOUBLE_EQ(growth_threshold(t, c), 0.8);
  // No bands (an empty withoutReduceCost): every task is judged by the cost rule.
  Config none = c;
  none.time_bands.clear();
  t.reduce_cost = false;
  EXPECT_EQ(time_band(t, none), nullptr);
  EXPECT_DOUBLE_EQ(growth_threshold(t, none), 0.8);
  // A band may start above the lowest priorities: below it, the cost rule.
  Config high = c;
  high.time_bands = {{50, 0.4}};
  t.priority = 10;
  EXPECT_EQ(time_band(t, high), nullptr);
}

TEST(TimeBands, WithoutReduceCostATaskStartsAtMaxWhileAReduceCostOneOfTheSameKindStartsAtMin) {
  const Config c = bands();
  Task quick = task("quick", 50, 2, 8);
  Task thrifty = task("thrifty", 10, 2, 8);
  thrifty.reduce_cost = true;
  auto ds = plan({nvidia("a", 16)}, {quick, thrifty}, kNow, c);
  EXPECT_EQ(find(ds, "quick").action, Action::Admit);
  EXPECT_EQ(find(ds, "quick").workers, 8) << find(ds, "quick").reason;
  EXPECT_EQ(find(ds, "thrifty").workers, 2) << find(ds, "thrifty").reason;
  // What its kind measured rules out the step from 4 to 8 at 0.5: it starts at 4.
  quick.prior_scaling = std::make_shared<const Scaling>(measured({{2, 2.0}, {4, 4.0}, {8, 5.2}}));
  EXPECT_EQ(find(plan({nvidia("a", 16)}, {quick}, kNow, c), "quick").workers, 4);
  // Only 5 GPUs free: it starts at 5 and says so, as any elastic task.
  Task alone = task("alone", 50, 2, 8);
  EXPECT_EQ(find(plan({nvidia("a", 5)}, {alone}, kNow, c), "alone").workers, 5);
}

TEST(TimeBands, ASizeMeasuredNotToPayIsKeptWithoutReduceCostAndGivenBackWithIt) {
  Config c = bands();
  Task t = task("t", 50, 4, 8);
  t.admitted = true;
  t.created = kNow - 2h;
  t.last_resize = kNow - 1h;
  t.scaling = measured({{4, 4.0}, {8, 5.2}});
  for (int k = 0; k < 8; ++k) t.workers.push_back({"a", "nvidia.com/gpu", 1, true, k});
  Node a = nvidia("a", 8);
  a.free = {{"nvidia.com/gpu", 0}};
  auto d = plan({a}, {t}, kNow, c)[0];
  EXPECT_EQ(d.action, Action::Keep) << d.reason;
  EXPECT_EQ(d.workers, 8);
  t.reduce_cost = true;
  d = plan({a}, {t}, kNow, c)[0];
  EXPECT_EQ(d.action, Action::Shrink) << d.reason;
  EXPECT_EQ(d.workers, 4);
}

TEST(TimeBands, AGrowthStepMayTakeCapacityUpToWhatTheBandsRatePays) {
  const Config c = bands();
  Task t = task("t", 50, 2, 8);
  t.scaling = measured({{2, 2.0}, {4, 4.0}});
  // Linear at 0.5: up to twice the price it runs on (the cost rule's 0.8 allows 1.25 times).
  EXPECT_EQ(growth_price_cap(t, 2, 4, 1'000'000, c), 2'000'000);
  t.reduce_cost = true;
  EXPECT_EQ(growth_price_cap(t, 2, 4, 1'000'000, c), 1'250'000);
  // A band at 0: time at any price, no cap.
  Config free_growth = c;
  free_growth.time_bands = {{0, 0.0}};
  t.reduce_cost = false;
  EXPECT_FALSE(growth_price_cap(t, 2, 4, 1'000'000, free_growth));
}

}  // namespace
}  // namespace valley::planner
