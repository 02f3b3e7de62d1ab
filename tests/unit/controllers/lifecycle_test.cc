#include "controllers/task/lifecycle.h"

#include <gtest/gtest.h>

namespace valley::task {
namespace {
using namespace std::chrono_literals;

const kube::SystemTime kNow = kube::SystemTime(std::chrono::seconds(1795316645));

json task_object(json spec_patch = json::object(), json status = json::object()) {
  json t = json::parse(R"({"apiVersion":"valley.dev/v1alpha1","kind":"TrainingTask",
    "metadata":{"name":"t","namespace":"ns","uid":"u-1","generation":1},
    "spec":{"taskType":"MPI","replicas":{"min":2,"max":4},"master":{"image":"l"},"worker":{"image":"w"},
            "runPolicy":{"backoffLimit":2}}})");
  if (spec_patch.is_object()) t["spec"].merge_patch(spec_patch);
  if (status.is_object() && !status.empty()) t["status"] = status;
  return t;
}

PodView pod(const std::string& name, const std::string& role, int epoch, const std::string& phase, bool ready = true,
            std::optional<int> exit = std::nullopt, int index = -1) {
  PodView p;
  p.name = name;
  p.uid = "uid-" + name;
  p.role = role;
  p.epoch = epoch;
  p.phase = phase;
  p.ready = ready && phase == "Running";
  p.exit_code = exit;
  p.worker_index = index;
  return p;
}

Observed observe(const json& task, std::vector<PodView> pods = {}, bool objects = true) {
  Observed o;
  o.task = task;
  o.parsed = parse_task(task);
  o.pods = std::move(pods);
  o.service_exists = o.config_exists = o.secret_exists = objects;
  if (objects) {
    int workers = task.contains("status") ? task["status"].value("epochReplicas", 2) : 2;
    std::string h;
    for (int i = 0; i < workers; ++i) h += "t-worker-" + std::to_string(i) + ".t-workers.ns.svc slots=1\n";
    o.config_hostfile = h;
  }
  o.now = kNow;
  if (o.parsed.spec) {  // the planner admits the task at its pinned size or its minimum
    Admission a;
    a.admitted = true;
    a.workers = desired_workers(*o.parsed.spec);
    a.placement.assign(a.workers, render::default_placement(*o.parsed.spec));
    a.reason = "minimum gang fits";
    o.admission = a;
  }
  return o;
}

json running_status(int epoch = 1, int workers = 2) {
  return {{"phase", "Running"}, {"epoch", epoch}, {"epochReplicas", workers}, {"startTime", "2026-11-22T03:00:00Z"}};
}

std::vector<PodView> running_pods(int epoch = 1, int workers = 2, bool launcher = true) {
  std::vector<PodView> pods;
  for (int i = 0; i < workers; ++i) pods.push_back(pod("t-worker-" + std::to_string(i), "worker", epoch, "Running", true, {}, i));
  if (launcher) pods.push_back(pod("t-launcher", "launcher", epoch, "Running"));
  return pods;
}

std::vector<std::string> created_names(const Decision& d) {
  std::vector<std::string> names;
  for (const auto& o : d.create) names.push_back(o["metadata"]["name"]);
  return names;
}

TEST(Lifecycle, NewTaskIsAdmittedAndGetsWorkersButNoLauncherYet) {
  Decision d = decide(observe(task_object(), {}, false));
  EXPECT_EQ(d.status["phase"], "Admitted");
  EXPECT_EQ(d.status["epoch"], 1);
  EXPECT_EQ(d.status["selector"], "valley.dev/task=t");
  EXPECT_TRUE(d.create_ssh_secret);
  EXPECT_EQ(created_names(d), (std::vector<std::string>{"t-workers", "t-mpi", "t-worker-0", "t-worker-1"}));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Admitted");
}

TEST(Lifecycle, LauncherWaitsForEveryWorkerToBeReady) {
  json t = task_object({}, {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}});
  auto pods = running_pods(1, 2, false);
  pods[1].ready = false;
  EXPECT_TRUE(created_names(decide(observe(t, pods))).empty());
  pods[1].ready = true;
  EXPECT_EQ(created_names(decide(observe(t, pods))), std::vector<std::string>{"t-launcher"});
}

