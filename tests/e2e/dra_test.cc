// GPUs published through Dynamic Resource Allocation, end to end on the local control plane: a kwok
// node whose GPUs only a ResourceSlice publishes (a simulated NVIDIA DRA driver: the slice is
// written by the test, no kubelet plugin prepares anything), beside a node whose device plugin
// advertises nvidia.com/gpu. kube-scheduler allocates the claims Valley's templates make; Valley
// places, counts and prices those GPUs like the rest.
#include <fstream>

#include "operator/kube/error.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kDeviceClasses;
using kube::resources::kNodes;
using kube::resources::kResourceClaims;
using kube::resources::kResourceSlices;

constexpr const char* kDriver = "gpu.nvidia.com";

class DraTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    pool_ = own_pool();
    try {  // NVIDIA's DRA driver installs this class; shared by the tests, left in place
      admin->create(kDeviceClasses, "",
                    {{"apiVersion", "resource.k8s.io/v1"},
                     {"kind", "DeviceClass"},
                     {"metadata", {{"name", kDriver}}},
                     {"spec", {{"selectors", json::array({{{"cel", {{"expression", std::string("device.driver == \"") + kDriver + "\""}}}}})}}}});
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 409) throw;
    }
    own_policy(json::parse(R"({"currency":"USD","gpu":[{"match":{"vendor":"nvidia","product":"NVIDIA-H100-80GB"},"onDemand":"1.50","spot":"0.60"},
                                            {"match":{"vendor":"nvidia"},"onDemand":"2.40","spot":"0.95"}]})"));
    own(kNodes, kwok_gpu_node(dra_node(), {{"valley.dev/pool", pool_}}, 0, "example.com/none"));
    own(kResourceSlices, slice(4));
    own(kNodes, kwok_gpu_node(plugin_node(), {{"valley.dev/pool", pool_}}, 4));
    start_operator();
  }
  std::string dra_node() const { return pool_ + "-dra"; }
  std::string plugin_node() const { return pool_ + "-plugin"; }
  json slice(int devices) const {
    json list = json::array();
    for (int d = 0; d < devices; ++d)
      list.push_back({{"name", "gpu-" + std::to_string(d)}, {"attributes", {{"productName", {{"string", "NVIDIA-H100-80GB"}}}}}});
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceSlice"},
            {"metadata", {{"name", dra_node() + "-gpus"}}},
            {"spec", {{"driver", kDriver}, {"nodeName", dra_node()}, {"pool", {{"name", dra_node()}, {"generation", 1}, {"resourceSliceCount", 1}}},
                      {"devices", list}}}};
  }
  json gang(int workers) {
    json spec = mpi_spec(workers, workers);
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", pool_}}}}}};
    return spec;
  }
  // The devices the claims in the namespace hold, by node of their pool; every claim allocated.
  std::map<std::string, int> allocated_devices(bool* all_allocated) {
    std::map<std::string, int> out;
    *all_allocated = true;
    for (const auto& c : admin->list(kResourceClaims, ns).items) {
      const json results = c.value("status", json::object()).value("allocation", json::object()).value("devices", json::object()).value("results", json::array());
      if (results.empty()) *all_allocated = false;
      for (const auto& r : results) ++out[r.value("pool", "")];
    }
    return out;
  }
  // Each claim in the namespace: its name and the devices its allocation holds.
  std::string claims_text() {
    std::string out;
    for (const auto& c : admin->list(kResourceClaims, ns).items)
      out += "\n" + c["metadata"].value("name", "") + " " +
             c.value("status", json::object()).value("allocation", json::object()).value("devices", json::object()).value("results", json::array()).dump();
    return out;
  }
  std::string pool_;
};

