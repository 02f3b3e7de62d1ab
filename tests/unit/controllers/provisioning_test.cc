// Capacity that can be bought: NodePools and the instance catalogue read as nodes still to buy
// (requirements, limits, why a pool is not used), and the planner's choices among them: a gang buys
// when nothing that is up holds it, a task that did not ask to wait takes what is up first, a
// reduceCost one buys what is cheaper, a pool's limit is shared by all its shapes, growth buys only
// what its step pays, and a gang larger than the limits allow is Unplaceable with the numbers.
// On bought nodes a gang goes where it keeps a node up least beyond the tasks there.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "controllers/api/nodepool.h"
#include "controllers/inputs/nodepools.h"
#include "controllers/render/render.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley {
namespace {
using namespace planner::fixtures;
using json = nlohmann::json;

api::Catalogue project_catalogue() {
  std::ifstream in(std::string(VALLEY_SOURCE_DIR) + "/tests/cluster/karpenter/instance-types.json");
  std::stringstream text;
  text << in.rdbuf();
  return api::read_catalogue(json::parse(text.str()));
}

json pool_object(const std::string& name, const std::string& capacity_type, const json& limits) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"template",
             {{"metadata", {{"labels", {{"valley.dev/pool", name + "-auto"}, {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}},
              {"spec",
               {{"taints", json::array({{{"key", "nvidia.com/gpu"}, {"value", "true"}, {"effect", "NoSchedule"}}})},
                {"requirements", json::array({{{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {capacity_type}}},
                                              {{"key", "node.kubernetes.io/instance-type"},
                                               {"operator", "In"},
                                               {"values", {"p4de.24xlarge", "p4de.12xlarge"}}}})}}}}},
            {"limits", limits},
            {"disruption", {{"consolidationPolicy", "WhenEmpty"}, {"consolidateAfter", "30s"}}}}}};
}

api::NodePool pool(const std::string& name, const std::string& capacity_type, const json& limits) {
  auto read = api::read_node_pool(pool_object(name, capacity_type, limits));
  EXPECT_TRUE(read.error.empty()) << read.error;
  return *read.pool;
}

TEST(NodePools, APoolIsReadWithItsLabelsRequirementsTaintsLimitsAndDisruption) {
  const api::NodePool p = pool("a100-spot", "spot", {{"nvidia.com/gpu", "32"}, {"cpu", "500"}, {"memory", "4Ti"}});
  EXPECT_EQ(p.labels.at("valley.dev/pool"), "a100-spot-auto");
  ASSERT_EQ(p.requirements.size(), 2u);
  EXPECT_EQ(p.requirements[1].values.size(), 2u);
  ASSERT_EQ(p.taints.size(), 1u);
  EXPECT_EQ(p.taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(p.limits.at("nvidia.com/gpu"), 32);
  EXPECT_EQ(p.limits.at("cpu"), 500000);  // thousandths, as Node::room counts
  EXPECT_EQ(p.limits.at("memory"), int64_t{4} << 40);
  EXPECT_EQ(p.consolidation_policy, "WhenEmpty");
  EXPECT_EQ(p.consolidate_after_seconds, 30);

  auto bad = api::read_node_pool(pool_object("x", "spot", {{"nvidia.com/gpu", "lots"}}));
  EXPECT_FALSE(bad.pool);
  EXPECT_NE(bad.error.find("spec.limits.nvidia.com/gpu"), std::string::npos) << bad.error;
}

TEST(NodePools, TheProjectsCatalogueIsReadWithItsOfferings) {
  const api::Catalogue c = project_catalogue();
  ASSERT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.types.size(), 3u);
  EXPECT_EQ(c.types[0].name, "p4de.24xlarge");
  EXPECT_EQ(c.types[0].resources.at("nvidia.com/gpu"), "8");
  ASSERT_FALSE(c.types[0].offerings.empty());
  EXPECT_EQ(c.types[0].offerings[1].capacity_type, "spot");
  EXPECT_EQ(c.types[0].offerings[1].price_micros, 7600000);
  EXPECT_NE(api::read_catalogue(json::object()).error, "");
}

