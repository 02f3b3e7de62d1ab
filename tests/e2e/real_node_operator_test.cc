// The operator as a user installs it, on the real node (tests/cluster/node.bash, `make node-up`).
// Its own binary: the operator it deploys runs every namespace's tasks and its admission policies
// judge every namespace's, so it runs alone (RUN_SERIAL), with no other suite's test beside it.
#include "tests/e2e/real_node_fixture.h"

namespace valley::e2e {
namespace {

// The operator as a user installs it: deploy/overlays/dev applied with kustomize, the image built
// from deploy/Dockerfile, a real pod under its ServiceAccount in valley-system, reaching the API
// server through the `kubernetes` Service like any in-cluster client. No operator of the test's own.
class RealNodeOperatorTest : public ClusterTest {
 protected:
  void TearDown() override {
    // The next tests start operators of their own: this one must be gone first. Its cluster-wide
    // admission policies too: the tests after it hold Valley's own refusals to account.
    try {
      admin->remove(kube::resources::kNamespaces, "", "valley-system");
    } catch (const std::exception&) {
    }
    for (const char* name : {"valley-template-guard", "valley-tenant-priority"}) {
      try {
        admin->remove(kAdmissionBindings, "", name);
        admin->remove(kAdmissionPolicies, "", name);
      } catch (const std::exception&) {
      }
    }
    EXPECT_TRUE(eventually([&] {
      try {
        admin->get(kube::resources::kNamespaces, "", "valley-system");
        return false;
      } catch (const std::exception&) {
        return true;
      }
    }, 120s)) << "namespace valley-system lingers";
    ClusterTest::TearDown();
  }
};

TEST_F(RealNodeOperatorTest, DeployedWithKustomizeItRunsAsARealPodLeadsServesMetricsAndRunsATask) {
  std::string out;
  ASSERT_EQ(kubectl({"apply", "--server-side", "--force-conflicts", "-k", VALLEY_SOURCE_DIR "/tests/e2e/real-node-operator"}, &out), 0) << out;
  kube::ListOptions lo;
  lo.label_selector = "app.kubernetes.io/name=valley,app.kubernetes.io/component=operator";
  json pod;
  ASSERT_TRUE(eventually([&] {
    for (const auto& p : admin->list(kPods, "valley-system", lo).items) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      for (const auto& c : p["status"].value("conditions", json::array()))
        if (c["type"] == "Ready" && c["status"] == "True") {
          pod = p;
          return true;
        }
    }
    return false;
  }, 180s)) << (kubectl({"-n", "valley-system", "describe", "pods"}, &out), out);
  const std::string name = pod["metadata"]["name"];
  EXPECT_EQ(pod["spec"].value("nodeName", ""), kRealNode);
  EXPECT_EQ(pod["spec"].value("serviceAccountName", ""), "valley-operator");
  EXPECT_EQ(container_id(pod).rfind("containerd://", 0), 0u) << pod["status"].dump(2);
  // It leads: the Lease names it.
  ASSERT_TRUE(eventually([&] {
    try {
      return admin->get(kube::resources::kLeases, "valley-system", "valley-operator")["spec"].value("holderIdentity", "") == name;
    } catch (const std::exception&) {
      return false;
    }
  }, 60s)) << (kubectl({"-n", "valley-system", "logs", name}, &out), out);
  // It serves /metrics on the pod's address (the node is on the pods' bridge).
  const std::string url = "http://" + pod["status"].value("podIP", "") + ":8081/metrics";
  ChildProcess curl({"/usr/bin/curl", "-sf", "--max-time", "10", url}, ::testing::TempDir() + "/curl-metrics.log");
  ASSERT_EQ(curl.wait(20s), 0) << url << ": " << curl.output();
  EXPECT_NE(curl.output().find("valley_"), std::string::npos) << curl.output().substr(0, 2000);
  // Its NetworkPolicy (deploy/base/networkpolicy.yaml) under a real enforcer: a tenant's pod reaches
  // nothing of the operator (its metrics carry every tenant's spend; its probes' port is the node's
  // alone); a pod of a namespace labelled as the monitoring one reaches /metrics.
  // The enforcer installs the policy once it has synced the operator's pod (kube-router syncs on pod
  // events, a minute or more behind them after e2e-all's load): refused within that time, and from
  // then on. The pod listens on both ports (/metrics answered above), so a refusal is the policy's.
  const std::string ip = pod["status"].value("podIP", "");
  int refused_after = 0;
  EXPECT_TRUE(eventually([&] { return !pod_connects(*admin, ns, "probe-metrics-" + std::to_string(++refused_after), ip, 8081); }, 240s))
      << "a tenant's pod reached the operator's /metrics for 240 s";
  EXPECT_FALSE(pod_connects(*admin, ns, "probe-metrics-again", ip, 8081));
  EXPECT_FALSE(pod_connects(*admin, ns, "probe-health", ip, 8080));
  admin->patch(kube::resources::kNamespaces, "", ns, kube::PatchType::Merge, {{"metadata", {{"labels", {{"valley.dev/metrics-reader", "true"}}}}}});
  EXPECT_TRUE(eventually([&] {
    static int attempt = 0;
    return pod_connects(*admin, ns, "probe-monitoring-" + std::to_string(++attempt), ip, 8081);
  }, 240s)) << "a monitoring namespace scrapes /metrics";
  // And it does its job: a Single task on the real node, reconciled by the pod.
  json task = {{"apiVersion", "valley.dev/v1beta1"},
               {"kind", "TrainingTask"},
               {"metadata", {{"name", "hello"}}},
               {"spec",
                {{"taskType", "Single"},
                 {"image", kTrainImage},
                 {"command", {"sh", "-c", "echo trained"}},
                 {"worker", {{"gpus", "1"}, {"template", on_real_node()}}}}}};
  admin->create(kTrainingTasks, ns, task);
  EXPECT_TRUE(eventually([&] {
    return admin->get(kTrainingTasks, ns, "hello").value("status", json::object()).value("phase", "") == "Succeeded";
  }, 180s)) << admin->get(kTrainingTasks, ns, "hello").dump(2) << (kubectl({"-n", "valley-system", "logs", name}, &out), out);
}

}  // namespace
}  // namespace valley::e2e
