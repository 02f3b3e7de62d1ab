// The real node's GPUs published through Dynamic Resource Allocation (label "real"): the upstream
// DRA example driver's kubelet plugin (node.bash) publishes 2 devices of gpu.example.com, and
// prepares a claim by writing a CDI spec that containerd applies to the container. Valley knows the
// driver only by its flag, as an NVIDIA one; its GPUs are simulated (there is no GPU here).
#include <set>

#include "tests/e2e/real_node_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kResourceClaims;

// Sets (or removes, with "") the node's nvidia.com/gpu: a node whose device plugin advertises GPUs
// is counted by those alone, so the DRA devices count only while it advertises none.
void set_device_plugin_gpus(const std::string& count) {
  const std::string patch =
      count.empty() ? R"([{"op":"remove","path":"/status/capacity/nvidia.com~1gpu"},{"op":"remove","path":"/status/allocatable/nvidia.com~1gpu"}])"
                    : R"([{"op":"add","path":"/status/capacity/nvidia.com~1gpu","value":")" + count + R"("}])";
  std::string out;
  ASSERT_EQ(kubectl({"patch", "node", kRealNode, "--subresource=status", "--type=json", "-p", patch}, &out), 0) << out;
}

std::string allocatable_gpus(kube::Client& admin) {
  return admin.get(kNodes, "", kRealNode)["status"]["allocatable"].value("nvidia.com/gpu", "");
}

class RealNodeDraTest : public RealNodeTest {
 protected:
  void SetUp() override {
    RealNodeTest::SetUp();
    if (HasFatalFailure()) return;
    gpus_ = allocatable_gpus(*admin);
    set_device_plugin_gpus("");
  }
  void TearDown() override {
    RealNodeTest::TearDown();
    if (gpus_.empty()) return;
    set_device_plugin_gpus(gpus_);
    EXPECT_TRUE(eventually([&] { return allocatable_gpus(*admin) == gpus_; }, 30s)) << "the node's nvidia.com/gpu did not come back";
  }
  std::vector<std::string> operator_flags() const override {
    auto flags = RealNodeTest::operator_flags();
    flags.push_back("--dra-drivers=gpu.example.com=nvidia");
    return flags;
  }
  std::string gpus_;  // the node's nvidia.com/gpu before the test
};

// GPU_DEVICE_<n>=<device> pairs in `text` (the example driver's CDI edits name each device given).
std::set<std::string> devices_named(const std::string& text) {
  std::set<std::string> out;
  static const std::regex device(R"(GPU_DEVICE_[0-9]+=(gpu-[0-9]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), device); it != std::sregex_iterator(); ++it) out.insert((*it)[1]);
  return out;
}

TEST_F(RealNodeDraTest, EachWorkersClaimIsPreparedByTheExampleDriverAndItsRanksSeeTheDeviceItWasGiven) {
  create_policy();
  json spec = mpi_train_spec(2, 2, 1, 10, 10, 10);
  // As a user names the devices: the driver's class, and the model its devices report.
  spec["worker"]["devices"] = {{"deviceClassName", "gpu.example.com"}, {"matchAttributes", {{"model", "LATEST-GPU-MODEL"}}}};
  // Each rank says what its worker was given, then the launcher stays a while so the test sees the
  // claims while the pods hold them.
  spec["master"]["command"] = {
      "sh", "-c",
      "mpirun -np \"$VALLEY_WORLD_SIZE\" sh -c 'echo \"rank $OMPI_COMM_WORLD_RANK on $(hostname): $(env | grep ^GPU_DEVICE_ | sort | tr \"\\n\" \" \")\"' "
      "&& sleep 20"};
  apply(spec);
  ASSERT_TRUE(wait_phase("Running", 180s)) << task().dump(2) << describe_pods() << operator_log();

  // Each worker asks through a claim from Valley's template; kube-scheduler allocated it on the
  // real node from the example driver's pool, one device to each.
  std::set<std::string> allocated;
  std::vector<json> ws;
  ASSERT_TRUE(eventually([&] { ws = workers(); return ws.size() == 2; }, 30s)) << describe_pods();
  for (const auto& w : ws) {
    const std::string name = w["metadata"]["name"];
    EXPECT_EQ(w["spec"].value("nodeName", ""), kRealNode) << name;
    EXPECT_TRUE(w["metadata"]["annotations"].contains("valley.dev/claimed-gpus")) << w["metadata"].dump(2);
    const json statuses = w["status"].value("resourceClaimStatuses", json::array());
    ASSERT_EQ(statuses.size(), 1u) << name << ": " << w["status"].dump(2);
    const json claim = admin->get(kResourceClaims, ns, statuses[0].value("resourceClaimName", ""));
    const json results = claim["status"]["allocation"]["devices"].value("results", json::array());
    ASSERT_EQ(results.size(), 1u) << claim.dump(2);
    EXPECT_EQ(results[0].value("driver", ""), "gpu.example.com");
    EXPECT_EQ(results[0].value("pool", ""), kRealNode);
    EXPECT_NE(claim["spec"].dump().find("LATEST-GPU-MODEL"), std::string::npos) << "the claim selects the model asked for: " << claim["spec"].dump(2);
    allocated.insert(results[0].value("device", ""));
    // What the worker's container was given, in its sshd's words.
    const std::string log = pod_log(name);
    EXPECT_EQ(devices_named(log), std::set<std::string>{results[0].value("device", "")}) << name << ": " << log;
  }
  EXPECT_EQ(allocated.size(), 2u) << "two workers were allocated one device";

  ASSERT_TRUE(wait_phase("Succeeded", 180s)) << task().dump(2) << describe_pods() << operator_log();
  // Each rank ran with its worker's device in its environment: both devices, one per rank.
  const std::string log = pod_log("job-launcher");
  std::printf("%s", log.c_str());
  EXPECT_EQ(devices_named(log), allocated) << log;
  // Priced as the node's A100s: the final cost is written once the pods have ended.
  ASSERT_TRUE(eventually([&] { return cost().contains("final"); }, 90s)) << task().dump(2);
  EXPECT_GT(cost().value("finalMicros", int64_t{0}), 0) << cost().dump(2);
}

}  // namespace
}  // namespace valley::e2e
