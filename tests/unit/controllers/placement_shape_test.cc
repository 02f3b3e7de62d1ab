// Progress learned by placement shape (workers x nodes), as a user of an elastic task judges it: the
// same size measured on one node and across two is two measurements, growth onto a shape the task
// measured slower is held to what it measured there, and a size that did not pay across nodes is
// tried again on one node when that is where it would land.
#include <gtest/gtest.h>

#include "controllers/lifecycle/lifecycle.h"
#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "tests/unit/controllers/lifecycle_fixtures.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {
using namespace fixtures;

constexpr double kPaysFrom = 0.8;

Scaling shaped(std::initializer_list<std::tuple<int, int, double>> points) {
  Scaling s;
  for (auto [workers, nodes, rate] : points) s = observe(s, workers, rate, nodes);
  return s;
}

TEST(PlacementShape, OneSizeOnTwoNodeCountsIsTwoMeasurementsAndTheSizeIsTheirMean) {
  Scaling s = shaped({{4, 2, 2.4}, {4, 1, 4.0}, {4, 1, 3.8}, {2, 1, 2.0}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], (ScalingSample{2, 2.0, 1, 1}));
  EXPECT_EQ(s[1], (ScalingSample{4, 3.9, 2, 1}));
  EXPECT_EQ(s[2], (ScalingSample{4, 2.4, 1, 2}));
  Scaling sizes = by_size(s);
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[1], (ScalingSample{4, 3.4, 3, 0}));  // what 4 yielded where it was put, by samples
  // The status keeps the shape; an entry an earlier release wrote (no nodes) reads as unrecorded
  // and comes first for its size.
  const auto j = scaling_json(s);
  EXPECT_EQ(j[2], (nlohmann::json{{"workers", 4}, {"nodes", 2}, {"stepsPerSecond", 2.4}, {"samples", 1}}));
  EXPECT_EQ(scaling_from(j), s);
  auto legacy = j;
  legacy.push_back({{"workers", 4}, {"stepsPerSecond", 3.0}});
  legacy.push_back({{"workers", 4}, {"nodes", -3}, {"stepsPerSecond", 9.0}});  // a duplicate once clamped: the first stands
  Scaling read = scaling_from(legacy);
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read[1], (ScalingSample{4, 3.0, 1, 0}));
  EXPECT_DOUBLE_EQ(by_size(read)[1].rate, 3.3);
  EXPECT_FALSE(scaling_json(read)[1].contains("nodes"));
}

TEST(PlacementShape, AStepIsJudgedOnTheShapeItLandsOn) {
  Scaling s = shaped({{2, 1, 2.0}, {4, 1, 4.0}, {4, 2, 2.4}});
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 1, 2, kPaysFrom), true);    // 1.0 of linear
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 2, 2, kPaysFrom), false);   // (2.4 - 2.0) / 2 = 0.2 of linear
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 2, 2, 0.1), true);     // a lower exchange rate takes it
  // Three nodes: one more than measured, at the widening it measured for one more (0.6): 1.44,
  // slower than two workers on one node.
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 3, 2, 0.0), false);
  // A size never measured, on the node count it grows from, is the size rule's to judge; on more
  // nodes, the size curve's rate widened as measured: 6 on two nodes reads 4.4 (extrapolated from
  // 3.2 at 4, the mean of its shapes) x 0.6 = 2.64, 0.16 of linear.
  EXPECT_EQ(shape_step_pays(s, 2, 1, 6, 1, 2, kPaysFrom), std::nullopt);
  EXPECT_EQ(shape_step_pays(s, 2, 1, 6, 2, 2, kPaysFrom), false);
  EXPECT_EQ(shape_step_pays(s, 2, 1, 6, 2, 2, 0.15), true);
}

TEST(PlacementShape, ASizeMeasuredOnlyAcrossNodesIsUntriedOnFewer) {
  Scaling s = shaped({{2, 1, 2.0}, {4, 2, 2.4}});
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 1, 2, kPaysFrom), true);
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 2, 2, kPaysFrom), false);
  // On more nodes than measured, with no widening measured: nothing beyond the size rule.
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 3, 2, kPaysFrom), std::nullopt);
  // Where the task measured that a second node costs it nothing (two workers, 2.0 either way), four
  // on one node would run as on two: not worth trying. Where a second node halved it, it would.
  EXPECT_EQ(shape_step_pays(shaped({{2, 1, 2.0}, {2, 2, 2.0}, {4, 2, 2.4}}), 2, 1, 4, 1, 2, kPaysFrom), false);
  EXPECT_EQ(shape_step_pays(shaped({{2, 1, 2.0}, {2, 2, 1.0}, {4, 2, 2.4}}), 2, 1, 4, 1, 2, kPaysFrom), true);
}