TEST_F(DraTest, AGangOnDraGpusGetsClaimsKubeSchedulerAllocatesAndIsPricedByTheirProduct) {
  apply(gang(4), "dra");
  ASSERT_TRUE(wait_phase("Running", 60s, "dra")) << task("dra").dump(2);
  for (const auto& p : workers("dra")) {
    EXPECT_EQ(p["spec"].value("nodeName", ""), dra_node()) << "the H100s DRA publishes are the cheapest";
    const json& c = p["spec"]["containers"][0];
    EXPECT_FALSE(c["resources"].value("limits", json::object()).contains("nvidia.com/gpu")) << c.dump();
    EXPECT_EQ(c["resources"]["claims"][0].value("name", ""), "gpus");
  }
  bool all = false;
  EXPECT_TRUE(eventually([&] {
    auto held = allocated_devices(&all);
    return all && held[dra_node()] == 4;
  }, 30s)) << "kube-scheduler allocated every worker's claim on the DRA node";
  EXPECT_TRUE(eventually([&] {
    int h100 = 0;
    for (const auto& e : cost("dra").value("ledger", json::array()))
      h100 += e.value("gpuPerHourMicros", 0) == 1'500'000 && e.value("product", "") == "NVIDIA-H100-80GB";
    return h100 == 4;
  }, 30s)) << task("dra")["status"].dump(2);
}

// Without deploy/policies/valley-pods.yaml a tenant who may edit pods can rewrite or remove the
// annotations on Valley's workers. How many GPUs a worker holds is read from the record sealed in
// its container when Valley made it (api::kRecordsEnv), which the API server keeps as it was: with
// every worker's claimed-gpus annotation removed, the DRA node still counts as full (the next task
// goes to the other node) and the gang is still billed for its four GPUs.
TEST_F(DraTest, AWorkersRecordRemovedByATenantChangesNeitherWhatItHoldsNorItsBill) {
  apply(gang(4), "dra");
  ASSERT_TRUE(wait_phase("Running", 60s, "dra")) << task("dra").dump(2);
  ASSERT_TRUE(eventually([&] { return cost("dra").value("ledger", json::array()).size() == 4; }, 30s)) << task("dra")["status"].dump(2);
  for (const auto& p : workers("dra")) {
    const std::string name = p["metadata"]["name"];
    json containers = p["spec"]["containers"];
    containers[0]["env"] = json::array();
    try {
      admin->patch(kPods, ns, name, kube::PatchType::Merge, {{"spec", {{"containers", containers}}}});
      ADD_FAILURE() << "the API server let " << name << "'s container change";
    } catch (const kube::KubeError& e) {
      EXPECT_EQ(e.http_status(), 422) << e.what();
    }
    admin->patch(kPods, ns, name, kube::PatchType::Merge, {{"metadata", {{"annotations", {{"valley.dev/claimed-gpus", nullptr}}}}}});
  }
  for (const auto& p : workers("dra")) ASSERT_FALSE(p["metadata"].value("annotations", json::object()).contains("valley.dev/claimed-gpus"));
  const int64_t billed = cost("dra").value("breakdown", json::object()).value("gpuMicros", int64_t{0});
  apply(gang(1), "next");
  ASSERT_TRUE(wait_phase("Running", 60s, "next")) << task("next").dump(2);
  ASSERT_EQ(workers("next").size(), 1u);
  EXPECT_EQ(workers("next")[0]["spec"].value("nodeName", ""), plugin_node()) << "the DRA node's four GPUs are still held";
  // (The accrued cost is brought up to date every --cost-interval, 30 s by default.)
  EXPECT_TRUE(eventually([&] { return cost("dra").value("breakdown", json::object()).value("gpuMicros", int64_t{0}) > billed; }, 90s))
      << task("dra")["status"].dump(2);
  const json ledger = cost("dra").value("ledger", json::array());
  EXPECT_EQ(ledger.size(), 4u) << ledger.dump(2);
  for (const auto& e : ledger) EXPECT_EQ(e.value("shareMilli", 0), 1000) << e.dump();
}

