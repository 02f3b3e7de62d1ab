// Tasks sharing a GPU split two ways (sharing.h): a pair shares only when each does more than half
// its work alone beside the other; a task joins a node's shared GPUs only if it pairs with every
// task already there and nothing of unknown profile holds them; a reduceCost task shares where its
// work is cheaper, any other only when no whole GPU is free; the spec and the PricingPolicy say so.
#include <gtest/gtest.h>

#include "controllers/api/pricing_policy.h"
#include "controllers/api/spec.h"
#include "controllers/inputs/planner_config.h"
#include "controllers/gpu/resources.h"
#include "controllers/planner/sharing.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {

using namespace fixtures;
using json = nlohmann::json;

constexpr const char* kReplica = "ts:2:nvidia.com/gpu.shared";

PairRates rates() {
  PairRates r;
  r.set("resnet18", "lm", 0.76, 1.00);        // pays both
  r.set("resnet18", "resnet50", 0.68, 0.76);  // pays both
  r.set("resnet50", "lm", 0.41, 0.36);        // pays neither
  r.set("resnet50", "resnet50", 0.32, 0.32);  // pays neither
  r.set("lm", "lm", 0.71, 0.71);
  return r;
}

TEST(Sharing, APairSharesOnlyWhenEachDoesMoreThanHalfItsWorkAlone) {
  const PairRates r = rates();
  EXPECT_TRUE(pair_pays(r, "resnet18", "lm"));
  EXPECT_TRUE(pair_pays(r, "lm", "resnet18"));
  EXPECT_FALSE(pair_pays(r, "resnet50", "lm"));
  EXPECT_FALSE(pair_pays(r, "resnet50", "resnet50"));
  EXPECT_FALSE(pair_pays(r, "resnet18", "unmeasured")) << "a pair nobody measured never shares";
  PairRates half;
  half.set("a", "b", 0.5, 0.9);
  EXPECT_FALSE(pair_pays(half, "a", "b")) << "exactly half its work for half the price saves nothing";
  // Beside tasks already there: the worst pair it may land in; one pair that does not pay, or an
  // occupant of no profile, keeps it off.
  EXPECT_DOUBLE_EQ(*shared_rate(r, "resnet18", {"lm", "resnet50"}), 0.68);
  EXPECT_FALSE(shared_rate(r, "lm", {"resnet18", "resnet50"}));
  EXPECT_FALSE(shared_rate(r, "lm", {""}));
  // Alone there: the worst partner that may still join it.
  EXPECT_DOUBLE_EQ(*shared_rate(r, "resnet18", {}), 0.68);
  EXPECT_DOUBLE_EQ(*shared_rate(r, "lm", {}), 0.71);
  EXPECT_FALSE(shared_rate(r, "resnet50", {"resnet50"}));
  EXPECT_FALSE(shared_rate(r, "", {})) << "no profile: it does not share";
}

Node shared_node(const std::string& name, int gpus, int64_t free_replicas = -1) {
  Node n = node(name, "nvidia", "on-demand", {{kReplica, 2 * gpus}});
  n.replicas_resource = kReplica;
  if (free_replicas >= 0) n.free[kReplica] = free_replicas;
  n.price_micros = 2'000'000;
  return n;
}
Node whole_node(const std::string& name, int gpus, int64_t price) {
  Node n = nvidia(name, gpus);
  n.price_micros = price;
  return n;
}
Task sharer(const std::string& key, const std::string& profile, bool reduce_cost = false) {
  Task t = task(key, 50, 1, 1);
  t.sharing_profile = profile;
  t.reduce_cost = reduce_cost;
  return t;
}
Config sharing_config() {
  Config c;
  c.pair_rates = std::make_shared<PairRates>(rates());
  return c;
}

TEST(Sharing, AReduceCostTaskSharesWhereItsWorkIsCheaperAndIsChargedHalfAGpu) {
  // Half of a 2.00 GPU at 0.68 of its rate alone is 1.47 a GPU-hour of its work: cheaper than a
  // whole GPU at 1.60, dearer than one at 1.40.
  for (const auto& [whole_price, shares] : std::vector<std::pair<int64_t, bool>>{{1'600'000, true}, {1'400'000, false}}) {
    auto ds = plan({shared_node("ts", 1), whole_node("whole", 1, whole_price)}, {sharer("ns/a", "resnet18", /*reduce_cost=*/true)}, kNow,
                   sharing_config());
    ASSERT_EQ(ds[0].action, Action::Admit) << ds[0].reason;
    ASSERT_EQ(ds[0].placement.size(), 1u);
    EXPECT_EQ(ds[0].placement[0].node, shares ? "ts" : "whole") << "whole GPU at " << whole_price;
    if (shares) {
      EXPECT_EQ(ds[0].placement[0].gpu_resource, kReplica);
      EXPECT_EQ(gpu::share_milli(ds[0].placement[0].gpu_resource, ds[0].placement[0].count), 500);
    }
  }
}