TEST(PlacementShape, AWideningMeasuredAtOneSizeJudgesAnotherAndInterpolates) {
  // At 2 workers, two nodes ran at 0.5 of one; nothing was measured at 4 but on one node.
  Scaling s = shaped({{2, 1, 2.0}, {2, 3, 1.0}, {4, 1, 4.0}});
  // Four on three nodes: 4.0 x 0.5 = 2.0, no gain over 2.0; on two: 4.0 x 0.75 (halfway) = 3.0,
  // against linear as the size rule reads it (two workers: 1.5 by the mean of their shapes, 0.75 each).
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 3, 2, 0.01), false);
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 2, 2, 0.6), true);   // (3.0 - 2.0) / (2 x 0.75) = 0.67
  EXPECT_EQ(shape_step_pays(s, 2, 1, 4, 2, 2, 0.7), false);
  // The rate at `from` is its own shape's: two workers on three nodes (1.0) to four on one.
  EXPECT_EQ(shape_step_pays(s, 2, 3, 4, 1, 2, kPaysFrom), true);
  // Entries without a recorded shape teach no widening.
  Scaling legacy = shaped({{2, 0, 2.0}, {2, 0, 1.0}, {4, 1, 4.0}});
  EXPECT_EQ(shape_step_pays(legacy, 2, 1, 4, 2, 2, kPaysFrom), std::nullopt);
}

// An elastic task running 2 workers on n1 (4 GPUs), of whose other two GPUs another task holds
// `held_on_n1`; n2 is free. Growth is priced (0.8 of linear) and a step of one worker is worth it.
struct Cluster {
  std::vector<Node> nodes = {nvidia("n1", 4), nvidia("n2", 4)};
  Config config;
  Task elastic = task("a/elastic", 10, 2, 4);
  Cluster(int held_on_n1, const Scaling& shapes) {
    config.min_marginal_efficiency = kPaysFrom;
    config.min_gain_workers = 1;
    config.min_gain_fraction = 0;
    elastic.admitted = true;
    elastic.workers = {{"n1", "nvidia.com/gpu", 1, true, 0}, {"n1", "nvidia.com/gpu", 1, true, 1}};
    elastic.last_resize = kNow - 1h;
    elastic.shapes = shapes;
    elastic.scaling = by_size(shapes);
    nodes[0].free["nvidia.com/gpu"] = 4 - held_on_n1;  // the plan takes the elastic task's own two
  }
  const Decision& decide() {
    decisions = plan(nodes, {elastic}, kNow, config);
    return find(decisions, "a/elastic");
  }
  std::vector<Decision> decisions;
};

size_t nodes_of(const Decision& d) {
  std::set<std::string> n;
  for (const auto& w : d.placement) n.insert(w.node);
  return n.size();
}

TEST(PlacementShape, GrowthStopsShortOfAShapeMeasuredSlowerAndTakesItOnOneNode) {
  // Four workers ran on one node three times (4.2) and across two once (2.4): by size 3.75, a step
  // that pays (0.875 of linear).
  const Scaling s = shaped({{2, 1, 2.0}, {4, 1, 4.2}, {4, 1, 4.2}, {4, 1, 4.2}, {4, 2, 2.4}});
  ASSERT_EQ(paying_size(by_size(s), 2, 2, 4, 1, 0, kPaysFrom), 4);
  // One GPU left on n1: four workers would span n1 and n2, measured at 0.2 of linear. It grows to
  // three on n1 (a size not measured: the size rule's) and no further.
  Cluster one_left(1, s);
  const Decision& d = one_left.decide();
  EXPECT_EQ(d.action, Action::Grow) << d.reason;
  EXPECT_EQ(d.workers, 3);
  EXPECT_EQ(nodes_of(d), 1u);
  // None left on n1: no growth at all, although n2 is free.
  Cluster none_left(2, s);
  EXPECT_EQ(none_left.decide().workers, 2) << none_left.decide().reason;
  EXPECT_NE(none_left.decide().action, Action::Grow);
  // Both left: four on n1, as measured.
  Cluster room(0, s);
  EXPECT_EQ(room.decide().workers, 4) << room.decide().reason;
  EXPECT_EQ(nodes_of(room.decide()), 1u);
  // Measured by size only (an earlier release's status), the same task spans both nodes.
  Cluster unshaped(2, shaped({{2, 0, 2.0}, {4, 0, 3.75}}));
  EXPECT_EQ(unshaped.decide().workers, 4);
  EXPECT_EQ(nodes_of(unshaped.decide()), 2u);
}