// A pod of someone else's holds two of the DRA node's four GPUs through its own claim. Valley
// counts that claim, its own workers through their pods, and the device plugin's GPUs on the other
// node once each: what fits runs, what does not waits, and no node is asked for more than it has.
TEST_F(DraTest, ForeignClaimsAndBothKindsOfGpusAreCountedOnceAndNothingOverbooks) {
  admin->create(kube::resources::kResourceClaims, ns,
                {{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", "ResourceClaim"},
                 {"metadata", {{"name", "theirs"}}},
                 {"spec", {{"devices", {{"requests", json::array({{{"name", "g"}, {"exactly", {{"deviceClassName", kDriver}, {"count", 2}}}}})}}}}}});
  admin->create(kPods, ns,
                {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "theirs"}}},
                 {"spec", {{"nodeSelector", {{"kubernetes.io/hostname", dra_node()}}},
                           {"resourceClaims", json::array({{{"name", "g"}, {"resourceClaimName", "theirs"}}})},
                           {"containers", json::array({{{"name", "c"}, {"image", "busybox"}, {"resources", {{"claims", json::array({{{"name", "g"}}})}}}}})}}}});
  bool all = false;
  ASSERT_TRUE(eventually([&] { return allocated_devices(&all)[dra_node()] == 2 && all; }, 30s)) << "the foreign claim was not allocated";
  // Six GPUs are free: two on the DRA node, four on the other. Gangs of three and two fit (spread
  // over both as price says); a third of two does not.
  apply(gang(3), "three");
  ASSERT_TRUE(wait_phase("Running", 60s, "three")) << task("three").dump(2);
  apply(gang(2), "two");
  ASSERT_TRUE(wait_phase("Running", 60s, "two")) << task("two").dump(2);
  std::map<std::string, int> on;
  for (const char* t : {"three", "two"})
    for (const auto& p : workers(t)) ++on[p["spec"].value("nodeName", "")];
  EXPECT_EQ(on[dra_node()], 2) << "the DRA node's two free H100s are the cheapest, and all it has left";
  EXPECT_EQ(on[plugin_node()], 3);
  apply(gang(2), "waits");
  // The operator decides it waits (the plan ran), and says why.
  EXPECT_TRUE(eventually([&] {
    const json st = task("waits").value("status", json::object());
    return st.value("reason", "") == "Waiting" && st.value("message", "").find("InsufficientCapacity") != std::string::npos;
  }, 30s)) << task("waits").dump(2);
  EXPECT_NE(phase("waits"), "Running");
  EXPECT_TRUE(workers("waits").empty()) << "a gang that fits nowhere creates no pod";
  EXPECT_EQ(allocated_devices(&all)[dra_node()], 4) << "the DRA node's four GPUs, each allocated once";
}