TEST(Sharing, ATaskThatIsNotReduceCostSharesOnlyWhenNoWholeGpuIsFree) {
  const Config c = sharing_config();
  auto ds = plan({shared_node("ts", 1), whole_node("whole", 1, 3'000'000)}, {sharer("ns/a", "resnet18")}, kNow, c);
  EXPECT_EQ(ds[0].placement.at(0).node, "whole") << "a whole GPU is free: it runs alone, however dear";
  ds = plan({shared_node("ts", 1), whole_node("whole", 0, 3'000'000)}, {sharer("ns/a", "resnet18")}, kNow, c);
  ASSERT_EQ(ds[0].action, Action::Admit) << ds[0].reason;
  EXPECT_EQ(ds[0].placement.at(0).node, "ts") << "no whole GPU: it starts on half of one rather than wait";
  // Without sharing it waits.
  Task plain = sharer("ns/a", "");
  ds = plan({shared_node("ts", 1), whole_node("whole", 0, 3'000'000)}, {plain}, kNow, c);
  EXPECT_EQ(ds[0].action, Action::Wait);
}

TEST(Sharing, ATaskJoinsASharedNodeOnlyIfItPairsWithEveryTaskAlreadyThere) {
  const Config c = sharing_config();
  Task there = sharer("ns/there", "resnet18", true);
  there.admitted = true;
  there.workers = {{"ts", kReplica, 1}};
  // resnet50 pairs with resnet18: it joins. lm then pairs with resnet18 but not with resnet50.
  auto ds = plan({shared_node("ts", 2), whole_node("whole", 0, 1'000'000)}, {there, sharer("ns/b", "resnet50", true), sharer("ns/c", "lm", true)},
                 kNow, c);
  EXPECT_EQ(find(ds, "ns/there").action, Action::Keep);
  EXPECT_EQ(find(ds, "ns/b").action, Action::Admit) << find(ds, "ns/b").reason;
  EXPECT_EQ(find(ds, "ns/c").action, Action::Wait) << "it would pair with resnet50, whose pair with it does not pay";
  // A replica held by a pod of unknown profile (someone else's, or a fraction; the node's free
  // count lacks it) keeps everyone off.
  ds = plan({shared_node("ts", 2, 3), whole_node("whole", 0, 1'000'000)}, {there, sharer("ns/b", "resnet18", true)}, kNow, c);
  EXPECT_EQ(find(ds, "ns/b").action, Action::Wait);
  // Only a GPU split exactly two ways pairs; a larger gang never shares.
  Node four = shared_node("ts4", 1);
  four.replicas_resource = "ts:4:nvidia.com/gpu.shared";
  four.free = four.capacity = {{four.replicas_resource, 4}};
  EXPECT_EQ(plan({four}, {sharer("ns/a", "resnet18", true)}, kNow, c)[0].action, Action::Wait);
  Task gang = sharer("ns/g", "resnet18", true);
  gang.min_workers = gang.max_workers = 2;
  EXPECT_EQ(plan({shared_node("ts", 2)}, {gang}, kNow, c)[0].action, Action::Wait);
  // No measured pairs: nothing shares.
  EXPECT_EQ(plan({shared_node("ts", 1)}, {sharer("ns/a", "resnet18", true)}, kNow, Config{})[0].action, Action::Wait);
}

TEST(Sharing, TheSpecAllowsSharingUnderAProfileAndThePolicyListsMeasuredPairs) {
  json task = {{"metadata", {{"name", "t"}, {"namespace", "ns"}, {"uid", "u"}, {"generation", 1}}},
               {"spec",
                {{"taskType", "Single"}, {"image", "train:1"}, {"worker", {{"sharing", {{"allowed", true}}}}}}}};
  auto parsed = api::parse_task(task);
  ASSERT_TRUE(parsed.spec) << (parsed.errors.empty() ? "" : parsed.errors[0]);
  EXPECT_EQ(parsed.spec->sharing_profile, "train:1") << "the profile defaults to the worker image";
  task["spec"]["worker"]["sharing"]["profile"] = "resnet18";
  EXPECT_EQ(api::parse_task(task).spec->sharing_profile, "resnet18");
  task["spec"]["worker"]["sharing"]["allowed"] = false;
  EXPECT_FALSE(api::parse_task(task).spec->sharing_profile);
  task["spec"]["worker"].erase("sharing");
  EXPECT_FALSE(api::parse_task(task).spec->sharing_profile) << "default: never";

  json policy = {{"spec",
                  {{"gpu", json::array({{{"onDemand", "2.00"}}})},
                   {"sharing", {{"pairs", json::array({{{"profiles", {"resnet18", "lm"}}, {"rates", {"0.76", "1"}}}})}}}}}};
  std::vector<std::string> errors;
  auto p = api::parse_policy(policy, &errors);
  ASSERT_TRUE(p) << errors.at(0);
  ASSERT_EQ(p->sharing_pairs.size(), 1u);
  EXPECT_EQ(p->sharing_pairs[0].a_milli, 760);
  EXPECT_EQ(p->sharing_pairs[0].b_milli, 1000);
  std::vector<Node> nodes;
  const Config c = cost::planner_config(*p, nodes, kNow, Config{});
  ASSERT_TRUE(c.pair_rates);
  EXPECT_TRUE(pair_pays(*c.pair_rates, "lm", "resnet18"));
  for (const json& bad : {json{{"profiles", {"a"}}, {"rates", {"0.5", "0.5"}}}, json{{"profiles", {"a", "b"}}, {"rates", {"0.5"}}},
                          json{{"profiles", {"a", "b"}}, {"rates", {"0.5", "3"}}}}) {
    policy["spec"]["sharing"]["pairs"] = json::array({bad});
    errors.clear();
    EXPECT_FALSE(api::parse_policy(policy, &errors)) << bad.dump();
    EXPECT_FALSE(errors.empty());
  }
}

}  // namespace
}  // namespace valley::planner