TEST(Lifecycle, RunningLauncherMakesTheTaskRunningOnce) {
  json t = task_object({}, {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}});
  Decision d = decide(observe(t, running_pods()));
  EXPECT_EQ(d.status["phase"], "Running");
  EXPECT_EQ(d.status["replicas"], 2);
  EXPECT_EQ(d.events.back().reason, "Running");
  // Deciding again on the result changes nothing: level-triggered and idempotent.
  Decision again = decide(observe(task_object({}, d.status), running_pods()));
  EXPECT_FALSE(again.status_changed);
  EXPECT_TRUE(again.create.empty() && again.delete_pods.empty() && again.events.empty());
}

TEST(Lifecycle, LauncherSuccessIsTaskSuccessAndRunningPodsAreCleanedUp) {
  auto pods = running_pods();
  pods.back().phase = "Succeeded";
  pods.back().exit_code = 0;
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(d.status["phase"], "Succeeded");
  EXPECT_TRUE(d.status.contains("completionTime"));
  EXPECT_EQ(d.delete_pods.size(), 2u);  // the two running workers, not the finished launcher
}

TEST(Lifecycle, CleanPodPolicyNoneKeepsPodsAndAllRemovesEverything) {
  auto pods = running_pods();
  pods.back().phase = "Succeeded";
  EXPECT_TRUE(decide(observe(task_object({{"runPolicy", {{"cleanPodPolicy", "None"}}}}, running_status()), pods)).delete_pods.empty());
  EXPECT_EQ(decide(observe(task_object({{"runPolicy", {{"cleanPodPolicy", "All"}}}}, running_status()), pods)).delete_pods.size(), 3u);
}

TEST(Lifecycle, PermanentExitCodeFailsWithoutRetry) {
  auto pods = running_pods();
  pods.back().phase = "Failed";
  pods.back().exit_code = 1;
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(d.status["phase"], "Failed");
  EXPECT_EQ(d.status["reason"], "ExitCode");
  EXPECT_FALSE(d.status.contains("restarts"));
}

TEST(Lifecycle, RetryableExitCodeStartsANewEpochUpToTheBackoffLimit) {
  auto pods = running_pods();
  pods.back().phase = "Failed";
  pods.back().exit_code = 137;
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(d.status["phase"], "Restarting");
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["restarts"]["failures"], 1);
  EXPECT_EQ(d.delete_pods.size(), 3u);  // every pod of epoch 1
  EXPECT_TRUE(created_names(d).empty());  // the new workers wait for the old names to be free

  // The same failed launcher seen again (stale cache) is not counted twice: it is of epoch 1 now.
  Decision again = decide(observe(task_object({}, d.status), pods));
  EXPECT_EQ(again.status["restarts"]["failures"], 1);

  // Out of retries.
  json exhausted = running_status(3);
  exhausted["restarts"] = {{"failures", 2}, {"total", 2}};
  auto pods3 = running_pods(3);
  pods3.back().phase = "Failed";
  pods3.back().exit_code = 143;
  Decision last = decide(observe(task_object({}, exhausted), pods3));
  EXPECT_EQ(last.status["phase"], "Failed");
  EXPECT_EQ(last.status["reason"], "BackoffLimitExceeded");
}

TEST(Lifecycle, AFailedWorkerEndsTheEpochToo) {
  auto pods = running_pods();
  pods[0].phase = "Failed";
  pods[0].exit_code = 255;
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_NE(d.status["message"].get<std::string>().find("t-worker-0"), std::string::npos);
}

TEST(Lifecycle, MissingWorkerIsRecreated) {
  auto pods = running_pods();
  pods.erase(pods.begin());  // worker-0 deleted by hand
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(created_names(d), std::vector<std::string>{"t-worker-0"});
}

TEST(Lifecycle, ResizeIsANewEpochAtTheNewWorldSize) {
  Decision d = decide(observe(task_object({{"replicas", {{"target", 3}}}}, running_status()), running_pods()));
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["epochReplicas"], 3);
  EXPECT_EQ(d.status["restarts"]["resizes"], 1);
  EXPECT_EQ(d.status["reason"], "Resizing");
  EXPECT_EQ(d.delete_pods.size(), 3u);
  ASSERT_TRUE(d.replace_config.has_value());
  EXPECT_NE((*d.replace_config)["data"]["hostfile"].get<std::string>().find("t-worker-2"), std::string::npos);
}