// spec.worker.devices a user gets wrong: a class no node publishes, a product no device is, more
// devices than any node has. Each task waits Unplaceable saying why, and creates nothing; one whose
// spec is fixed runs, its claims asking for the product it named.
TEST_F(DraTest, ADeviceRequestNoNodeCanMeetSaysWhyCreatesNothingAndRunsOnceFixed) {
  auto asking = [&](json devices, const std::string& gpus = "1") {
    json spec = gang(2);
    spec["worker"]["gpus"] = gpus;
    spec["worker"]["devices"] = std::move(devices);
    return spec;
  };
  apply(asking({{"deviceClassName", "gpu.example.com"}}), "noclass");
  apply(asking({{"deviceClassName", kDriver}, {"matchAttributes", {{"productName", "NVIDIA-B200"}}}}), "noproduct");
  apply(asking({{"deviceClassName", kDriver}}, "8"), "toomany");
  auto says = [&](const std::string& name, const std::string& words) {
    return eventually([&] {
      const json st = task(name).value("status", json::object());
      return st.value("reason", "") == "Unplaceable" && st.value("message", "").find(words) != std::string::npos;
    }, 30s);
  };
  // The classes published name the default fleet's too (its Intel DRA node).
  EXPECT_TRUE(says("noclass", "no node publishes DRA devices of class gpu.example.com (classes published: ")) << task("noclass")["status"].dump(2);
  EXPECT_NE(task("noclass")["status"].value("message", "").find("gpu.nvidia.com"), std::string::npos) << task("noclass")["status"].dump(2);
  EXPECT_TRUE(says("noproduct", "no device of class gpu.nvidia.com has productName=NVIDIA-B200 (its nodes' devices have productName=NVIDIA-H100-80GB)"))
      << task("noproduct")["status"].dump(2);
  EXPECT_TRUE(says("toomany", "needs 8 GPUs per worker; the largest node it may use has 4")) << task("toomany")["status"].dump(2);
  for (const char* t : {"noclass", "noproduct", "toomany"}) {
    EXPECT_EQ(phase(t), "Pending") << t;
    EXPECT_TRUE(pods(t).empty()) << t << " created pods";
  }
  EXPECT_TRUE(admin->list(kube::resources::kResourceClaimTemplates, ns).items.empty()) << "nothing asked for a claim";

  // Fixed: the product the DRA node has. It runs there, each claim selecting that product.
  admin->patch(kTrainingTasks, ns, "noproduct", kube::PatchType::Merge,
               {{"spec", {{"worker", {{"devices", {{"matchAttributes", {{"productName", "NVIDIA-H100-80GB"}}}}}}}}}});
  ASSERT_TRUE(wait_phase("Running", 60s, "noproduct")) << task("noproduct").dump(2) << operator_log();
  for (const auto& p : workers("noproduct")) EXPECT_EQ(p["spec"].value("nodeName", ""), dra_node());
  const auto templates = admin->list(kube::resources::kResourceClaimTemplates, ns).items;
  ASSERT_EQ(templates.size(), 1u);
  const json request = templates[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"];
  EXPECT_EQ(request.value("selectors", json::array()).size(), 1u) << request.dump(2);
  EXPECT_NE(request.dump().find("NVIDIA-H100-80GB"), std::string::npos) << request.dump(2);
  bool all = false;
  EXPECT_TRUE(eventually([&] { return allocated_devices(&all)[dra_node()] == 2 && all; }, 30s)) << "the scheduler allocated both claims";
}

// Four half-GPU workers on a driver that shares devices (gpu.nvidia.com, by default): two seats
// claims of one device each, two workers on each, each claim allocated once by kube-scheduler;
// each worker charged half a GPU. The two devices left take a whole-GPU gang; a third gang finds
// nothing and waits: no device is counted twice.
TEST_F(DraTest, HalfGpuWorkersSitTwoToADeviceOnSharedClaimsAndNothingOverbooks) {
  auto on_dra = [&](int workers, const std::string& gpus) {
    json spec = gang(workers);
    spec["worker"]["gpus"] = gpus;
    spec["worker"]["devices"] = {{"deviceClassName", kDriver}};
    return spec;
  };
  apply(on_dra(4, "0.5"), "halves");
  ASSERT_TRUE(wait_phase("Running", 60s, "halves")) << task("halves").dump(2) << operator_log();
  std::map<std::string, int> seated;  // claim -> workers on it
  for (const auto& p : workers("halves")) {
    EXPECT_EQ(p["spec"].value("nodeName", ""), dra_node());
    const json& claims = p["spec"]["resourceClaims"];
    ASSERT_EQ(claims.size(), 1u) << p["spec"].dump(2);
    EXPECT_FALSE(claims[0].contains("resourceClaimTemplateName"));
    ++seated[claims[0].value("resourceClaimName", "")];
    EXPECT_EQ(p["metadata"]["annotations"].value("valley.dev/gpu-seat", ""), std::string(kDriver) + "=500");
  }
  EXPECT_EQ(seated, (std::map<std::string, int>{{"halves-seats-0", 2}, {"halves-seats-1", 2}}));
  bool all = false;
  EXPECT_TRUE(eventually([&] { return allocated_devices(&all)[dra_node()] == 2 && all; }, 30s))
      << "one device per claim, allocated once however many pods share it: " << claims_text() << operator_log();
  EXPECT_TRUE(eventually([&] {
    int halves = 0;
    for (const auto& e : cost("halves").value("ledger", json::array())) halves += e.value("shareMilli", 0) == 500;
    return halves == 4;
  }, 30s)) << task("halves")["status"].dump(2);

  apply(on_dra(2, "1"), "whole");
  ASSERT_TRUE(wait_phase("Running", 60s, "whole")) << task("whole").dump(2) << operator_log();
  for (const auto& p : workers("whole")) EXPECT_EQ(p["spec"].value("nodeName", ""), dra_node());
  apply(on_dra(1, "1"), "more");
  EXPECT_TRUE(eventually([&] {
    return task("more").value("status", json::object()).value("message", "").find("InsufficientCapacity") != std::string::npos;
  }, 30s))
      << task("more").dump(2);
  EXPECT_TRUE(workers("more").empty());
  EXPECT_TRUE(eventually([&] { return allocated_devices(&all)[dra_node()] == 4 && all; }, 30s))
      << "the node's four devices, each once: " << claims_text();
}

// valleyctl estimate reads the cluster as the operator does: the H100s only DRA publishes are there,
// and the cheapest.
TEST_F(DraTest, ValleyctlEstimatesOnDraGpusAtTheirProductsPrice) {
  const std::string file = ::testing::TempDir() + "/dra-task-" + ns + ".yaml";
  std::ofstream(file) << json{{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", "plan"}, {"namespace", ns}}},
                              {"spec", [&] { json s = gang(4); s["estimatedDuration"] = "1h"; return s; }()}}.dump();
  ChildProcess run({binary("valleyctl"), "estimate", file, "--kubeconfig=" + admin_kubeconfig_path(), "--pricing-policy=" + ns,
                    "--node-selector=" + fleet_node_selector(), "-o", "json"},
                   ::testing::TempDir() + "/valleyctl-estimate-dra-" + ns + ".log");
  ASSERT_EQ(run.wait(30s), 0) << run.output();
  const json out = json::parse(run.output());
  EXPECT_NE(out.value("basis", "").find("at 1.50"), std::string::npos) << out.dump(2);
}

// valleyctl capacity shows the DRA GPUs beside the device plugin's, with their product and price,
// and what a running gang leaves free.
TEST_F(DraTest, ValleyctlCapacityShowsDraGpusByProductWithTheirPriceAndWhatIsFree) {
  apply(gang(3), "three");
  ASSERT_TRUE(wait_phase("Running", 60s, "three")) << task("three").dump(2);
  ChildProcess run({binary("valleyctl"), "capacity", "--kubeconfig=" + admin_kubeconfig_path(), "--pricing-policy=" + ns,
                    "--node-selector=" + fleet_node_selector(), "-o", "json"},
                   ::testing::TempDir() + "/valleyctl-capacity-dra-" + ns + ".log");
  ASSERT_EQ(run.wait(30s), 0) << run.output();
  json dra;
  for (const auto& row : json::parse(run.output()))
    if (row.value("kind", "") == "dra") dra = row;
  ASSERT_TRUE(dra.is_object()) << run.output();
  EXPECT_EQ(dra.value("product", ""), "NVIDIA-H100-80GB");
  EXPECT_EQ(dra.value("gpus", ""), "4");
  EXPECT_EQ(dra.value("free", ""), "1") << "the gang's three workers hold three of the four";
  EXPECT_EQ(dra.value("gpuHour", ""), "1.50");
}

// The DeviceClass Valley is told to claim from selects no device (a driver reinstalled with other
// attributes, a class edited by hand): kube-scheduler cannot allocate the claims of the workers
// pinned to the DRA node. The task is not wedged there: the refusal, in the scheduler's words,
// moves the gang to GPUs that take it.
class DraClassMatchingNothingTest : public DraTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    auto flags = DraTest::operator_flags();
    flags.push_back(std::string("--dra-drivers=") + kDriver + "=nvidia:" + ns + "-nothing");
    return flags;
  }
};

TEST_F(DraClassMatchingNothingTest, AClaimTheSchedulerCannotAllocateMovesTheGangInsteadOfWedgingIt) {
  own(kDeviceClasses, {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "DeviceClass"},
                       {"metadata", {{"name", ns + "-nothing"}}},
                       {"spec", {{"selectors", json::array({{{"cel", {{"expression", "device.driver == \"none.example.com\""}}}}})}}}});
  apply(gang(2), "moved");
  ASSERT_TRUE(wait_phase("Running", 90s, "moved")) << task("moved").dump(2) << operator_log();
  for (const auto& p : workers("moved")) EXPECT_EQ(p["spec"].value("nodeName", ""), plugin_node());
  EXPECT_NE(operator_log().find("planning around it"), std::string::npos) << operator_log();
}

}  // namespace
}  // namespace valley::e2e
