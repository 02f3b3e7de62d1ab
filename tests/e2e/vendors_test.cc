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

}  // namespace
}  // namespace valley::e2e
