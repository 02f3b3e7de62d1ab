// The whole operator's loops running on the in-memory API server (Controllers::run: the cache's
// watches, the queues, the planning loop, the reconcilers), with this test as the scheduler and
// the kubelets: a task is admitted, its pods are bound and run, its launcher succeeds, and the task
// ends Succeeded, priced, with every pod released.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "controllers/task/controllers.h"
#include "operator/kube/events.h"
#include "controllers/api/pod.h"
#include "tests/unit/support/fake_api.h"
#include "tests/unit/support/loops_support.h"

namespace valley::task {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace res = kube::resources;

using testing::eventually;

// What kube-scheduler and the kubelet do for each pod not yet bound: bind it where it is pinned (a
// pod Valley does not pin, the launcher, to `any_node`) and run it.
void schedule_and_run(testing::FakeApi& api, const std::string& ns, const std::string& any_node) {
  for (const auto& p : api.objects("pods", ns)) {
    const std::string name = p["metadata"]["name"];
    if (!p["spec"].contains("nodeName")) {
      const std::string pinned = api::pinned_node(p), node = pinned.empty() ? any_node : pinned;
      api.patch(res::kPods, ns, name, kube::PatchType::Merge, {{"spec", {{"nodeName", node}}}});
      const std::string since = kube::format_time(std::chrono::system_clock::now() - 60s);
      json running = {{"phase", "Running"},
                      {"startTime", since},
                      {"conditions", {{{"type", "PodScheduled"}, {"status", "True"}}, {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", since}}}},
                      {"containerStatuses", json::array()}};
      for (const auto& c : p["spec"]["containers"])
        running["containerStatuses"].push_back({{"name", c["name"]}, {"ready", true}, {"state", {{"running", {{"startedAt", since}}}}}});
      api.patch(res::kPods, ns, name, kube::PatchType::Merge, {{"status", running}}, "status");
    }
  }
}

// What the kubelet does for a pod deleted (its grace period over): stops its containers.
void stop_deleted(testing::FakeApi& api, const std::string& ns) {
  for (const auto& p : api.objects("pods", ns)) {
    const std::string phase = p.value("status", json::object()).value("phase", "");
    if (!p["metadata"].contains("deletionTimestamp") || phase == "Succeeded" || phase == "Failed") continue;
    json statuses = json::array();
    for (const auto& c : p["spec"]["containers"])
      statuses.push_back({{"name", c["name"]},
                          {"state", {{"terminated", {{"exitCode", 137}, {"reason", "Error"},
                                                     {"finishedAt", kube::format_time(std::chrono::system_clock::now())}}}}}});
    try {
      api.patch(res::kPods, ns, p["metadata"]["name"], kube::PatchType::Merge, {{"status", {{"phase", "Failed"}, {"containerStatuses", statuses}}}}, "status");
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 404) throw;  // released and collected meanwhile
    }
  }
}

// Controllers::run on a thread of its own, stopped and joined however the test ends (an ASSERT
// returning early must not leave a joinable thread behind).
class Running {
 public:
  explicit Running(Controllers& c) : thread_([this, &c] { c.run(stop_); }) {}
  ~Running() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void launcher_succeeds(testing::FakeApi& api, const std::string& ns, const std::string& launcher) {
  const json p = api.get(res::kPods, ns, launcher);
  json statuses = json::array();
  for (const auto& c : p["spec"]["containers"])
    statuses.push_back({{"name", c["name"]},
                        {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"},
                                                   {"startedAt", kube::format_time(std::chrono::system_clock::now() - 60s)},
                                                   {"finishedAt", kube::format_time(std::chrono::system_clock::now())}}}}}});
  api.patch(res::kPods, ns, launcher, kube::PatchType::Merge, {{"status", {{"phase", "Succeeded"}, {"containerStatuses", statuses}}}}, "status");
}

TEST(ControllersRun, ATaskIsAdmittedRunsAndSucceedsPricedWithEveryPodReleased) {
  testing::FakeApi api;
  for (const char* n : {"team", "valley-system"}) api.create(res::kNamespaces, "", {{"metadata", {{"name", n}}}});
  api.create(res::kNodes, "", testing::gpu_node("a100-0", 8));
  api.create(res::kPricingPolicies, "", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", "default"}}},
                                         {"spec", json::parse(R"({"gpu":[{"onDemand":"3.60"}]})")}});
  ControllerOptions options;
  options.ownership_namespace = "valley-system";
  options.cost_interval = std::chrono::seconds(1);
  kube::EventRecorder events(api, kube::EventOptions{});
  Controllers controllers(api, events, options);
  Running loops(controllers);
  ASSERT_TRUE(eventually([&] { return controllers.running(); }, 10s));

