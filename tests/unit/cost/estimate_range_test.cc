// The estimate of a task not placed yet: its expectation is where the planner expects it, its high
// end the dearest capacity it may still be placed on (nothing holds it to the cheaper one).
#include <gtest/gtest.h>

#include "controllers/inputs/candidates.h"
#include "controllers/cost/engine.h"

namespace valley::cost {
namespace {

using namespace std::chrono_literals;

NodeRate gpu_rate(const std::string& cls, Micros per_hour) {
  NodeRate r;
  r.vendor = "nvidia";
  r.capacity_class = cls;
  r.gpu_per_hour = per_hour;
  r.watts = 0;  // no energy: the figures are the GPUs' alone
  return r;
}

api::TaskSpec fixed_spec(int workers) {
  api::TaskSpec spec;
  spec.min_workers = spec.max_workers = workers;
  spec.gpus.milli = 1000;
  spec.estimated_duration = 2h;
  return spec;
}

TEST(EstimateRange, AWaitingTasksHighEndIsTheDearestCapacityItMayBePlacedOn) {
  Policy p;
  const std::vector<NodeRate> candidates = {gpu_rate("spot", 1'000'000), gpu_rate("on-demand", 3'000'000),
                                            gpu_rate("on-demand", 2'000'000)};
  const std::map<std::string, NodeRate> rates = {{"spot-1", candidates[0]}};
  api::TaskSpec spec = fixed_spec(2);
  planner::Task t;
  t.min_workers = t.max_workers = 2;
  t.checkpointed = true;
  planner::Config c;
  planner::Decision waiting;
  waiting.expected_node = "spot-1";  // waits for the spot node
  const auto now = SystemTime(std::chrono::seconds(1795316645));
  EstimateBasis b = estimate_basis(spec, t, waiting, c, rates, candidates, now);
  ASSERT_TRUE(b.high_rate);
  EXPECT_EQ(b.high_rate->gpu_per_hour, 3'000'000);
  b.spread = {1.0, 1.0, 20};
  auto e = estimate(p, spec, b);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->expected, 4 * 1'000'000);  // 4 GPU-h on spot
  EXPECT_EQ(e->high, 4 * 3'000'000);      // 4 GPU-h on the dearest on-demand
  EXPECT_NE(e->high_basis.find("on nvidia on-demand at 3.00/GPU-h (the dearest capacity it may be placed on)"), std::string::npos)
      << e->high_basis;

  // Placed: its placement holds it; the high end is what it runs on.
  planner::Decision placed;
  placed.workers = 2;
  placed.placement = {{"spot-1", "nvidia.com/gpu", 1}, {"spot-1", "nvidia.com/gpu", 1}};
  b = estimate_basis(spec, t, placed, c, rates, candidates, now);
  EXPECT_FALSE(b.high_rate);
  b.spread = {1.0, 1.0, 20};
  EXPECT_EQ(estimate(p, spec, b)->high, 4 * 1'000'000);

  // A task that does not checkpoint is never placed on spot: the spot rate bounds nothing for it.
  t.checkpointed = false;
  const std::vector<NodeRate> spot_only = {gpu_rate("spot", 5'000'000), gpu_rate("on-demand", 2'000'000)};
  const std::map<std::string, NodeRate> on_demand = {{"od-1", spot_only[1]}};
  waiting.expected_node = "od-1";
  b = estimate_basis(spec, t, waiting, c, on_demand, spot_only, now);
  EXPECT_FALSE(b.high_rate);
}

}  // namespace
}  // namespace valley::cost
