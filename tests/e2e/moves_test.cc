// A running task moved to cheaper capacity end to end: two kwok nodes of the test's own pool, one
// on demand (2.00 a GPU-hour) and one spot (0.80), the spot one cordoned while the task starts, so
// it runs on demand. Uncordoned, the spot node is free and cheaper: the plan moves the task there
// at its size, its running epoch checkpoints and the next starts on spot, charged the spot price.
#include <chrono>
#include <set>
#include <thread>

#include "tests/e2e/task_fixture.h"
#include "tests/storage/versitygw.h"

namespace valley::e2e {
namespace {

using kube::resources::kNodes;
using kube::resources::kSecrets;

class MoveTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    gw_ = std::make_unique<testing::VersityGw>();
    pool_ = own_pool();
    own_policy(json::parse(R"({"currency":"USD","gpu":[{"match":{"vendor":"nvidia"},"onDemand":"2.00","spot":"0.80"}]})"));
    own(kNodes, kwok_gpu_node(pool_ + "-od", {{"valley.dev/pool", pool_}}, 8));
    json spot = kwok_gpu_node(pool_ + "-spot", {{"valley.dev/pool", pool_}, {"karpenter.sh/capacity-type", "spot"}}, 8);
    spot["spec"]["unschedulable"] = true;
    own(kNodes, spot);
    json secret = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "ckpt-creds"}}}, {"stringData", json::object()}};
    for (const auto& [k, v] : gw_->env()) secret["stringData"][k] = v;
    admin->create(kSecrets, ns, secret);
    start_operator();
  }
  std::vector<std::string> operator_flags() const override {
    auto flags = TaskTest::operator_flags();
    flags.push_back("--cost-interval=1s");
    return flags;
  }
  void TearDown() override {
    TaskTest::TearDown();
    gw_.reset();
  }
  // Two workers of 2 GPUs, checkpointing to S3, expected to run two hours.
  json spec() {
    json s = mpi_spec(2, 2);
    s["worker"]["gpus"] = "2";
    s["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", pool_}}}}}};
    s["checkpoint"] = {{"uri", std::string("s3://") + testing::VersityGw::kBucket + "/" + ns + "/job"},
                       {"secretRef", {{"name", "ckpt-creds"}}},
                       {"gracePeriodSeconds", 30}};
    s["runPolicy"] = {{"backoffLimit", 0}};
    s["estimatedDuration"] = "2h";
    return s;
  }
  std::set<std::string> worker_nodes() {
    std::set<std::string> out;
    for (const auto& p : workers())
      if (!p["metadata"].contains("deletionTimestamp")) out.insert(p["spec"].value("nodeName", ""));
    return out;
  }
  json status() { return task().value("status", json::object()); }

  std::unique_ptr<testing::VersityGw> gw_;
  std::string pool_;
};

TEST_F(MoveTest, ARunningTaskMovesToFreeSpotCapacityAtItsSizeFromItsCheckpointAndPaysTheSpotPrice) {
  apply(spec());
  ASSERT_TRUE(wait_phase("Running")) << status().dump(2) << operator_log();
  ASSERT_EQ(worker_nodes(), std::set<std::string>{pool_ + "-od"});
  ASSERT_EQ(status()["epoch"], 1);

  admin->patch(kNodes, "", pool_ + "-spot", kube::PatchType::Merge, {{"spec", {{"unschedulable", false}}}});
  bool failed = false;
  ASSERT_TRUE(eventually([&] {
    json st = status();
    failed |= st.value("phase", "") == "Failed";
    return failed || (st.value("phase", "") == "Running" && st.value("epoch", 0) == 2 &&
                      worker_nodes() == std::set<std::string>{pool_ + "-spot"});
  }, 90s)) << status().dump(2) << operator_log();
  ASSERT_FALSE(failed) << status().dump(2);
  json st = status();
  EXPECT_EQ(st["epochReplicas"], 2);
  const json restarts = st.value("restarts", json::object());
  EXPECT_EQ(restarts.value("moves", 0), 1) << st.dump(2);
  EXPECT_EQ(restarts.value("total", 0), 1) << st.dump(2);
  EXPECT_TRUE(has_event("\nMoving: moving 2 workers as epoch 2 (moving to cheaper capacity: 0.8000/GPU-h instead of 2.0000"))
      << events_text();
  // The new epoch resumes from the checkpoint.
  for (const auto& p : workers()) {
    if (p["metadata"]["labels"].value("valley.dev/epoch", "") != "2") continue;
    bool resumes = false;
    for (const auto& e : p["spec"]["containers"][0]["env"]) resumes |= e["name"] == "VALLEY_RESUME" && e["value"] == "1";
    EXPECT_TRUE(resumes) << p["spec"].dump();
  }
  // Its GPU time on spot is accrued beside what it ran on demand, at the spot price.
  EXPECT_TRUE(eventually([&] {
    for (const auto& e : cost().value("ledger", json::array()))
      if (e.value("gpuPerHourMicros", 0) == 800'000) return cost()["breakdown"]["gpuMilliSeconds"].contains("nvidia/spot");
    return false;
  }, 30s)) << cost().dump(2);
  // Where it is now is the cheapest: it stays.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(status()["epoch"], 2) << status().dump(2);
}

}  // namespace
}  // namespace valley::e2e
