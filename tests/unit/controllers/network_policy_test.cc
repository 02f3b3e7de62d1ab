// A task's NetworkPolicy (render/network_policy.h), and when the lifecycle asks for one.
#include "controllers/render/network_policy.h"

#include <gtest/gtest.h>

#include "tests/unit/controllers/lifecycle_fixtures.h"

namespace valley {
namespace {

using json = nlohmann::json;
using namespace lifecycle::fixtures;

api::TaskSpec spec_of(const json& spec_patch) { return *api::parse_task(task_object(spec_patch)).spec; }

TEST(NetworkPolicy, AdmitsOnlyTheTasksOwnPodsToAllOfThem) {
  const json p = render::task_network_policy(spec_of(json::object()));
  EXPECT_EQ(p["kind"], "NetworkPolicy");
  EXPECT_EQ(p["metadata"]["name"], "t-mpi");
  EXPECT_EQ(p["metadata"]["namespace"], "ns");
  EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], "u-1");
  EXPECT_TRUE(p["metadata"]["ownerReferences"][0]["controller"].get<bool>());
  const json own = {{"matchLabels", {{"app.kubernetes.io/managed-by", "valley"}, {"valley.dev/task", "t"}}}};
  EXPECT_EQ(p["spec"]["podSelector"], own) << "the launcher and every worker, of every epoch";
  EXPECT_EQ(p["spec"]["policyTypes"], json::array({"Ingress"})) << "egress stays open: data and checkpoint stores";
  ASSERT_EQ(p["spec"]["ingress"].size(), 1u);
  EXPECT_EQ(p["spec"]["ingress"][0], json({{"from", json::array({{{"podSelector", own}}})}})) << "any port: mpirun and orted choose theirs";
}

TEST(NetworkPolicy, OpensThePortsTheTemplatesDeclareToAnyone) {
  const json p = render::task_network_policy(spec_of(json::parse(R"({
      "master":{"template":{"spec":{"containers":[{"name":"tb","image":"tb","ports":[{"containerPort":6006}]}]}}},
      "worker":{"template":{"spec":{"containers":[{"name":"worker","ports":[{"containerPort":9400,"protocol":"TCP"},
                                                                           {"containerPort":6006},{"containerPort":5353,"protocol":"UDP"}]}]}}}})")));
  ASSERT_EQ(p["spec"]["ingress"].size(), 2u);
  EXPECT_FALSE(p["spec"]["ingress"][1].contains("from")) << "from anywhere";
  EXPECT_EQ(p["spec"]["ingress"][1]["ports"], json::parse(R"([{"port":5353,"protocol":"UDP"},{"port":6006,"protocol":"TCP"},
                                                             {"port":9400,"protocol":"TCP"}])"));
}

int policies(const lifecycle::Decision& d) {
  return static_cast<int>(std::count_if(d.create.begin(), d.create.end(), [](const json& o) { return o.value("kind", "") == "NetworkPolicy"; }));
}

TEST(NetworkPolicy, AnIsolatedMpiTaskGetsOneWithItsFirstObjectsAndNeverTwice) {
  auto o = observe(task_object(), {}, false);
  o.isolate = true;
  auto d = lifecycle::decide(o);
  EXPECT_EQ(policies(d), 1);
  o.network_policy_exists = true;
  d = lifecycle::decide(o);
  EXPECT_EQ(policies(d), 0);
  o.isolate = false;
  o.network_policy_exists = false;
  d = lifecycle::decide(o);
  EXPECT_EQ(policies(d), 0) << "--task-network-policies=false";
  o = observe(task_object(json::parse(R"({"taskType":"Single","replicas":{"min":1,"max":1}})")), {}, false);
  o.isolate = true;
  d = lifecycle::decide(o);
  EXPECT_EQ(policies(d), 1) << "a Single task's notebook or server is its tenant's too";
}

TEST(NetworkPolicy, WithEgressLimitsATaskReachesItsPodsDnsAndOnlyAddressesOutsideTheListedRanges) {
  const json open = render::task_network_policy(spec_of(json::object()), {});
  EXPECT_FALSE(open["spec"].contains("egress"));
  const json p = render::task_network_policy(spec_of(json::object()), {"10.244.0.0/16", "10.96.0.0/12", "169.254.169.254/32", "fd00::/8"});
  EXPECT_EQ(p["spec"]["policyTypes"], json::array({"Ingress", "Egress"}));
  const json& egress = p["spec"]["egress"];
  ASSERT_EQ(egress.size(), 3u);
  EXPECT_EQ(egress[0]["to"][0]["podSelector"], p["spec"]["podSelector"]) << "its own pods";
  EXPECT_EQ(egress[1]["ports"], json::parse(R"([{"port":53,"protocol":"UDP"},{"port":53,"protocol":"TCP"}])")) << "DNS";
  EXPECT_EQ(egress[2]["to"][0]["ipBlock"], json::parse(R"({"cidr":"0.0.0.0/0","except":["10.244.0.0/16","10.96.0.0/12","169.254.169.254/32"]})"));
  EXPECT_EQ(egress[2]["to"][1]["ipBlock"], json::parse(R"({"cidr":"::/0","except":["fd00::/8"]})"));
}

}  // namespace
}  // namespace valley
