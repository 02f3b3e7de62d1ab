// The scheduler KPIs (bench/sim/kpi.h) on hand-made schedules whose answers are worked out here.
#include <gtest/gtest.h>

#include "bench/sim/kpi.h"

namespace valley::sim {
namespace {

KpiJob job(const std::string& id, int priority, int64_t submit, int64_t run_seconds, int gpus, std::vector<KpiSegment> segments) {
  KpiJob j;
  j.id = id;
  j.priority = priority;
  j.submit = submit;
  j.run_seconds = run_seconds;
  j.min_gpu_milli = int64_t{gpus} * 1000;
  j.useful_gpu_seconds = static_cast<double>(run_seconds) * gpus;
  j.segments = std::move(segments);
  if (!j.segments.empty()) j.end = j.segments.back().end;
  return j;
}

KpiSettings on(int gpus, int64_t horizon = 0) {
  KpiSettings s;
  s.capacity_gpu_milli = int64_t{gpus} * 1000;
  s.horizon = horizon;
  return s;
}

// Waits are the time not running between submission and the end; a job that never ends waits until
// the horizon; "starved" needs both the floor and the factor.
TEST(Kpis, StarvationIsTheWaitAgainstTheTracesRunTime) {
  std::vector<KpiJob> jobs = {
      job("ran-at-once", 50, 0, 3600, 1, {{0, 3600, 1000}}),
      // Waited 3 h for a 1-hour run, then ran 1 h: over both bounds.
      job("waited", 50, 0, 3600, 1, {{10800, 14400, 1000}}),
      // Waited 2 h for a 10-hour run (1 h, then preempted 1 h, then 9 h): under the factor.
      job("long", 50, 0, 36000, 1, {{3600, 7200, 1000}, {10800, 43200, 1000}}),
      // Never ran: waits until the horizon (5 h), and waits by choice.
      job("never", 50, 3600, 600, 1, {}),
  };
  jobs[3].waits_by_choice = true;
  const Kpis k = measure_kpis(jobs, on(8, 5 * 3600));
  EXPECT_EQ(k.longest_wait_seconds, 4 * 3600);  // "never": 1 h to 5 h
  EXPECT_EQ(k.most_starved, "never");
  EXPECT_DOUBLE_EQ(k.worst_wait_over_run, 4.0 * 3600 / 600);
  EXPECT_EQ(k.starved, 2);                // "waited" and "never"
  EXPECT_EQ(k.starved_not_by_choice, 1);  // "waited"
}

// A low-priority job started while a higher one that fitted waited: an inversion of the GPUs it
// took for as long as that segment ran. A higher one that did not fit, one that waits by choice,
// and a restart at the same size are none.
TEST(Kpis, AnInversionIsGpusGivenToLowerPriorityWhileAHigherOneThatFittedWaited) {
  KpiJob high = job("high", 90, 0, 3600, 4, {{7200, 10800, 4000}});
  KpiJob low = job("low", 10, 0, 3600, 2, {{3600, 7200, 2000}});
  const Kpis k = measure_kpis({high, low}, on(8));
  EXPECT_EQ(k.inversions, 1);
  EXPECT_DOUBLE_EQ(k.inversion_gpu_hours, 2.0);  // 2 GPUs for the hour it ran
  EXPECT_DOUBLE_EQ(k.inversion_share, 2.0 / 6.0);  // of 4 + 2 GPU-hours held

  // The higher one needs more than is free: 8 GPUs, 4 held by a third job across low's start.
  KpiJob big = job("big", 90, 60, 3600, 8, {{14400, 18000, 8000}});
  KpiJob other = job("other", 50, 0, 36000, 4, {{0, 14400, 4000}});
  EXPECT_EQ(measure_kpis({big, other, low}, on(8)).inversions, 0);

  high.waits_by_choice = true;  // reduceCost: it waits for cheaper capacity
  EXPECT_EQ(measure_kpis({high, low}, on(8)).inversions, 0);
  high.waits_by_choice = false;

  // Restarted at the same size while high waits: nothing added. Grown by 2: those 2 count.
  high.submit = 1800;  // after their first starts
  KpiJob steady = job("steady", 10, 0, 7200, 2, {{0, 3600, 2000}, {3600, 7200, 2000}});
  EXPECT_EQ(measure_kpis({high, steady}, on(8)).inversions, 0);
  KpiJob grown = job("grown", 10, 0, 7200, 2, {{0, 3600, 2000}, {3600, 5400, 4000}});
  const Kpis g = measure_kpis({high, grown}, on(8));
  EXPECT_EQ(g.inversions, 1);
  EXPECT_DOUBLE_EQ(g.inversion_gpu_hours, 2.0 * 0.5);
  // The higher one arrives after: no inversion.
  high.submit = 4000;
  EXPECT_EQ(measure_kpis({high, low}, on(8)).inversions, 0);
}

TEST(Kpis, OccupancyIsHeldAndUsefulGpuHoursOverTheCapacityUntilTheLastEnd) {
  // 8 GPUs for 2 h = 16 GPU-hours. Held: 4 x 2 h + 2 x 1 h = 10. Useful: the finished jobs' trace
  // GPU-hours: a (4 GPUs x 1.5 h asked) + b (2 x 1 h) = 8; the unfinished one counts as held only.
  KpiJob a = job("a", 50, 0, 5400, 4, {{0, 7200, 4000}});
  KpiJob b = job("b", 50, 0, 3600, 2, {{0, 3600, 2000}});
  KpiJob c = job("c", 50, 0, 3600, 1, {});
  const Kpis k = measure_kpis({a, b, c}, on(8, 7200));
  EXPECT_DOUBLE_EQ(k.held_gpu_hours, 10.0);
  EXPECT_DOUBLE_EQ(k.allocated, 10.0 / 16.0);
  EXPECT_DOUBLE_EQ(k.useful, 8.0 / 16.0);
}

TEST(Kpis, FairnessIsJainsIndexOverUsersServiceRates) {
  // u1: run 1 h of 1 h lived (rate 1); u2: 1 h and 1 h of 2 h and 6 h lived (rate 2/8). Jain =
  // (1 + 0.25)^2 / (2 x (1 + 0.0625)) = 1.5625 / 2.125.
  KpiJob a = job("a", 50, 0, 3600, 1, {{0, 3600, 1000}});
  KpiJob b = job("b", 50, 0, 3600, 1, {{3600, 7200, 1000}});
  KpiJob c = job("c", 50, 0, 3600, 1, {{18000, 21600, 1000}});
  a.user = "u1";
  b.user = c.user = "u2";
  const Kpis k = measure_kpis({a, b, c}, on(8));
  EXPECT_EQ(k.users, 2);
  EXPECT_DOUBLE_EQ(k.jain_users, 1.5625 / 2.125);
  // Equal service: 1. A job naming no user is a user of its own.
  a.user = b.user = c.user = "";
  b.segments = {{0, 3600, 1000}};
  c.segments = {{0, 3600, 1000}};
  b.end = c.end = 3600;
  const Kpis e = measure_kpis({a, b, c}, on(8));
  EXPECT_EQ(e.users, 3);
  EXPECT_DOUBLE_EQ(e.jain_users, 1.0);
}

TEST(Kpis, ABackwardSegmentOrNoCapacityIsRefused) {
  EXPECT_THROW(measure_kpis({job("a", 50, 0, 60, 1, {{100, 50, 1000}})}, on(8)), std::invalid_argument);
  EXPECT_THROW(measure_kpis({}, on(0)), std::invalid_argument);
}

}  // namespace
}  // namespace valley::sim