TEST(Lifecycle, HotElasticResizeKeepsTheLauncherAndTheEpoch) {
  Decision d = decide(observe(task_object({{"elasticity", "Hot"}, {"replicas", {{"target", 3}}}}, running_status()), running_pods()));
  EXPECT_EQ(d.status["epoch"], 1);
  EXPECT_EQ(d.status["epochReplicas"], 3);
  EXPECT_EQ(d.status["restarts"]["resizes"], 1);
  EXPECT_EQ(d.status["phase"], "Running");
  EXPECT_TRUE(d.delete_pods.empty());
  EXPECT_EQ(created_names(d), std::vector<std::string>{"t-worker-2"});
  ASSERT_TRUE(d.replace_config.has_value());
  EXPECT_NE((*d.replace_config)["data"]["discover_hosts.sh"].get<std::string>().find("t-worker-2"), std::string::npos);
  // Shrinking in place removes the highest workers only.
  Decision down = decide(observe(task_object({{"elasticity", "Hot"}, {"replicas", {{"target", 2}}}}, running_status(1, 3)), running_pods(1, 3)));
  ASSERT_EQ(down.delete_pods.size(), 1u);
  EXPECT_EQ(down.delete_pods[0].first, "t-worker-2");
}

TEST(Lifecycle, SuspendStopsPodsAndResumeStartsTheNextEpoch) {
  Decision s = decide(observe(task_object({{"runPolicy", {{"suspend", true}}}}, running_status()), running_pods()));
  EXPECT_EQ(s.status["phase"], "Suspended");
  EXPECT_EQ(s.delete_pods.size(), 3u);
  Decision r = decide(observe(task_object({}, s.status), {}));
  EXPECT_EQ(r.status["phase"], "Admitted");
  EXPECT_EQ(r.status["epoch"], 2);
  EXPECT_EQ(created_names(r).size(), 2u);
}

TEST(Lifecycle, DeadlineFailsTheTaskAndTtlDeletesItLater) {
  json st = running_status();
  st["startTime"] = "2026-11-22T02:00:00Z";  // 1h04m ago
  Decision d = decide(observe(task_object({{"runPolicy", {{"activeDeadlineSeconds", 3600}, {"ttlSecondsAfterFinished", 60}}}}, st),
                              running_pods()));
  EXPECT_EQ(d.status["reason"], "DeadlineExceeded");
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_FALSE(d.delete_task);
  json done = d.status;
  done["completionTime"] = "2026-11-22T03:00:00Z";
  EXPECT_TRUE(decide(observe(task_object({{"runPolicy", {{"ttlSecondsAfterFinished", 60}}}}, done), {})).delete_task);
}

TEST(Lifecycle, InvalidSpecFailsWithTheProblemsListed) {
  json t = task_object();
  t["spec"]["worker"]["gpus"] = "lots";
  Decision d = decide(observe(t, {}, false));
  EXPECT_EQ(d.status["phase"], "Failed");
  EXPECT_EQ(d.status["reason"], "InvalidSpec");
  EXPECT_NE(d.status["message"].get<std::string>().find("spec.worker.gpus"), std::string::npos);
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(d.events[0].type, "Warning");
  // Not re-announced on every reconcile.
  t["status"] = d.status;
  EXPECT_TRUE(decide(observe(t, {}, false)).events.empty());
}

TEST(Lifecycle, SingleTaskRunsOnePodThatDecides) {
  json t = json::parse(R"({"metadata":{"name":"s","namespace":"ns","uid":"u"},"spec":{"taskType":"Single","image":"i"}})");
  Decision d = decide(observe(t, {}, false));
  EXPECT_EQ(created_names(d), std::vector<std::string>{"s-worker-0"});
  EXPECT_FALSE(d.create_ssh_secret);
  t["status"] = d.status;
  Decision ok = decide(observe(t, {pod("s-worker-0", "worker", 1, "Succeeded", false, 0, 0)}, false));
  EXPECT_EQ(ok.status["phase"], "Succeeded");
}

