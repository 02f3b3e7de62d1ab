// An MPI task walled off by its NetworkPolicy (render/network_policy.h) on the real API server: the
// policy is the task's, made before any of its pods, and a policy the cluster refuses keeps the pods
// from being created at all (the task says why) until the refusal goes. Whether a CNI enforces the
// policy is the real node's concern; kwok's pods have no network.
#include <gtest/gtest.h>

#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kNetworkPolicies;

const kube::Resource kAdmissionPolicies{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false};
const kube::Resource kAdmissionPolicyBindings{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
                                              "ValidatingAdmissionPolicyBinding", false};

class IsolationTest : public TaskTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    auto flags = TaskTest::operator_flags();
    flags.push_back("--refused-retry=5s");  // an admission policy's refusal heals only when it goes
    return flags;
  }
  std::string condition_message(const std::string& type) {
    for (const auto& c : task().value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == type) return c.value("status", "") + " " + c.value("reason", "") + ": " + c.value("message", "");
    return "";
  }
};

TEST_F(IsolationTest, AnMpiTasksPodsAreWalledOffByAPolicyOfItsOwnMadeBeforeThem) {
  const json made = apply(mpi_spec(2, 2));
  ASSERT_TRUE(wait_phase("Running", 90s)) << task().dump(2);
  const json policy = admin->get(kNetworkPolicies, ns, "job-mpi");
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["uid"], made["metadata"]["uid"]);
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["apiVersion"], "valley.dev/v1beta1");
  EXPECT_EQ(policy["spec"]["podSelector"]["matchLabels"]["valley.dev/task"], "job");
  EXPECT_EQ(policy["spec"]["ingress"][0]["from"][0]["podSelector"], policy["spec"]["podSelector"]);
  // Every pod of the task is selected by it, and none is older than it.
  const std::string made_at = policy["metadata"]["creationTimestamp"];
  const auto all = pods();
  ASSERT_EQ(all.size(), 3u);
  for (const auto& p : all) {
    for (const auto& [k, v] : policy["spec"]["podSelector"]["matchLabels"].items())
      EXPECT_EQ(p["metadata"]["labels"].value(k, ""), v) << p["metadata"]["name"];
    EXPECT_LE(made_at, p["metadata"]["creationTimestamp"].get<std::string>()) << p["metadata"]["name"];
  }
}

TEST_F(IsolationTest, APolicyTheClusterRefusesKeepsThePodsFromBeingCreatedAndTheTaskSaysWhy) {
  // An admission policy that refuses NetworkPolicies in this namespace, as a cluster whose own
  // policy tooling owns them might.
  own(kAdmissionPolicies,
      {{"apiVersion", "admissionregistration.k8s.io/v1"},
       {"kind", "ValidatingAdmissionPolicy"},
       {"metadata", {{"name", ns + "-frozen"}}},
       {"spec",
        {{"failurePolicy", "Fail"},
         {"matchConstraints",
          {{"resourceRules", {{{"apiGroups", {"networking.k8s.io"}}, {"apiVersions", {"v1"}}, {"operations", {"CREATE"}}, {"resources", {"networkpolicies"}}}}}}},
         {"validations", {{{"expression", "false"}, {"message", "network policies are frozen here"}}}}}}});
  own(kAdmissionPolicyBindings,
      {{"apiVersion", "admissionregistration.k8s.io/v1"},
       {"kind", "ValidatingAdmissionPolicyBinding"},
       {"metadata", {{"name", ns + "-frozen"}}},
       {"spec",
        {{"policyName", ns + "-frozen"},
         {"validationActions", {"Deny"}},
         {"matchResources", {{"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", ns}}}}}}}}}});
  // The API server takes the policy in within a moment: until a probe is refused.
  const json probe = {{"apiVersion", "networking.k8s.io/v1"}, {"kind", "NetworkPolicy"}, {"metadata", {{"name", "probe"}}},
                      {"spec", {{"podSelector", json::object()}}}};
  ASSERT_TRUE(eventually([&] {
    try {
      admin->create(kNetworkPolicies, ns, probe);
      admin->remove(kNetworkPolicies.item(ns, "probe"));
      return false;
    } catch (const kube::KubeError& e) {
      return std::string(e.what()).find("frozen") != std::string::npos;
    }
  }, 30s));

  apply(mpi_spec(2, 2));
  ASSERT_TRUE(eventually([&] { return condition_message("PodsCreated").find("frozen") != std::string::npos; }, 60s))
      << task().dump(2);
  EXPECT_EQ(condition_message("PodsCreated").rfind("False", 0), 0u) << condition_message("PodsCreated");
  EXPECT_TRUE(has_event("\nCreateFailed: NetworkPolicy job-mpi")) << events_text();
  EXPECT_TRUE(pods().empty()) << "no pod runs unisolated";
  std::this_thread::sleep_for(8s);  // nor with the retries
  EXPECT_TRUE(pods().empty());
  EXPECT_EQ(task()["status"].value("replicas", 0), 0);

  // Once the cluster takes it, the task starts.
  admin->remove(kAdmissionPolicyBindings.item("", ns + "-frozen"));
  ASSERT_TRUE(wait_phase("Running", 120s)) << task().dump(2);
  EXPECT_NO_THROW(admin->get(kNetworkPolicies, ns, "job-mpi"));
  EXPECT_TRUE(eventually([&] { return condition_message("PodsCreated").rfind("True", 0) == 0; }, 15s)) << condition_message("PodsCreated");
}

}  // namespace
}  // namespace valley::e2e