TEST(PlacementShape, ASizeThatDidNotPayAcrossNodesIsTriedOnOneWhenOneHoldsIt) {
  // Four workers were measured across two nodes only, at 0.2 of linear: by size it does not pay.
  const Scaling s = shaped({{2, 1, 2.0}, {4, 2, 2.4}});
  EXPECT_EQ(paying_size(by_size(s), 2, 2, 4, 1, 0, kPaysFrom), 2);
  Cluster room(0, s);
  room.config.min_gain_workers = 2;
  const Decision& d = room.decide();
  EXPECT_EQ(d.action, Action::Grow) << d.reason;
  EXPECT_EQ(d.workers, 4);
  EXPECT_EQ(nodes_of(d), 1u);
  EXPECT_NE(d.reason.find("across more nodes did not pay; on 1 node they may"), std::string::npos) << d.reason;
  // On priced nodes the step takes only capacity its size rule's marginal pays for (the mean of its
  // shapes: 0.2 of linear, a quarter of the price it runs at): nothing as dear as n1.
  Cluster priced(0, s);
  priced.config.min_gain_workers = 2;
  for (auto& n : priced.nodes) n.price_micros = 2'000'000;
  EXPECT_EQ(priced.decide().workers, 2) << priced.decide().reason;
  // Grown to four on one node (where cheaper capacity took it, or before prices) and measured there
  // as paying: the mean of its shapes does not take it back to two.
  Cluster grown(0, s);
  grown.elastic.workers = {{"n1", "nvidia.com/gpu", 1, true, 0}, {"n1", "nvidia.com/gpu", 1, true, 1},
                           {"n1", "nvidia.com/gpu", 1, true, 2}, {"n1", "nvidia.com/gpu", 1, true, 3}};
  grown.elastic.shapes = observe(s, 4, 4.0, 1);
  grown.elastic.scaling = by_size(grown.elastic.shapes);
  ASSERT_EQ(paying_size(grown.elastic.scaling, 4, 2, 4, 2, 0, kPaysFrom), 2);  // (2.4 + 4.0) / 2: 0.6 of linear
  EXPECT_EQ(grown.decide().workers, 4) << grown.decide().reason;
  EXPECT_NE(grown.decide().action, Action::Shrink) << grown.decide().reason;
  // Across two nodes instead, the same measurements give the two workers back.
  grown.elastic.workers[2].node = grown.elastic.workers[3].node = "n2";
  grown.nodes[0].free["nvidia.com/gpu"] = 2;
  grown.nodes[1].free["nvidia.com/gpu"] = 4;
  EXPECT_EQ(grown.decide().action, Action::Shrink) << grown.decide().reason;
  EXPECT_EQ(grown.decide().workers, 2);
  // Where four would span two nodes again, it stays at two.
  Cluster spread(1, s);
  spread.config.min_gain_workers = 2;
  EXPECT_EQ(spread.decide().workers, 2) << spread.decide().reason;
  // Once measured on one node too, that measurement decides: there it does not pay either, or it
  // does, though the mean of both shapes does not.
  Cluster measured_both(0, shaped({{2, 1, 2.0}, {4, 2, 2.4}, {4, 1, 2.5}}));
  Cluster paid_on_one(0, shaped({{2, 1, 2.0}, {4, 2, 2.4}, {4, 1, 4.0}}));
  Cluster paid_on_one_spread(1, shaped({{2, 1, 2.0}, {4, 2, 2.4}, {4, 1, 4.0}}));
  for (Cluster* c : {&measured_both, &paid_on_one, &paid_on_one_spread}) c->config.min_gain_workers = 2;
  EXPECT_EQ(measured_both.decide().workers, 2) << measured_both.decide().reason;
  EXPECT_EQ(paid_on_one.decide().workers, 4) << paid_on_one.decide().reason;
  EXPECT_EQ(nodes_of(paid_on_one.decide()), 1u);
  EXPECT_EQ(paid_on_one_spread.decide().workers, 2) << paid_on_one_spread.decide().reason;
  // The exploration is of the next growth step only: from 2 by one worker, 3 was never measured.
  Cluster one_step(0, shaped({{2, 1, 2.0}, {4, 2, 2.4}, {4, 1, 4.0}}));
  EXPECT_EQ(one_step.decide().workers, 2) << one_step.decide().reason;
}

}  // namespace
}  // namespace valley::planner

namespace valley::lifecycle {
namespace {
using namespace fixtures;

TEST(PlacementShape, TheLifecycleRecordsTheNodesTheRateWasMeasuredOn) {
  for (const bool spread : {false, true}) {
    json status = running_status();
    status["replicas"] = 2;
    status["checkpoint"] = {{"step", 100}, {"time", kube::format_time(kNow - 60s)}, {"epoch", 1}};
    auto pods = running_pods();
    pods[0].node = "n1";
    pods[1].node = spread ? "n2" : "n1";
    pods[2].node = "n3";  // the launcher's node is not the workers' shape
    Observed o = observe(task_object({{"checkpoint", {{"uri", "s3://ckpt/t"}}}}, status), pods);
    o.checkpoint = storage::CheckpointRecord{160, kube::format_time(kNow), 1, 2, "ckpt-160.bin"};
    Decision d = decide(o);
    ASSERT_TRUE(d.status.contains("scaling")) << d.status.dump();
    ASSERT_EQ(d.status["scaling"].size(), 1u) << d.status.dump();
    EXPECT_EQ(d.status["scaling"][0]["workers"], 2);
    EXPECT_EQ(d.status["scaling"][0]["nodes"], spread ? 2 : 1);
    EXPECT_DOUBLE_EQ(d.status["scaling"][0]["stepsPerSecond"].get<double>(), 1.0);
  }
}

}  // namespace
}  // namespace valley::lifecycle
