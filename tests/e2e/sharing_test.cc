// GPUs shared through MPS end to end: a kwok node labelled as the NVIDIA device plugin labels an
// MPS-sharing node (nvidia.com/gpu.sharing-strategy=mps, 4 replicas a GPU, 8 nvidia.com/gpu.shared:
// simulated, labels and capacity only) beside a node of whole GPUs. Fractions that fit in a replica
// pack onto it by share, priced by that share; a pod of someone else's on it is counted; nothing
// overbooks.
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kNodes;

class MpsTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    pool_ = own_pool();
    own_policy(json::parse(R"({"currency":"USD","gpu":[{"match":{"vendor":"nvidia"},"onDemand":"2.00","spot":"0.80"}]})"));
    own(kNodes, kwok_gpu_node(mps_node(), {{"valley.dev/pool", pool_}, {"nvidia.com/gpu.sharing-strategy", "mps"}, {"nvidia.com/gpu.replicas", "4"},
                                           {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-SHARED"}},
                              8, "nvidia.com/gpu.shared"));
    own(kNodes, kwok_gpu_node(whole_node(), {{"valley.dev/pool", pool_}}, 2));
    start_operator();
  }
  std::string mps_node() const { return pool_ + "-mps"; }
  std::string whole_node() const { return pool_ + "-whole"; }
  json gang(int workers, const std::string& gpus) {
    json spec = mpi_spec(workers, workers);
    spec["worker"]["gpus"] = gpus;
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", pool_}}}}}};
    return spec;
  }
  std::string pool_;
};

TEST_F(MpsTest, QuarterGpuWorkersPackOntoMpsReplicasPricedByTheirShareAndNothingOverbooks) {
  // Someone else's pod holds 2 of the 8 replicas.
  admin->create(kPods, ns,
                {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "theirs"}}},
                 {"spec", {{"nodeName", mps_node()},
                           {"containers", json::array({{{"name", "c"}, {"image", "busybox"}, {"resources", {{"limits", {{"nvidia.com/gpu.shared", "2"}}}}}}})}}}});
  apply(gang(4, "0.25"), "quarters");
  ASSERT_TRUE(wait_phase("Running", 60s, "quarters")) << task("quarters").dump(2);
  for (const auto& p : workers("quarters")) {
    EXPECT_EQ(p["spec"].value("nodeName", ""), mps_node());
    EXPECT_EQ(p["spec"]["containers"][0]["resources"]["limits"], json::parse(R"({"nvidia.com/gpu.shared":"1"})")) << p["spec"].dump();
    EXPECT_EQ(p["metadata"]["annotations"].value("valley.dev/mps-replicas", ""), "4");
  }
  // Half a GPU is more than a replica: a whole GPU on the other node.
  apply(gang(1, "0.5"), "half");
  ASSERT_TRUE(wait_phase("Running", 60s, "half")) << task("half").dump(2);
  EXPECT_EQ(workers("half").at(0)["spec"].value("nodeName", ""), whole_node());
  // Two replicas and one whole GPU are left: four more quarters do not fit as one gang.
  apply(gang(4, "0.25"), "more");
  std::this_thread::sleep_for(10s);  // several plans
  EXPECT_NE(phase("more"), "Running");
  EXPECT_TRUE(workers("more").empty()) << "a gang that fits nowhere creates no pod";
  // Each quarter worker is charged a quarter of the A100's 2.00 a GPU-hour.
  EXPECT_TRUE(eventually([&] {
    int quarters = 0;
    for (const auto& e : cost("quarters").value("ledger", json::array()))
      quarters += e.value("shareMilli", 0) == 250 && e.value("gpuPerHourMicros", 0) == 2'000'000;
    return quarters == 4;
  }, 30s)) << task("quarters")["status"].dump(2);
}

}  // namespace
}  // namespace valley::e2e
