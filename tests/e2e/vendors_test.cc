// A third GPU vendor end to end: an Intel kwok node (gpu.intel.com/i915, as Intel's device plugin
// advertises it; simulated, labels and capacity only) beside an NVIDIA one, priced by a PricingPolicy
// of the test's own. A task that lists intel lands there when it is cheaper, with its Intel image;
// one that does not never does.
#include <set>

#include "operator/kube/error.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kNodes;

class VendorsTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    pool_ = own_pool();
    own_policy(json::parse(R"({"currency":"USD","gpu":[{"match":{"vendor":"intel"},"onDemand":"1.20","spot":"0.50"},
                                            {"match":{"vendor":"nvidia"},"onDemand":"2.40","spot":"0.95"}]})"));
    own(kNodes, kwok_gpu_node(pool_ + "-nvidia", {{"valley.dev/pool", pool_}}, 8));
    own(kNodes, kwok_gpu_node(pool_ + "-intel", {{"valley.dev/pool", pool_}, {"gpu.intel.com/product", "Max_1550"}}, 8,
                              "gpu.intel.com/i915"));
    start_operator();
  }
  json gang(int workers, const json& vendors = nullptr) {
    json spec = mpi_spec(workers, workers);
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", pool_}}}}}};
    if (!vendors.is_null()) {
      spec["vendors"] = vendors;
      spec["worker"]["vendorImages"] = {{"intel", "valley.dev/examples/worker-xpu:1"}};
    }
    return spec;
  }
  std::string pool_;
};

TEST_F(VendorsTest, ATaskListingIntelRunsThereWhenCheaperAndOthersNever) {
  apply(gang(4, {"nvidia", "intel"}), "portable");
  ASSERT_TRUE(wait_phase("Running", 60s, "portable")) << task("portable").dump(2);
  for (const auto& p : workers("portable")) {
    EXPECT_EQ(p["spec"].value("nodeName", ""), pool_ + "-intel");
    const json& c = p["spec"]["containers"][0];
    EXPECT_EQ(c.value("image", ""), "valley.dev/examples/worker-xpu:1");
    EXPECT_EQ(c["resources"]["limits"].value("gpu.intel.com/i915", ""), "1") << c.dump();
  }
  // NVIDIA only, with Intel GPUs still free: the NVIDIA node.
  apply(gang(2), "cuda");
  ASSERT_TRUE(wait_phase("Running", 60s, "cuda")) << task("cuda").dump(2);
  for (const auto& p : workers("cuda")) {
    EXPECT_EQ(p["spec"].value("nodeName", ""), pool_ + "-nvidia");
    EXPECT_EQ(p["spec"]["containers"][0].value("image", ""), "valley.dev/examples/worker:1");
  }
  // Priced at the Intel rate: each worker's ledger entry.
  EXPECT_TRUE(eventually([&] {
    int intel = 0;
    for (const auto& e : task("portable").value("status", json::object()).value("cost", json::object()).value("ledger", json::array()))
      intel += e.value("vendor", "") == "intel" && e.value("gpuPerHourMicros", 0) == 1'200'000 && e.value("product", "") == "Max_1550";
    return intel == 4;
  }, 30s)) << task("portable")["status"].dump(2);
}

// The default kwok fleet's Intel GPUs (tests/cluster/profiles/default.yaml): four Max 1550 through
// Intel's device plugin and four Max 1100 that only Intel's DRA driver publishes (its ResourceSlice
// written by nodegen from the profile: a simulated driver). A task listing Intel goes to the
// cheaper Max 1100s, reaches them through claims kube-scheduler allocates from the profile's slice,
// and is priced by their product; a second gang takes the device plugin's Max 1550s.
class DefaultFleetIntelTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    own_policy(json::parse(R"({"currency":"USD","gpu":[
        {"match":{"vendor":"intel","product":"Intel-Data-Center-GPU-Max-1100"},"onDemand":"0.90","spot":"0.40"},
        {"match":{"vendor":"intel"},"onDemand":"1.20","spot":"0.50"},{"onDemand":"2.40","spot":"0.95"}]})"));
    start_operator();
  }
  static json intel_gang(int workers) {
    json spec = mpi_spec(workers, workers);
    spec["vendors"] = {"intel"};
    spec["worker"]["vendorImages"] = {{"intel", "valley.dev/examples/worker-xpu:1"}};
    return spec;
  }
};

TEST_F(DefaultFleetIntelTest, AnIntelTaskTakesTheProfilesDraGpusWhenCheapestThenTheDevicePluginsOnes) {
  apply(intel_gang(4), "dra");
  ASSERT_TRUE(wait_phase("Running", 60s, "dra")) << task("dra").dump(2) << operator_log();
  for (const auto& p : workers("dra")) {
    EXPECT_EQ(p["spec"].value("nodeName", ""), fleet_node("max1100-dra-0"));
    EXPECT_EQ(p["spec"]["containers"][0]["resources"]["claims"][0].value("name", ""), "gpus") << p["spec"].dump();
  }
  EXPECT_TRUE(eventually([&] {
    int allocated = 0;
    for (const auto& c : admin->list(kube::resources::kResourceClaims, ns).items)
      for (const auto& r : c.value("status", json::object()).value("allocation", json::object()).value("devices", json::object()).value("results", json::array()))
        allocated += r.value("driver", "") == "gpu.intel.com" && r.value("pool", "") == fleet_node("max1100-dra-0");
    return allocated == 4;
  }, 30s)) << "kube-scheduler allocated each worker's claim from the profile's slice";
  EXPECT_TRUE(eventually([&] {
    int priced = 0;
    for (const auto& e : task("dra").value("status", json::object()).value("cost", json::object()).value("ledger", json::array()))
      priced += e.value("vendor", "") == "intel" && e.value("gpuPerHourMicros", 0) == 900'000 &&
                e.value("product", "") == "Intel-Data-Center-GPU-Max-1100";
    return priced == 4;
  }, 30s)) << task("dra")["status"].dump(2);

  apply(intel_gang(2), "plugin");
  ASSERT_TRUE(wait_phase("Running", 60s, "plugin")) << task("plugin").dump(2);
  for (const auto& p : workers("plugin")) {
    EXPECT_EQ(p["spec"].value("nodeName", ""), fleet_node("max1550-od-0"));
    EXPECT_EQ(p["spec"]["containers"][0]["resources"]["limits"].value("gpu.intel.com/i915", ""), "1");
  }
}

}  // namespace
}  // namespace valley::e2e