  api.create(res::kTrainingTasks, "team", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", "job"}}},
                                           {"spec", {{"taskType", "MPI"}, {"replicas", {{"min", 2}, {"max", 2}}},
                                                     {"master", {{"image", "launcher:1"}}}, {"worker", {{"image", "worker:1"}, {"gpus", "1"}}}}}});
  auto phase = [&] { return api.get(res::kTrainingTasks, "team", "job").value("status", json::object()).value("phase", ""); };
  EXPECT_TRUE(eventually([&] { return api.objects("pods", "team").size() == 3; }, 10s)) << api.objects("pods", "team").size() << " pods";
  schedule_and_run(api, "team", "a100-0");
  EXPECT_TRUE(eventually([&] { return phase() == "Running"; }, 10s)) << api.get(res::kTrainingTasks, "team", "job").dump(2);
  launcher_succeeds(api, "team", "job-launcher");
  EXPECT_TRUE(eventually([&] { return phase() == "Succeeded"; }, 10s)) << api.get(res::kTrainingTasks, "team", "job").dump(2);
  // Its workers are deleted; once their kubelets stopped them they are priced to the end and
  // released (no accounting finalizer left, so they go), and the task's cost is final.
  EXPECT_TRUE(eventually([&] {
    stop_deleted(api, "team");
    const json cost = api.get(res::kTrainingTasks, "team", "job")["status"].value("cost", json::object());
    if (!cost.contains("final")) return false;
    for (const auto& p : api.objects("pods", "team"))
      if (!p["metadata"].value("finalizers", json::array()).empty()) return false;
    return api.objects("pods", "team").size() == 1;  // the launcher stays, Completed
  }, 15s)) << api.get(res::kTrainingTasks, "team", "job")["status"].value("cost", json::object()).dump(2) << json(api.objects("pods", "team")).dump(2);
}