TEST(NodePools, ANodeToBuyIsNamedSoThatItsPoolShapeAndClassReadBack) {
  const std::string name = api::provisionable_name({"a100-spot", "p4de.24xlarge", "spot"}, 3);
  EXPECT_TRUE(api::is_provisionable(name));
  auto t = api::provision_target(name);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->pool, "a100-spot");
  EXPECT_EQ(t->instance_type, "p4de.24xlarge");
  EXPECT_EQ(t->capacity_type, "spot");
  EXPECT_FALSE(api::provision_target("gpu-node-1"));
  EXPECT_FALSE(api::is_provisionable("gpu-node-1"));
}

TEST(NodePools, APoolOffersNodesOfEachShapeItAllowsAsFarAsItsLimitsLeave) {
  const auto c = project_catalogue();
  auto out = inputs::provisionable({pool("a100-spot", "spot", {{"nvidia.com/gpu", "32"}})}, c, {}, {}, {});
  EXPECT_TRUE(out.unusable.empty());
  int big = 0, half = 0;
  for (const auto& n : out.nodes) {
    EXPECT_EQ(n.bought_from, "a100-spot");
    EXPECT_EQ(n.capacity_class, "spot");  // karpenter.sh/capacity-type=spot
    EXPECT_EQ(n.labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
    EXPECT_EQ(n.labels.at("karpenter.sh/nodepool"), "a100-spot");
    ASSERT_EQ(n.taints.size(), 1u);
    EXPECT_EQ(n.provisioning, std::chrono::seconds(60));
    const int64_t gpus = n.capacity.at("nvidia.com/gpu");
    EXPECT_EQ(n.pool_cost.at("nvidia.com/gpu"), gpus);
    (gpus == 8 ? big : half) += 1;
    EXPECT_EQ(n.labels.at("node.kubernetes.io/instance-type"), gpus == 8 ? "p4de.24xlarge" : "p4de.12xlarge");
  }
  EXPECT_EQ(big, 4);   // 32 / 8
  EXPECT_EQ(half, 8);  // 32 / 4: the limit is shared, the planner's budget keeps the sum to it
  EXPECT_EQ(out.budgets.at("a100-spot").at("nvidia.com/gpu"), 32);

  // A node of the pool that is up takes its share of the limit.
  planner::Node up = nvidia("bought-1", 8, "spot");
  up.labels["karpenter.sh/nodepool"] = "a100-spot";
  auto later = inputs::provisionable({pool("a100-spot", "spot", {{"nvidia.com/gpu", "32"}})}, c, {&up}, {}, {});
  EXPECT_EQ(later.budgets.at("a100-spot").at("nvidia.com/gpu"), 24);
  EXPECT_EQ(std::count_if(later.nodes.begin(), later.nodes.end(), [](const auto& n) { return n.capacity.at("nvidia.com/gpu") == 8; }), 3);
}

TEST(NodePools, APoolValleyCannotBuyFromSaysWhy) {
  const auto c = project_catalogue();
  auto zero = inputs::provisionable({pool("none", "spot", {{"nvidia.com/gpu", "0"}})}, c, {}, {}, {});
  EXPECT_TRUE(zero.nodes.empty());
  EXPECT_NE(zero.unusable.at("none").find("its limit on nvidia.com/gpu (0)"), std::string::npos) << zero.unusable.at("none");

  json cpu_only = pool_object("cpu", "on-demand", json::object());
  cpu_only["spec"]["template"]["spec"]["requirements"][1]["values"] = {"m5.large"};
  auto cpu = inputs::provisionable({*api::read_node_pool(cpu_only).pool}, c, {}, {}, {});
  EXPECT_TRUE(cpu.nodes.empty());
  EXPECT_NE(cpu.unusable.at("cpu").find("no GPU instance type"), std::string::npos);

  json gt = pool_object("gt", "spot", json::object());
  gt["spec"]["template"]["spec"]["requirements"].push_back({{"key", "karpenter.k8s.aws/instance-gpu-count"}, {"operator", "Gt"}, {"values", {"4"}}});
  auto unread = inputs::provisionable({*api::read_node_pool(gt).pool}, c, {}, {}, {});
  EXPECT_TRUE(unread.nodes.empty());
  EXPECT_NE(unread.unusable.at("gt").find("karpenter.k8s.aws/instance-gpu-count Gt 4"), std::string::npos);

  // Without a limit, a shape is offered up to the configured count.
  inputs::ProvisioningOptions few;
  few.max_nodes_per_shape = 2;
  few.delay["open"] = std::chrono::seconds(90);
  auto open = inputs::provisionable({pool("open", "on-demand", json::object())}, c, {}, {}, few);
  EXPECT_EQ(open.nodes.size(), 4u);
  EXPECT_EQ(open.nodes[0].provisioning, std::chrono::seconds(90));
  EXPECT_FALSE(open.budgets.count("open"));
}

TEST(NodePools, WhatKarpenterCountsAgainstAPoolsLimitNodeClaimsBeingLaunchedIncludedIsNotOfferedAgain) {
  const auto c = project_catalogue();
  json object = pool_object("a100-od", "on-demand", {{"nvidia.com/gpu", "16"}});
  object["status"] = {{"resources", {{"nvidia.com/gpu", "8"}, {"nodes", "1"}}}};  // one 8-GPU NodeClaim, no node yet
  const api::NodePool p = *api::read_node_pool(object).pool;
  EXPECT_EQ(p.in_use.at("nvidia.com/gpu"), 8);
  auto offered = inputs::provisionable({p}, c, {}, {}, {});
  EXPECT_EQ(offered.budgets.at("a100-od").at("nvidia.com/gpu"), 8);
  // Nodes that are up count when they hold more than the status says (it lags behind them).
  planner::Node up = nvidia("up-1", 8);
  up.labels[api::karpenter::kNodePool] = "a100-od";
  planner::Node up2 = up;
  up2.name = "up-2";
  auto both = inputs::provisionable({p}, c, {&up, &up2}, {}, {});
  EXPECT_FALSE(both.budgets.count("a100-od") && both.budgets.at("a100-od").at("nvidia.com/gpu") > 0);
  EXPECT_TRUE(both.nodes.empty());
  // The condition judges the pool alone: a limit spent now is not a fault.
  EXPECT_TRUE(inputs::pools_usable({p}, c, {}).all);
}

TEST(NodePools, ThePolicyInForceSaysWhichPoolsValleyCannotBuyFromAndWhy) {
  const auto c = project_catalogue();
  const api::NodePool good = pool("a100-od", "on-demand", {{"nvidia.com/gpu", "16"}});
  auto all = inputs::pools_usable({good}, c, {});
  EXPECT_TRUE(all.all);
  EXPECT_EQ(all.reason, "AllUsable");
  EXPECT_NE(all.message.find("NodePools a100-od"), std::string::npos) << all.message;
  // A limit of zero, a pool of no GPU shape: named with why; the good one is not.
  json cpu_only = pool_object("cpu", "on-demand", json::object());
  cpu_only["spec"]["template"]["spec"]["requirements"][1]["values"] = {"m5.large"};
  auto some = inputs::pools_usable({good, pool("zero", "spot", {{"nvidia.com/gpu", "0"}}), *api::read_node_pool(cpu_only).pool}, c, {});
  EXPECT_FALSE(some.all);
  EXPECT_EQ(some.reason, "SomeUnusable");
  EXPECT_NE(some.message.find("NodePool zero: its limit on nvidia.com/gpu (0)"), std::string::npos) << some.message;
  EXPECT_NE(some.message.find("NodePool cpu: no GPU instance type"), std::string::npos) << some.message;
  EXPECT_EQ(some.message.find("a100-od"), std::string::npos) << some.message;
  EXPECT_EQ(inputs::pools_usable({pool("zero", "spot", {{"nvidia.com/gpu", "0"}})}, c, {}).reason, "NoneUsable");
  EXPECT_EQ(inputs::pools_usable({}, c, {}).reason, "NoNodePools");
}

TEST(NodePools, WhatAPoolsNodesHoldIsCountedIdleWhenNoPodHoldsAGpu) {
  planner::Node busy = nvidia("b-1", 8), idle = nvidia("b-2", 8), mine = nvidia("fixed", 8);
  busy.labels["karpenter.sh/nodepool"] = idle.labels["karpenter.sh/nodepool"] = "a100-od";
  busy.free["nvidia.com/gpu"] = 2;
  const auto use = inputs::pool_use({&busy, &idle, &mine});
  ASSERT_EQ(use.size(), 1u) << "a node no NodePool bought is not counted";
  const auto& u = use.at("a100-od");
  EXPECT_EQ(u.nodes, 2);
  EXPECT_EQ(u.idle, 1);
  EXPECT_EQ(u.gpus, 16);
  EXPECT_EQ(u.gpus_held, 6);
}

// Nodes to buy as the planner is given them, with prices set as the PricingPolicy would.
struct Market {
  std::vector<planner::Node> nodes;
  planner::Config config;
  Market(const std::vector<api::NodePool>& pools, std::vector<planner::Node> up, int64_t spot_price, int64_t od_price) {
    std::vector<const planner::Node*> existing;
    for (const auto& n : up) existing.push_back(&n);
    auto out = inputs::provisionable(pools, project_catalogue(), existing, {}, {});
    nodes = std::move(up);
    for (auto& n : out.nodes) {
      n.price_micros = n.capacity_class == "spot" ? spot_price : od_price;
      nodes.push_back(std::move(n));
    }
    config.pool_budgets = out.budgets;
    config.min_marginal_efficiency = 0.8;
  }
};

int bought(const planner::Decision& d) {
  return static_cast<int>(std::count_if(d.placement.begin(), d.placement.end(), [](const auto& w) { return api::is_provisionable(w.node); }));
}

TEST(Provisioning, AGangNothingUpHoldsIsAdmittedOntoNodesToBuy) {
  Market m({pool("a100-od", "on-demand", {{"nvidia.com/gpu", "32"}})}, {}, 0, 2'400'000);
  planner::Task t = task("a/t", 0, 2, 2, 8000);
  auto ds = plan(m.nodes, {t}, kNow, m.config);
  ASSERT_EQ(ds[0].action, planner::Action::Admit) << ds[0].reason;
  EXPECT_EQ(bought(ds[0]), 2);
  for (const auto& w : ds[0].placement) EXPECT_EQ(api::provision_target(w.node)->instance_type, "p4de.24xlarge");
  EXPECT_NE(ds[0].placement[0].node, ds[0].placement[1].node);
  EXPECT_NE(ds[0].reason.find("once 2 nodes of NodePool a100-od are bought (about 60s)"), std::string::npos) << ds[0].reason;
}

TEST(Provisioning, AGangWhoseNodesAreArrivingKeepsItsPlacementInsteadOfRestarting) {
  // The gang was admitted onto two nodes to buy; they arrived (the pool's limit is spent on them,
  // so none is offered any more) before its pods were bound, not yet taking work.
  planner::Node arriving = nvidia("bought-1", 8);
  arriving.labels["karpenter.sh/nodepool"] = "a100-od";
  arriving.schedulable = false;
  Market m({pool("a100-od", "on-demand", {{"nvidia.com/gpu", "8"}})}, {arriving}, 0, 2'400'000);
  planner::Task t = task("a/t", 0, 1, 1, 8000);
  t.admitted = true;
  const std::string to_buy = api::provisionable_name({"a100-od", "p4de.24xlarge", "on-demand"}, 0);
  t.workers = {{to_buy, "nvidia.com/gpu", 8, false, 0}};
  auto ds = plan(m.nodes, {t}, kNow, m.config);
  EXPECT_EQ(ds[0].action, planner::Action::Keep) << ds[0].reason;
  ASSERT_EQ(ds[0].placement.size(), 1u);
  EXPECT_EQ(ds[0].placement[0].node, to_buy);
  // A worker on a node that existed and is gone is lost as before.
  t.workers = {{"gone-1", "nvidia.com/gpu", 8, true, 0}};
  EXPECT_NE(plan(m.nodes, {t}, kNow, m.config)[0].action, planner::Action::Keep);
}

TEST(Provisioning, ATaskThatDidNotAskToWaitTakesWhatIsUpAReduceCostOneBuysWhatIsCheaper) {
  planner::Node up = nvidia("od-1", 8);
  up.price_micros = 2'400'000;
  Market m({pool("a100-spot", "spot", {{"nvidia.com/gpu", "32"}})}, {up}, 950'000, 0);
  planner::Task urgent = task("a/urgent", 0, 1, 1, 8000);
  urgent.checkpointed = true;
  auto ds = plan(m.nodes, {urgent}, kNow, m.config);
  ASSERT_EQ(ds[0].action, planner::Action::Admit);
  EXPECT_EQ(ds[0].placement[0].node, "od-1");

  planner::Task cheap = urgent;
  cheap.key = "a/cheap";
  cheap.reduce_cost = true;
  ds = plan(m.nodes, {cheap}, kNow, m.config);
  ASSERT_EQ(ds[0].action, planner::Action::Admit) << ds[0].reason;
  EXPECT_EQ(bought(ds[0]), 1);
  EXPECT_EQ(api::provision_target(ds[0].placement[0].node)->capacity_type, "spot");
}

TEST(Provisioning, APoolsLimitIsSharedByItsShapesAndAGangBeyondItIsUnplaceableWithTheNumbers) {
  Market m({pool("a100-od", "on-demand", {{"nvidia.com/gpu", "8"}})}, {}, 0, 2'400'000);
  // One 8-GPU node or two 4-GPU ones are listed, each alone within the limit; together only 8 GPUs.
  planner::Task t = task("a/t", 0, 3, 3, 4000);
  auto ds = plan(m.nodes, {t}, kNow, m.config);
  EXPECT_EQ(ds[0].action, planner::Action::Wait);
  EXPECT_NE(ds[0].reason.find("Unplaceable: needs 3 workers of 4 GPUs at once"), std::string::npos) << ds[0].reason;
  EXPECT_NE(ds[0].reason.find("let 2 more be bought"), std::string::npos) << ds[0].reason;

  // Two such tasks of two workers each: the first buys its 8 GPUs, the second finds the limit spent.
  planner::Task a = task("a/a", 1, 2, 2, 4000), b = task("a/b", 0, 2, 2, 4000);
  ds = plan(m.nodes, {a, b}, kNow, m.config);
  EXPECT_EQ(find(ds, "a/a").action, planner::Action::Admit);
  EXPECT_EQ(find(ds, "a/b").action, planner::Action::Wait);
  EXPECT_NE(find(ds, "a/b").reason.find("InsufficientCapacity"), std::string::npos) << find(ds, "a/b").reason;
}

TEST(Provisioning, GrowthBuysANodeOnlyWhenItsStepPays) {
  planner::Node up = nvidia("od-1", 8);
  up.price_micros = 2'400'000;
  Market m({pool("a100-od", "on-demand", {{"nvidia.com/gpu", "32"}})}, {up}, 0, 2'400'000);
  planner::Task t = task("a/t", 0, 1, 2, 8000);
  t.admitted = true;
  t.workers = {{"od-1", "nvidia.com/gpu", 8, true, 0}};
  t.last_resize = kNow - 1h;
  t.expected_end = kNow + 10h;
  // Measured: a second worker adds 0.95 of linear (pays), or 0.3 (does not).
  for (double second : {1.95, 1.3}) {
    t.scaling = planner::Scaling{{1, 1.0, 3}, {2, second, 3}};
    auto ds = plan(m.nodes, {t}, kNow, m.config);
    if (second > 1.5) {
      EXPECT_EQ(ds[0].action, planner::Action::Grow) << ds[0].reason;
      EXPECT_EQ(bought(ds[0]), 1);
    } else {
      EXPECT_NE(ds[0].action, planner::Action::Grow) << ds[0].reason;
      EXPECT_EQ(bought(ds[0]), 0);
    }
  }
  // Growth that is not priced (no policy: every task grows while GPUs are free) never buys.
  planner::Config unpriced = m.config;
  unpriced.min_marginal_efficiency = 0;
  auto ds = plan(m.nodes, {t}, kNow, unpriced);
  EXPECT_EQ(bought(ds[0]), 0) << ds[0].reason;
  // A task that trades money for time whatever its speedup buys what its size needs (what backfill
  // buys it at admission): a time band that grows regardless, a priority at fastPriority, a pinned
  // size. A reduceCost one does not.
  t.scaling = planner::Scaling{{1, 1.0, 3}, {2, 1.3, 3}};
  planner::Config banded = m.config;
  banded.time_bands = {{0, 0.0}};
  ds = plan(m.nodes, {t}, kNow, banded);
  EXPECT_EQ(ds[0].action, planner::Action::Grow) << ds[0].reason;
  EXPECT_EQ(bought(ds[0]), 1);
  planner::Task urgent = t;
  urgent.priority = 90;
  planner::Config fast = m.config;
  fast.fastest_priority = 90;
  EXPECT_EQ(bought(plan(m.nodes, {urgent}, kNow, fast)[0]), 1);
  planner::Task pinned = t;
  pinned.pinned_workers = 2;
  EXPECT_EQ(bought(plan(m.nodes, {pinned}, kNow, m.config)[0]), 1);
  planner::Task thrifty = t;
  thrifty.reduce_cost = true;
  EXPECT_EQ(bought(plan(m.nodes, {thrifty}, kNow, banded)[0]), 0);
}

TEST(Provisioning, GrowthBuysOnlyNodesItsStepFillsAndTakesWhatIsUpFirst) {
  planner::Node up = nvidia("od-1", 8);
  up.price_micros = 2'400'000;
  planner::Node partly = nvidia("od-2", 8);
  partly.price_micros = 2'400'000;
  partly.free["nvidia.com/gpu"] = 0;  // a full node for now
  Market m({pool("a100-od", "on-demand", {{"nvidia.com/gpu", "64"}})}, {up, partly}, 0, 2'400'000);
  planner::Task t = task("a/t", 0, 1, 11, 1000);
  t.admitted = true;
  for (int i = 0; i < 8; ++i) t.workers.push_back({"od-1", "nvidia.com/gpu", 1, true, i});
  t.last_resize = kNow - 1h;
  t.expected_end = kNow + 10h;
  planner::Scaling linear;
  for (int w = 1; w <= 16; ++w) linear.push_back({w, static_cast<double>(w), 3});
  t.scaling = linear;
  // 3 more would pay, but the smallest node to buy (4 GPUs) would be partly idle: not bought.
  auto ds = plan(m.nodes, {t}, kNow, m.config);
  EXPECT_NE(ds[0].action, planner::Action::Grow) << ds[0].reason;
  EXPECT_EQ(bought(ds[0]), 0);
  // Room on a node that is up: taken.
  m.nodes[1].free["nvidia.com/gpu"] = 3;
  ds = plan(m.nodes, {t}, kNow, m.config);
  EXPECT_EQ(ds[0].action, planner::Action::Grow) << ds[0].reason;
  EXPECT_EQ(ds[0].workers, 11);
  EXPECT_EQ(bought(ds[0]), 0);
  // Up to 12 and 16 (4 and 8 more): a whole node's worth, bought.
  m.nodes[1].free["nvidia.com/gpu"] = 0;
  for (int max : {12, 16}) {
    t.max_workers = max;
    ds = plan(m.nodes, {t}, kNow, m.config);
    EXPECT_EQ(ds[0].action, planner::Action::Grow) << ds[0].reason;
    EXPECT_EQ(bought(ds[0]), max - 8) << ds[0].reason;
  }
}

TEST(Provisioning, AWorkerOnANodeToBuySelectsItsPoolClassAndShapeAndToleratesTheGpuTaint) {
  api::TaskSpec spec;
  spec.name = "t";
  spec.ns = "a";
  spec.worker.image = "train:1";
  render::WorkerPlacement p;
  p.node = api::provisionable_name({"a100-spot", "p4de.24xlarge", "spot"}, 0);
  p.gpu_count = 8;
  const json pod = render::worker_pod(spec, 0, {1, 1}, p);
  const json& terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);
  std::map<std::string, std::string> selected;
  for (const auto& e : terms[0]["matchExpressions"]) selected[e["key"]] = e["values"][0];
  EXPECT_EQ(selected.at("karpenter.sh/nodepool"), "a100-spot");
  EXPECT_EQ(selected.at("karpenter.sh/capacity-type"), "spot");
  EXPECT_EQ(selected.at("node.kubernetes.io/instance-type"), "p4de.24xlarge");
  EXPECT_FALSE(terms[0].contains("matchFields"));
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
  EXPECT_EQ(pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"], "true");
  // On a node that is up: its name.
  p.node = "gpu-1";
  const json pinned = render::worker_pod(spec, 0, {1, 1}, p);
  EXPECT_EQ(pinned["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            "gpu-1");
}

// --- bought nodes given back ------------------------------------------------------------------

TEST(GiveBack, AGangKeepingABoughtNodeUpAloneMovesOntoGpusFreeElsewhereSoTheNodeGoes) {
  auto bought = [](const std::string& name, int64_t free) {
    planner::Node n = nvidia(name, 8, "spot");
    n.labels[api::karpenter::kNodePool] = "a100-spot";
    n.price_micros = 950'000;
    n.free["nvidia.com/gpu"] = free;  // the rest held by pods outside the plan
    return n;
  };
  std::vector<planner::Node> nodes = {bought("node-a", 3), bought("node-b", 8)};
  planner::Task t = task("ns/t", 50, 2, 2);
  t.checkpointed = t.admitted = true;
  t.workers = {{"node-b", "nvidia.com/gpu", 1}, {"node-b", "nvidia.com/gpu", 1}};
  t.expected_end = kNow + 4h;
  planner::Config c;
  c.move_restart_cost = 5min;
  planner::Decision d = planner::plan(nodes, {t}, kNow, c)[0];
  ASSERT_EQ(d.action, planner::Action::Move) << d.reason;
  for (const auto& w : d.placement) EXPECT_EQ(w.node, "node-a");
  EXPECT_NE(d.reason.find("node-b (bought, and kept up by this task alone) empties"), std::string::npos) << d.reason;
  // Not when the saving does not pay for the restart (it ends in a minute), not without a
  // checkpoint, not off a node no NodePool bought (nobody takes it away when empty), not off a node
  // something else holds too, and not while a task waits (it would take those GPUs instead).
  planner::Task ending = t;
  ending.expected_end = kNow + 1min;
  EXPECT_EQ(planner::plan(nodes, {ending}, kNow, c)[0].action, planner::Action::Keep);
  planner::Task plain = t;
  plain.checkpointed = false;
  EXPECT_EQ(planner::plan(nodes, {plain}, kNow, c)[0].action, planner::Action::Keep);
  std::vector<planner::Node> fixed = nodes;
  fixed[1].labels.erase(api::karpenter::kNodePool);
  EXPECT_EQ(planner::plan(fixed, {t}, kNow, c)[0].action, planner::Action::Keep);
  std::vector<planner::Node> shared = nodes;
  shared[1].free["nvidia.com/gpu"] = 7;
  EXPECT_EQ(planner::plan(shared, {t}, kNow, c)[0].action, planner::Action::Keep);
  planner::Task waiting = task("ns/w", 50, 10, 10);
  waiting.created = kNow - 10s;
  auto both = planner::plan(nodes, {t, waiting}, kNow, c);
  ASSERT_EQ(find(both, "ns/w").action, planner::Action::Wait);
  EXPECT_EQ(find(both, "ns/t").action, planner::Action::Keep);
  // Nor a task that did not set reduceCost, once a time band judges it (no restart for the
  // platform's cost); a reduceCost one still moves.
  planner::Config banded = c;
  banded.time_bands = {{0, 0.0}};
  EXPECT_EQ(planner::plan(nodes, {t}, kNow, banded)[0].action, planner::Action::Keep);
  planner::Task thrifty = t;
  thrifty.reduce_cost = true;
  EXPECT_EQ(planner::plan(nodes, {thrifty}, kNow, banded)[0].action, planner::Action::Move);
  // Nor onto a bought node nothing else holds: it is going too, and the gang would move back at
  // the next plan (one idle node traded for another).
  std::vector<planner::Node> idle = nodes;
  idle[0].free["nvidia.com/gpu"] = 8;
  EXPECT_EQ(planner::plan(idle, {t}, kNow, c)[0].action, planner::Action::Keep) << planner::plan(idle, {t}, kNow, c)[0].reason;
}


TEST(Placement, OnBoughtNodesAGangGoesWhereItKeepsANodeUpLeastThenToTheTightestFit) {
  // node-a: 6 GPUs free, its tasks end in 10 h; node-b: 2 free, its tasks end in 1 h. A node a
  // NodePool bought is given back only once empty: an 8-hour task on node-b would keep it up 7 hours
  // more for one GPU, on node-a not at all.
  auto bought = [](const std::string& name) {
    planner::Node n = nvidia(name, 8, "spot");
    n.labels[api::karpenter::kNodePool] = "a100-spot";
    return n;
  };
  std::vector<planner::Node> nodes = {bought("node-a"), bought("node-b")};
  auto running = [](const std::string& key, const std::string& on, int workers, std::chrono::hours left) {
    planner::Task t = task(key, 50, workers, workers);
    t.admitted = true;
    for (int w = 0; w < workers; ++w) t.workers.push_back({on, "nvidia.com/gpu", 1});
    t.expected_end = kNow + left;
    return t;
  };
  const planner::Task long_one = running("ns/long", "node-a", 2, 10h), short_one = running("ns/short", "node-b", 6, 1h);
  auto placed_on = [&](const std::vector<planner::Node>& on, std::optional<std::chrono::milliseconds> estimate) {
    planner::Task fresh = task("ns/new", 50, 1, 1);
    fresh.estimated_duration = estimate;
    const auto ds = planner::plan(on, {long_one, short_one, fresh}, kNow, planner::Config{});
    const auto& d = find(ds, "ns/new");
    EXPECT_EQ(d.placement.size(), 1u) << d.reason;
    return d.placement.empty() ? std::string() : d.placement[0].node;
  };
  EXPECT_EQ(placed_on(nodes, 8h), "node-a");
  // What ends before either node would go keeps neither up: the tightest fit, as without an
  // estimate (nothing known to weigh).
  EXPECT_EQ(placed_on(nodes, 30min), "node-b");
  EXPECT_EQ(placed_on(nodes, std::nullopt), "node-b");
  // Nodes no NodePool bought stay up anyway: the tightest fit. So too with the rule off (the
  // simulator's peers: kube-scheduler knows no durations).
  planner::Config unweighed;
  unweighed.weigh_node_lifetimes = false;
  planner::Task fresh_8h = task("ns/new", 50, 1, 1);
  fresh_8h.estimated_duration = 8h;
  const auto off = planner::plan(nodes, {long_one, short_one, fresh_8h}, kNow, unweighed);
  ASSERT_EQ(find(off, "ns/new").placement.size(), 1u);
  EXPECT_EQ(find(off, "ns/new").placement[0].node, "node-b");
  std::vector<planner::Node> fixed = nodes;
  for (auto& n : fixed) n.labels.erase(api::karpenter::kNodePool);
  EXPECT_EQ(placed_on(fixed, 8h), "node-b");
  // A task on node-b with no expected end keeps it up for as long as it runs: a 12-hour task
  // extends nothing there, and node-a by 2 hours.
  planner::Task open_ended = short_one;
  open_ended.expected_end.reset();
  planner::Task fresh = task("ns/new", 50, 1, 1);
  fresh.estimated_duration = 12h;
  const auto ds = planner::plan(nodes, {long_one, open_ended, fresh}, kNow, planner::Config{});
  ASSERT_EQ(find(ds, "ns/new").placement.size(), 1u);
  EXPECT_EQ(find(ds, "ns/new").placement[0].node, "node-b");
}

}  // namespace
}  // namespace valley
