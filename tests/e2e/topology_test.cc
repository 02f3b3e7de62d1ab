// Topology-aware gangs end to end: two racks of two 8-GPU kwok nodes (labels only), labelled with
// the operator's default rack level (valley.dev/topology-rack). A gang lands in the rack that holds
// it, waits saying why when spec.topology requires a rack and none has room, and after a
// termination notice comes back inside one rack.
#include <chrono>
#include <set>

#include "operator/kube/error.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kNodes;

class TopologyTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    pool_ = own_pool();
    for (const char* rack : {"a", "b"})
      for (int i = 0; i < 2; ++i) {
        const std::string name = node(rack, i);
        own(kNodes, kwok_gpu_node(name, {{"valley.dev/pool", pool_}, {"valley.dev/topology-rack", std::string("rack-") + rack}}, 8));
      }
    ASSERT_TRUE(eventually([&] {
      kube::ListOptions lo;
      lo.label_selector = "valley.dev/pool=" + pool_;
      return admin->list(kNodes, "", lo).items.size() == 4;
    }, 30s));
    start_operator();
  }
  std::string node(const std::string& rack, int i) const { return pool_ + "-" + rack + "-" + std::to_string(i); }
  static std::string rack_of(const std::string& node) { return "rack-" + node.substr(node.size() - 3, 1); }

  // `workers` one-GPU workers on this test's nodes (`on` alone when given).
  json gang(int workers, const json& topology = nullptr, const std::string& on = "") {
    json spec = mpi_spec(workers, workers);
    json selector = {{"valley.dev/pool", pool_}};
    if (!on.empty()) selector["kubernetes.io/hostname"] = on;
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", selector}}}};
    if (!topology.is_null()) spec["topology"] = topology;
    return spec;
  }
  std::set<std::string> worker_racks(const std::string& task = "job") {
    std::set<std::string> racks;
    for (const auto& p : pods(task))
      if (p["metadata"]["labels"].value("valley.dev/role", "") == "worker" && !p["metadata"].contains("deletionTimestamp") &&
          !p["spec"].value("nodeName", "").empty())
        racks.insert(rack_of(p["spec"].value("nodeName", "")));
    return racks;
  }
  json status(const std::string& task = "job") { return this->task(task).value("status", json::object()); }
  bool message_says(const std::string& task, const std::string& words) {
    return eventually([&] { return status(task).value("message", "").find(words) != std::string::npos; }, 60s);
  }

  std::string pool_;
};

// rack-a has 12 GPUs free (a filler holds 4 of a-0), rack-b 16: the 16-worker gang that prefers one
// rack takes all of rack-b. (By fewest nodes alone it would take a-1 and one node of rack-b.)
TEST_F(TopologyTest, AGangLandsInTheOneRackThatHoldsIt) {
  apply(gang(4, nullptr, node("a", 0)), "filler");
  ASSERT_TRUE(wait_phase("Running", 60s, "filler")) << task("filler").dump(2);
  apply(gang(16, {{"preferred", "rack"}}));
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2);
  EXPECT_EQ(worker_racks(), std::set<std::string>{"rack-b"});
  EXPECT_TRUE(eventually([&] { return status().value("topology", json::object()).value("summary", "") == "rack rack-b"; }, 30s))
      << status().dump(2);
  EXPECT_EQ(events_text().find("SpreadWider"), std::string::npos) << events_text();
}

// Each rack has 12 free: a gang that requires one rack for 16 waits, saying so, and starts in the
// rack a filler leaves. A level the operator does not declare, and a gang larger than any rack,
// wait with a reason that says what is wrong.
TEST_F(TopologyTest, ARequiredRackWaitsSayingWhyUntilOneHasRoom) {
  apply(gang(4, nullptr, node("a", 0)), "filler-a");
  apply(gang(4, nullptr, node("b", 0)), "filler-b");
  ASSERT_TRUE(wait_phase("Running", 60s, "filler-a"));
  ASSERT_TRUE(wait_phase("Running", 60s, "filler-b"));
  apply(gang(16, {{"required", "rack"}}));
  apply(gang(2, {{"required", "blok"}}), "typo");
  apply(gang(20, {{"required", "rack"}}), "huge");
  EXPECT_TRUE(message_says("job", "topology: all in one rack (required), and no rack has room for them")) << status().dump(2);
  EXPECT_EQ(phase(), "Pending");
  EXPECT_TRUE(message_says("typo", "spec.topology names the level \"blok\", which the operator does not declare (its levels: clique, block, rack, zone)"))
      << status("typo").dump(2);
  EXPECT_EQ(status("typo").value("reason", ""), "Unplaceable");
  EXPECT_TRUE(message_says("huge", "needs 20 workers in one rack (spec.topology.required); the largest rack it may use")) << status("huge").dump(2);
  admin->remove(kube::resources::kTrainingTasks, ns, "filler-b");
  ASSERT_TRUE(wait_phase("Running", 90s)) << task().dump(2);
  EXPECT_EQ(worker_racks(), std::set<std::string>{"rack-b"});
}

// 12 workers in one rack (8 + 4). A termination notice on the node holding 8 leaves that rack 8
// GPUs: the gang restarts whole in the other rack, not split across both.
TEST_F(TopologyTest, AfterANoticeTheGangComesBackInsideOneRack) {
  apply(gang(12, {{"required", "rack"}}));
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2);
  const auto first = worker_racks();
  ASSERT_EQ(first.size(), 1u);
  std::map<std::string, int> per_node;
  for (const auto& p : pods())
    if (p["metadata"]["labels"].value("valley.dev/role", "") == "worker") ++per_node[p["spec"].value("nodeName", "")];
  std::string doomed;
  for (const auto& [n, count] : per_node)
    if (count == 8) doomed = n;
  ASSERT_FALSE(doomed.empty()) << "no node holds 8 of its workers";
  admin->patch(kNodes, "", doomed, kube::PatchType::Merge,
               {{"spec", {{"taints", {{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}}}}}});
  ASSERT_TRUE(eventually([&] {
    json st = status();
    return st.value("phase", "") == "Running" && st.value("epoch", 0) > 1;
  }, 90s)) << task().dump(2);
  const auto second = worker_racks();
  EXPECT_EQ(second.size(), 1u);
  EXPECT_NE(second, first);
  EXPECT_EQ(status()["lastDisruption"].value("cause", ""), "NodeNotice") << status().dump(2);
}

}  // namespace
}  // namespace valley::e2e