// An operator of one namespace (--namespace) runs only its tasks: another namespace's task gets
// nothing made for it, the GPUs its pods hold are counted as taken, and its pods, even once their
// task is gone, are left to whatever runs there (never released or deleted).
TEST(ControllersRun, AnOperatorOfOneNamespaceLeavesAnotherNamespacesTasksAndPodsAlone) {
  testing::FakeApi api;
  for (const char* n : {"ours", "theirs", "valley-system"}) api.create(res::kNamespaces, "", {{"metadata", {{"name", n}}}});
  api.create(res::kNodes, "", testing::gpu_node("a100-0", 8));
  auto mpi = [](int min, int max) {
    return json{{"taskType", "MPI"}, {"replicas", {{"min", min}, {"max", max}}}, {"master", {{"image", "launcher:1"}}}, {"worker", {{"image", "worker:1"}, {"gpus", "1"}}}};
  };
  auto task = [&](const std::string& ns, const std::string& name, const json& spec) {
    return api.create(res::kTrainingTasks, ns, {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  };
  // Another instance's task and its running worker, holding 4 of the node's 8 GPUs.
  const json other = task("theirs", "job", mpi(2, 2));
  api.create(res::kPods, "theirs",
             {{"metadata", {{"name", "job-worker-0"}, {"finalizers", {"valley.dev/accounting"}},
                            {"labels", {{"app.kubernetes.io/managed-by", "valley"}, {"valley.dev/task", "job"}, {"valley.dev/role", "worker"}}},
                            {"ownerReferences", {{{"uid", other["metadata"]["uid"]}, {"kind", "TrainingTask"}, {"name", "job"}}}}}},
              {"spec", {{"nodeName", "a100-0"}, {"containers", {{{"name", "w"}, {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}}}}},
              {"status", {{"phase", "Running"}}}});
  ControllerOptions options;
  options.watch_namespace = "ours";
  options.ownership_namespace = "valley-system";
  kube::EventRecorder events(api, kube::EventOptions{});
  Controllers controllers(api, events, options);
  Running loops(controllers);
  ASSERT_TRUE(eventually([&] { return controllers.running(); }, 10s));

  task("ours", "job", mpi(2, 8));
  ASSERT_TRUE(eventually([&] { return !api.objects("pods", "ours").empty(); }, 10s));
  const json ours = api.get(res::kTrainingTasks, "ours", "job");
  EXPECT_EQ(ours["status"].value("phase", ""), "Admitted") << ours["status"].dump(2);
  EXPECT_LE(ours["status"].value("epochReplicas", 0), 4) << "the other instance's 4 GPUs are taken";
  EXPECT_FALSE(api.get(res::kTrainingTasks, "theirs", "job").contains("status")) << "not ours to run";
  EXPECT_EQ(api.objects("pods", "theirs").size(), 1u) << "nothing made for their task";
  // Their task goes (the collector marks its pod deleted), then ours: once ours is settled, their
  // pod still holds its finalizer, for their own operator to release.
  api.remove(res::kTrainingTasks, "theirs", "job");
  api.remove(res::kTrainingTasks, "ours", "job");
  EXPECT_TRUE(eventually([&] {
    stop_deleted(api, "ours");
    return api.objects("pods", "ours").empty();
  }, 15s)) << api.objects("pods", "ours").size() << " of our pods left";
  const auto theirs = api.objects("pods", "theirs");
  ASSERT_EQ(theirs.size(), 1u);
  EXPECT_EQ(theirs[0]["metadata"].value("finalizers", json::array()), json::array({"valley.dev/accounting"}));
}

// An operator given --node-selector plans only on the nodes it selects: another pool's free GPUs
// are not in its cache, so a gang larger than its own nodes waits rather than spilling there.
TEST(ControllersRun, AnOperatorWithANodeSelectorPlansOnlyOnTheNodesItSelects) {
  testing::FakeApi api;
  for (const char* n : {"team", "valley-system"}) api.create(res::kNamespaces, "", {{"metadata", {{"name", n}}}});
  api.create(res::kNodes, "", testing::gpu_node("ours-0", 4, {{"pool", "ours"}}));
  api.create(res::kNodes, "", testing::gpu_node("theirs-0", 8, {{"pool", "theirs"}}));
  ControllerOptions options;
  options.node_selector = "pool=ours";
  options.node_requirements = *kube::parse_label_selector(options.node_selector);
  options.ownership_namespace = "valley-system";
  kube::EventRecorder events(api, kube::EventOptions{});
  Controllers controllers(api, events, options);
  Running loops(controllers);
  ASSERT_TRUE(eventually([&] { return controllers.running(); }, 10s));

  auto task = [&](const std::string& name, int workers) {
    api.create(res::kTrainingTasks, "team",
               {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", name}}},
                {"spec", {{"taskType", "MPI"}, {"replicas", {{"min", workers}, {"max", workers}}}, {"master", {{"image", "launcher:1"}}},
                          {"worker", {{"image", "worker:1"}, {"gpus", "1"}}}}}});
  };
  auto status = [&](const std::string& name) { return api.get(res::kTrainingTasks, "team", name).value("status", json::object()); };
  task("fits", 4);
  ASSERT_TRUE(eventually([&] { return status("fits").value("phase", "") == "Admitted"; }, 10s)) << status("fits").dump(2);
  for (const auto& p : api.objects("pods", "team")) {
    if (p["metadata"]["labels"].value("valley.dev/role", "") != "worker") continue;
    EXPECT_EQ(api::pinned_node(p), "ours-0") << p.dump(2);
  }
  task("larger", 6);
  ASSERT_TRUE(eventually([&] { return !status("larger").value("conditions", json::array()).empty(); }, 10s));
  EXPECT_EQ(status("larger").value("phase", ""), "Pending") << status("larger").dump(2);
  int larger_pods = 0;
  for (const auto& p : api.objects("pods", "team")) larger_pods += p["metadata"]["labels"].value("valley.dev/task", "") == "larger";
  EXPECT_EQ(larger_pods, 0) << "theirs-0's 8 free GPUs are not this operator's";
}

}  // namespace
}  // namespace valley::task
