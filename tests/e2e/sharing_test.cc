// GPUs shared through MPS end to end: a kwok node labelled as the NVIDIA device plugin labels an
// MPS-sharing node (nvidia.com/gpu.sharing-strategy=mps, 4 replicas a GPU, 8 nvidia.com/gpu.shared:
// simulated, labels and capacity only) beside a node of whole GPUs. Fractions that fit in a replica
// pack onto it by share, priced by that share; a pod of someone else's on it is counted; nothing
// overbooks. Tasks that allow sharing pair on a GPU split two ways when their measured pair pays.
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
  // The operator decides it waits (the plan ran), and says why.
  EXPECT_TRUE(eventually([&] {
    const json st = task("more").value("status", json::object());
    return st.value("reason", "") == "Waiting" && st.value("message", "").find("InsufficientCapacity") != std::string::npos;
  }, 30s)) << task("more").dump(2);
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

// Tasks that allow sharing, on a kwok node time-sliced two ways (nvidia.com/gpu.replicas=2, 2 x
// nvidia.com/gpu.shared: one A100, simulated) beside a node of whole GPUs that costs more per hour
// of their work: the PricingPolicy's measured pairs pay for both, so both reduceCost tasks run on
// the one GPU and each is charged half of it; a third whose pair with them does not pay stays off
// it, on a whole GPU.
class PairSharingTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    pool_ = own_pool();
    own_policy(json::parse(R"({"currency":"USD","gpu":[{"match":{"vendor":"nvidia"},"onDemand":"2.00"}],
      "sharing":{"pairs":[{"profiles":["resnet18","lm"],"rates":["0.76","1.0"]},{"profiles":["resnet50","lm"],"rates":["0.41","0.36"]},
                          {"profiles":["resnet50","resnet18"],"rates":["0.32","0.45"]}]}})"));
    own(kNodes, kwok_gpu_node(shared_node(), {{"valley.dev/pool", pool_}, {"nvidia.com/gpu.sharing-strategy", "time-slicing"}, {"nvidia.com/gpu.replicas", "2"},
                                              {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-SHARED"}},
                              2, "nvidia.com/gpu.shared"));
    own(kNodes, kwok_gpu_node(whole_node(), {{"valley.dev/pool", pool_}}, 1));
    start_operator();
  }
  std::string shared_node() const { return pool_ + "-ts2"; }
  std::string whole_node() const { return pool_ + "-whole"; }
  json sharer(const std::string& profile) {
    json spec = mpi_spec(1, 1);
    spec["reduceCost"] = true;
    spec["worker"]["sharing"] = {{"allowed", true}, {"profile", profile}};
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", pool_}}}}}};
    return spec;
  }
  std::string pool_;
};

TEST_F(PairSharingTest, TwoTasksWhosePairPaysShareOneGpuAndEachIsChargedHalfOfIt) {
  apply(sharer("resnet18"), "a");
  ASSERT_TRUE(wait_phase("Running", 60s, "a")) << task("a").dump(2);
  apply(sharer("lm"), "b");
  ASSERT_TRUE(wait_phase("Running", 60s, "b")) << task("b").dump(2);
  for (const char* name : {"a", "b"}) {
    const auto w = workers(name);
    ASSERT_EQ(w.size(), 1u) << name;
    EXPECT_EQ(w[0]["spec"].value("nodeName", ""), shared_node()) << name;
    EXPECT_EQ(w[0]["spec"]["containers"][0]["resources"]["limits"], json::parse(R"({"nvidia.com/gpu.shared":"1"})")) << w[0]["spec"].dump();
  }
  // resnet50 pairs with neither: the whole GPU, though dearer.
  apply(sharer("resnet50"), "c");
  ASSERT_TRUE(wait_phase("Running", 60s, "c")) << task("c").dump(2);
  EXPECT_EQ(workers("c").at(0)["spec"].value("nodeName", ""), whole_node());
  // Each sharing worker is charged half of the A100's 2.00 a GPU-hour; the one alone a whole one.
  auto charged = [&](const std::string& name, int share) {
    return eventually([&] {
      for (const auto& e : cost(name).value("ledger", json::array()))
        if (e.value("shareMilli", 0) == share && e.value("gpuPerHourMicros", 0) == 2'000'000) return true;
      return false;
    }, 30s);
  };
  EXPECT_TRUE(charged("a", 500)) << task("a")["status"].dump(2);
  EXPECT_TRUE(charged("b", 500)) << task("b")["status"].dump(2);
  EXPECT_TRUE(charged("c", 1000)) << task("c")["status"].dump(2);
}

}  // namespace
}  // namespace valley::e2e