TEST(Lifecycle, WithoutAdmissionATaskWaitsWithThePlannersReasonAndNoPods) {
  Observed o = observe(task_object(), {}, false);
  o.admission->admitted = false;
  o.admission->workers = 0;
  o.admission->reason = "InsufficientCapacity: needs 8 GPUs (8 workers x 1), 3 free";
  o.admission->queue_position = 2;
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Pending");
  EXPECT_EQ(d.status["reason"], "Waiting");
  EXPECT_EQ(d.status["message"], "InsufficientCapacity: needs 8 GPUs (8 workers x 1), 3 free (queue position 2)");
  EXPECT_TRUE(d.create.empty());
  EXPECT_FALSE(d.create_ssh_secret);
  ASSERT_EQ(d.events.size(), 1u);
  // Nothing is announced again while the reason stays the same.
  json t = task_object();
  t["status"] = d.status;
  Observed again = o;
  again.task = t;
  EXPECT_TRUE(decide(again).events.empty());
  // No plan yet at all: wait too.
  Observed none = observe(task_object(), {}, false);
  none.admission.reset();
  EXPECT_EQ(decide(none).status["phase"], "Pending");
}

TEST(Lifecycle, PlannedPlacementPinsWorkersToNodes) {
  Observed o = observe(task_object(), {}, false);
  o.admission->placement[1].node = "a100-od-1";
  Decision d = decide(o);
  ASSERT_EQ(d.create.size(), 4u);
  EXPECT_FALSE(d.create[2]["spec"].contains("affinity"));
  EXPECT_EQ(d.create[3]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                     ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            "a100-od-1");
}

TEST(Lifecycle, AnUnboundWorkerThePlanMovedIsReplacedABoundOneIsNot) {
  json st = {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}};
  auto pods = running_pods(1, 2, false);
  pods[0].phase = "Pending";
  pods[0].ready = false;
  pods[0].pinned = "busy-node";  // kube-scheduler cannot bind it there
  pods[1].pinned = "n1";
  pods[1].node = "n1";
  Observed o = observe(task_object({}, st), pods);
  o.admission->placement[0].node = "other-node";
  o.admission->placement[1].node = "n2";  // bound already: left alone
  Decision d = decide(o);
  ASSERT_EQ(d.delete_pods.size(), 1u);
  EXPECT_EQ(d.delete_pods[0].first, "t-worker-0");
}

TEST(Lifecycle, PreemptionStopsPodsAndReadmissionResumesInANewEpoch) {
  Observed o = observe(task_object({}, running_status()), running_pods());
  o.admission->admitted = false;
  o.admission->workers = 0;
  o.admission->reason = "preempted for ns/vip (priority 90)";
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Pending");
  EXPECT_EQ(d.status["reason"], "Preempted");
  EXPECT_EQ(d.status["restarts"]["preemptions"], 1);
  EXPECT_EQ(d.status["restarts"]["total"], 1);
  EXPECT_EQ(d.delete_pods.size(), 3u);
  Decision back = decide(observe(task_object({}, d.status), {}, true));
  EXPECT_EQ(back.status["phase"], "Admitted");
  EXPECT_EQ(back.status["epoch"], 2);
}

TEST(Lifecycle, PodViewReadsLabelsPhaseReadinessAndExitCode) {
  json p = json::parse(R"({"metadata":{"name":"t-worker-1","uid":"x","labels":{"valley.dev/role":"worker","valley.dev/epoch":"3","valley.dev/worker-index":"1"}},
    "status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False"}],
              "containerStatuses":[{"state":{"terminated":{"exitCode":137}}}]}})");
  PodView v = view_pod(p);
  EXPECT_EQ(v.epoch, 3);
  EXPECT_EQ(v.worker_index, 1);
  EXPECT_EQ(v.exit_code, 137);
  EXPECT_FALSE(v.ready);
  json bad = json::parse(R"({"metadata":{"name":"x","labels":{"valley.dev/epoch":"nope"}}})");
  EXPECT_EQ(view_pod(bad).epoch, 0);
}

}  // namespace
}  // namespace valley::task
