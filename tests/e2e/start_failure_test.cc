// Tasks that cannot start, end to end on the local control plane: a worker no node can hold waits
// holding nothing; a pod that cannot pull its image (as a kubelet reports it: a status patch of a
// kwok pod) and a launcher kube-scheduler cannot place say why in the task, and after the start
// grace their GPUs go to the next task.
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

std::string status_field(const json& task, const char* field) { return task.value("status", json::object()).value(field, ""); }

json condition(const json& task, const std::string& type) {
  for (const auto& c : task.value("status", json::object()).value("conditions", json::array()))
    if (c.value("type", "") == type) return c;
  return nullptr;
}

// What a kubelet reports for a pod whose image cannot be pulled.
json image_pull_backoff(const std::string& container) {
  return {{"status",
           {{"phase", "Pending"},
            {"containerStatuses",
             json::array({{{"name", container},
                           {"ready", false},
                           {"restartCount", 0},
                           {"image", "valley-trian:dev"},
                           {"imageID", ""},
                           {"state", {{"waiting", {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image \"valley-trian:dev\""}}}}}}})}}}};
}

TEST_F(TaskTest, AWorkerLargerThanEveryNodeWaitsHoldingNothingAndSaysWhy) {
  wait_until_no_active_valley_work(*admin);
  json huge = mpi_spec(2, 2);
  huge["worker"]["resources"] = {{"requests", {{"cpu", "500"}}}};
  apply(huge, "hugecpu");
  ASSERT_TRUE(eventually([&] { return status_field(task("hugecpu"), "reason") == "Unplaceable"; }, 30s)) << task("hugecpu").dump(2);
  const json st = task("hugecpu")["status"];
  EXPECT_EQ(st.value("phase", ""), "Pending");
  EXPECT_NE(st.value("message", "").find("needs 500 CPUs per worker; the largest node it may use has 96"), std::string::npos) << st.dump(2);
  // It holds nothing: a task after it starts on the GPUs it would have taken.
  apply(mpi_spec(2, 2), "after");
  EXPECT_TRUE(wait_phase("Running", 60s, "after")) << task("after").dump(2);
  EXPECT_TRUE(pods("hugecpu").empty());
}

TEST_F(TaskTest, APodThatCannotPullItsImageSaysSoAndAfterTheGraceItsGpusGoToTheNextTask) {
  wait_until_no_active_valley_work(*admin);
  json typo = mpi_spec(20, 20);
  typo["runPolicy"] = {{"startGraceSeconds", 15}};
  // kwok would start the pods; a real kubelet would be pulling their image instead.
  typo["worker"]["template"] = {{"metadata", {{"annotations", {{"sim.valley.dev/start-delay", "1h"}}}}}};
  apply(typo, "typo");
  ASSERT_TRUE(eventually([&] {
    try {
      return !admin->get(kPods, ns, "typo-worker-0")["spec"].value("nodeName", "").empty();
    } catch (const std::exception&) {
      return false;
    }
  }, 60s)) << task("typo").dump(2);
  apply(mpi_spec(20, 20), "next");
  ASSERT_TRUE(eventually([&] { return status_field(task("next"), "reason") == "Waiting"; }, 30s)) << task("next").dump(2);

  admin->patch(kPods, ns, "typo-worker-0", kube::PatchType::Merge, image_pull_backoff("worker"), "status");
  ASSERT_TRUE(eventually([&] { return status_field(task("typo"), "reason") == "ImagePullFailed"; }, 30s)) << task("typo").dump(2);
  const json started = condition(task("typo"), "PodsStarted");
  ASSERT_TRUE(started.is_object());
  EXPECT_EQ(started.value("status", ""), "False");
  EXPECT_NE(started.value("message", "").find("Back-off pulling image \"valley-trian:dev\""), std::string::npos) << started.dump();
  EXPECT_TRUE(has_event("\nImagePullFailed: typo-worker-0: worker: ImagePullBackOff")) << events_text();

  // After the grace its pods go and the waiting task gets the GPUs.
  EXPECT_TRUE(wait_phase("Running", 90s, "next")) << task("next").dump(2) << task("typo").dump(2);
  const json st = task("typo")["status"];
  EXPECT_EQ(st.value("phase", ""), "Pending") << st.dump(2);
  EXPECT_EQ(st.value("reason", ""), "ImagePullFailed") << st.dump(2);
  EXPECT_EQ(st["restarts"].value("startFailures", 0), 1) << st.dump(2);
  EXPECT_TRUE(eventually([&] { return pods("typo").empty(); }, 30s));
  EXPECT_TRUE(has_event("\nStartFailed: typo-worker-0")) << events_text();

  // Fixing the spec retries at once: no backoff, it waits for capacity like any task.
  admin->patch(kTrainingTasks, ns, "typo", kube::PatchType::Merge, {{"spec", {{"worker", {{"image", "valley.dev/examples/worker:2"}}}}}});
  EXPECT_TRUE(eventually([&] { return status_field(task("typo"), "reason") == "Waiting"; }, 30s)) << task("typo").dump(2);
  admin->remove(kTrainingTasks, ns, "next");
  EXPECT_TRUE(eventually([&] { return !pods("typo").empty(); }, 90s)) << task("typo").dump(2);
}

// The plan admits a gang only where its launcher's node constraints, taints and CPU, memory and pod
// room allow; a launcher no node takes for what the plan does not see (here an extended resource
// no node has) is caught after admission, by its start grace.
TEST_F(TaskTest, ALauncherNoNodeTakesIsReportedAndItsGpusGoBack) {
  wait_until_no_active_valley_work(*admin);
  json spec = mpi_spec(2, 2);
  spec["runPolicy"] = {{"startGraceSeconds", 10}};
  spec["master"]["template"] = {
      {"spec", {{"containers", json::array({{{"name", "launcher"}, {"resources", {{"limits", {{"valley.dev/dongle", "1"}}}}}}})}}}};
  apply(spec, "nolauncher");
  ASSERT_TRUE(eventually([&] { return status_field(task("nolauncher"), "reason") == "Unschedulable"; }, 60s)) << task("nolauncher").dump(2);
  EXPECT_NE(status_field(task("nolauncher"), "message").find("nolauncher-launcher: 0/"), std::string::npos) << task("nolauncher").dump(2);
  EXPECT_TRUE(wait_phase("Pending", 60s, "nolauncher")) << task("nolauncher").dump(2);
  EXPECT_TRUE(eventually([&] { return pods("nolauncher").empty(); }, 30s)) << "its workers give their GPUs back";
  EXPECT_EQ(status_field(task("nolauncher"), "reason"), "Unschedulable");
}

}  // namespace
}  // namespace valley::e2e
