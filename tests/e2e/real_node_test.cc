// End to end on the real node (tests/cluster/node.bash, `make node-up`): Valley's pods in real
// containers under a real kubelet and containerd, real OpenMPI over sshd between pods, checkpoints
// in a real S3 store (versitygw) the pods reach over the node's bridge. Label "real".
//
// The node's GPUs are simulated (an extended resource with no device behind it): there is no GPU
// on this machine. Everything else is real.
#include <cstdio>

#include "operator/kube/timefmt.h"
#include "operator/storage/checkpoint_record.h"
#include "tests/e2e/task_fixture.h"
#include "tests/storage/versitygw.h"

namespace valley::e2e {
namespace {

using kube::resources::kNodes;
using kube::resources::kPricingPolicies;
using kube::resources::kSecrets;

constexpr const char* kRealNode = "valley-node-0";
constexpr const char* kNodeIp = "10.244.0.1";  // node.bash: the node's InternalIP on its bridge
constexpr const char* kTrainImage = "valley.local/valley-train:dev";

class RealNodeTest : public TaskTest {
 protected:
  void SetUp() override {
    TaskTest::SetUp();
    json node;
    try {
      node = admin->get(kNodes, "", kRealNode);
    } catch (const std::exception& e) {
      GTEST_FAIL() << "no real node (" << e.what() << "): run tests/cluster/cluster.sh node-up";
    }
    bool ready = false;
    for (const auto& c : node["status"].value("conditions", json::array()))
      if (c["type"] == "Ready") ready = c["status"] == "True";
    ASSERT_TRUE(ready) << "node " << kRealNode << " is not Ready: " << node["status"].dump(2);
    s3_ = std::make_unique<testing::VersityGw>(kNodeIp);
    json secret = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "s3-creds"}}}, {"stringData", s3_->env()}};
    admin->create(kSecrets, ns, secret);
  }
  void TearDown() override {
    TaskTest::TearDown();
    s3_.reset();
  }
  std::vector<std::string> operator_flags() const override {
    return {"--pricing-policy=" + ns, "--cost-interval=1s", "--cost-settle=2s", "--planner-min-resize-interval=2s"};
  }

  // A pod template that runs on the real node only, with the locally built image (no registry).
  static json on_real_node() {
    return {{"spec",
             {{"nodeSelector", {{"valley.dev/real-node", "true"}}},
              {"tolerations", json::array({{{"key", "valley.dev/real-node"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})},
              {"containers", json::array({{{"name", "main"}, {"imagePullPolicy", "Never"}}})}}}};
  }
  // valley-train under mpirun over the workers Valley lists in the hostfile; checkpoints in S3.
  json mpi_train_spec(int workers, int steps, int checkpoint_every, int step_delay_ms) {
    const std::string train = "valley-train --steps " + std::to_string(steps) + " --checkpoint-every " +
                              std::to_string(checkpoint_every) + " --step-delay-ms " + std::to_string(step_delay_ms);
    return {{"taskType", "MPI"},
            {"replicas", {{"min", workers}, {"max", workers}}},
            {"master",
             {{"image", kTrainImage},
              {"command",
               {"sh", "-c",
                "exec mpirun -np \"$VALLEY_WORLD_SIZE\" -x VALLEY_CHECKPOINT_URI -x VALLEY_EPOCH -x VALLEY_RESUME "
                "-x AWS_ACCESS_KEY_ID -x AWS_SECRET_ACCESS_KEY -x AWS_REGION -x AWS_ENDPOINT_URL " +
                    train}},
              {"template", on_real_node()}}},
            {"worker", {{"image", kTrainImage}, {"gpus", "1"}, {"slotsPerWorker", 1}, {"template", on_real_node()}}},
            {"checkpoint", {{"uri", "s3://" + std::string(testing::VersityGw::kBucket) + "/" + ns + "/"}, {"secretRef", {{"name", "s3-creds"}}}}},
            {"runPolicy", {{"backoffLimit", 2}}}};
  }
  std::optional<storage::CheckpointRecord> latest_checkpoint() {
    std::string text, error;
    try {
      auto got = s3_->store(ns)->get(storage::kLatestKey);
      if (!got) return std::nullopt;
      text = *got;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    return storage::parse_checkpoint_record(text, &error);
  }
  // The pod's container ran in a real runtime (kwok reports no container IDs).
  static std::string container_id(const json& pod) {
    for (const auto& s : pod["status"].value("containerStatuses", json::array())) return s.value("containerID", "");
    return "";
  }
  std::string pod_log(const std::string& pod) {
    ChildProcess logs({VALLEY_SOURCE_DIR "/.valley/bin/kubectl", "--kubeconfig=" + admin_kubeconfig_path(), "-n", ns, "logs", pod},
                      ::testing::TempDir() + "/kubectl-logs-" + pod + ".log");
    logs.wait(20s);
    return logs.output();
  }
  std::string describe_pods() {
    std::string out;
    for (const auto& p : pods()) out += p["metadata"]["name"].get<std::string>() + ": " + p["status"].dump() + "\n";
    return out;
  }

  std::unique_ptr<testing::VersityGw> s3_;
};

TEST_F(RealNodeTest, AnMpiTaskTrainsOnRealPodsCheckpointsToS3AndSucceeds) {
  const auto submitted = std::chrono::steady_clock::now();
  apply(mpi_train_spec(2, 300, 100, 10));
  ASSERT_TRUE(wait_phase("Running", 180s)) << task().dump(2) << describe_pods() << operator_log();
  const double to_running = std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  ASSERT_TRUE(wait_phase("Succeeded", 300s)) << task().dump(2) << describe_pods() << operator_log();
  const double to_done = std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  std::printf("real node: submitted -> Running %.1f s, -> Succeeded %.1f s\n", to_running, to_done);

  // The launcher really ran mpirun over both workers, and training finished at world size 2.
  json launcher = admin->get(kPods, ns, "job-launcher");
  EXPECT_EQ(launcher["spec"].value("nodeName", ""), kRealNode);
  EXPECT_EQ(container_id(launcher).rfind("containerd://", 0), 0u) << launcher["status"].dump(2);
  const std::string log = pod_log("job-launcher");
  EXPECT_NE(log.find("done step=300"), std::string::npos) << log;
  EXPECT_NE(log.find("world=2"), std::string::npos) << log;
  // Its checkpoints are in the store: the last one at the final step, written at world size 2.
  auto latest = latest_checkpoint();
  ASSERT_TRUE(latest) << "no checkpoint record in S3";
  EXPECT_EQ(latest->step, 300);
  EXPECT_EQ(latest->world_size, 2);
}

}  // namespace
}  // namespace valley::e2e
