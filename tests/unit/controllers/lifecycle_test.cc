#include "controllers/task/lifecycle.h"

#include <gtest/gtest.h>

#include "controllers/api/pod.h"

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
  o.parsed = api::parse_task(task);
  o.pods = std::move(pods);
  o.service_exists = o.secret_exists = objects;
  if (objects) {  // the launcher lists the workers of the status's size
    int workers = task.contains("status") ? task["status"].value("epochReplicas", 2) : 2;
    std::string h;
    for (int i = 0; i < workers; ++i) h += "t-worker-" + std::to_string(i) + ".t-workers.ns.svc slots=1\n";
    for (auto& p : o.pods)
      if (p.role == "launcher") p.hostfile = h;
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

// The planner says no: `reason`, no workers.
void refuse(Observed& o, const std::string& reason) {
  o.admission->admitted = false;
  o.admission->workers = 0;
  o.admission->reason = reason;
}

std::vector<std::string> created_names(const Decision& d) {
  std::vector<std::string> names;
  for (const auto& o : d.create) names.push_back(o["metadata"]["name"]);
  return names;
}

TEST(Lifecycle, NewTaskIsAdmittedAndGetsItsObjectsWorkersAndLauncherAtOnce) {
  Decision d = decide(observe(task_object(), {}, false));
  EXPECT_EQ(d.status["phase"], "Admitted");
  EXPECT_EQ(d.status["epoch"], 1);
  EXPECT_EQ(d.status["selector"], "valley.dev/task=t");
  EXPECT_TRUE(d.create_ssh_secret);
  EXPECT_EQ(created_names(d), (std::vector<std::string>{"t-workers", "t-worker-0", "t-worker-1", "t-launcher"}));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Admitted");
}

json condition_of(const json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", json::array()))
    if (c["type"] == type) return c;
  return nullptr;
}

// A refusal the API server will repeat (Pod Security) stops the creates and says why, and is tried
// again later; once pods are accepted the condition turns True. A retryable one (a quota) keeps
// creating.
TEST(Lifecycle, RefusedPodsAreReportedAndABlockingRefusalCreatesNothing) {
  Observed o = observe(task_object());
  o.refusal = CreateRefusal{"PodSecurity", "Pod t-worker-0: violates PodSecurity \"restricted:latest\"", true, 600s};
  Decision d = decide(o);
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(d.requeue_after, 600s);
  json c = condition_of(d.status, "PodsCreated");
  ASSERT_TRUE(c.is_object()) << d.status.dump(2);
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "PodSecurity");
  EXPECT_NE(c["message"].get<std::string>().find("violates PodSecurity"), std::string::npos);

  Observed quota = observe(task_object());
  quota.refusal = CreateRefusal{"Forbidden", "exceeded quota", false, std::nullopt};
  EXPECT_FALSE(decide(quota).create.empty());

  Observed later = observe(task_object(json::object(), d.status));
  Decision after = decide(later);
  EXPECT_FALSE(after.create.empty());
  EXPECT_EQ(condition_of(after.status, "PodsCreated")["status"], "True");
  // A task never refused carries no such condition.
  EXPECT_TRUE(condition_of(decide(observe(task_object())).status, "PodsCreated").is_null());
}

// The launcher goes out with the workers (its init container waits for them), but the task is
// Running only once every worker is Ready too; after that a worker briefly not Ready changes nothing.
TEST(Lifecycle, LauncherGoesOutWithTheWorkersAndTheTaskRunsOnceAllAreReady) {
  json t = task_object({}, {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}});
  auto created = created_names(decide(observe(t)));
  EXPECT_EQ(created, (std::vector<std::string>{"t-worker-0", "t-worker-1", "t-launcher"}));
  auto pods = running_pods(1, 2, false);
  pods[1].ready = false;
  EXPECT_EQ(created_names(decide(observe(t, pods))), std::vector<std::string>{"t-launcher"});
  pods.push_back(pod("t-launcher", "launcher", 1, "Running"));
  Decision waiting = decide(observe(t, pods));
  EXPECT_TRUE(waiting.create.empty());
  EXPECT_EQ(waiting.status["phase"], "Admitted") << waiting.status.dump(2);
  pods[1].ready = true;
  Decision running = decide(observe(t, pods));
  EXPECT_EQ(running.status["phase"], "Running");
  pods[1].ready = false;
  EXPECT_EQ(decide(observe(task_object({}, running.status), pods)).status["phase"], "Running");
}

// The launcher's wait gives up (a worker never answered over ssh): the task fails with the reason.
TEST(Lifecycle, AFailedLauncherInitContainerFailsTheTaskWithItsReason) {
  json t = task_object({}, {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}});
  auto pods = running_pods(1, 2, false);
  json launcher = {{"metadata", {{"name", "t-launcher"}, {"uid", "u-l"}, {"labels", {{"valley.dev/role", "launcher"}, {"valley.dev/epoch", "1"}}}}},
                   {"status",
                    {{"phase", "Failed"},
                     {"initContainerStatuses",
                      {{{"name", "valley-wait-for-workers"},
                        {"state", {{"terminated", {{"exitCode", 1}, {"message", "valley: waiting for a\nvalley: worker t-worker-1.t-workers.ns.svc did not answer over ssh within 1800s\n"}}}}}}}},
                     {"containerStatuses", {{{"name", "launcher"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}}}}}};
  PodView v = view_pod(api::pod_from(launcher));
  EXPECT_EQ(v.failed_init, "valley-wait-for-workers");
  ASSERT_TRUE(v.exit_code);
  EXPECT_EQ(*v.exit_code, 1);
  pods.push_back(v);
  Decision d = decide(observe(t, pods));
  EXPECT_EQ(d.status["phase"], "Failed") << d.status.dump(2);
  const std::string message = d.status.value("message", "");
  EXPECT_NE(message.find("the launcher's init container valley-wait-for-workers exited with code 1"), std::string::npos) << message;
  EXPECT_NE(message.find("t-worker-1.t-workers.ns.svc did not answer over ssh within 1800s"), std::string::npos) << message;
  EXPECT_EQ(message.find("waiting for a"), std::string::npos) << message;  // the last line only
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
  pods.back().exit_reason = "OOMKilled";
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(d.status["phase"], "Restarting");
  // What the kubelet said, not only the number: 137 could be any SIGKILL.
  EXPECT_NE(d.status["message"].get<std::string>().find("exit code 137 (OOMKilled)"), std::string::npos) << d.status.dump(2);
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

TEST(Lifecycle, AWorkerThatVanishesFromARunningEpochRestartsIt) {
  auto pods = running_pods();
  pods.erase(pods.begin());  // worker-0 force-deleted by hand: mpirun has lost a rank
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["reason"], "PodDeleted");
  EXPECT_EQ(d.status["restarts"]["disruptions"], 1);
  EXPECT_TRUE(created_names(d).empty());  // epoch 1 is still stopping
}

TEST(Lifecycle, ResizeIsANewEpochAtTheNewWorldSize) {
  Decision d = decide(observe(task_object({{"replicas", {{"target", 3}}}}, running_status()), running_pods()));
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["epochReplicas"], 3);
  EXPECT_EQ(d.status["restarts"]["resizes"], 1);
  EXPECT_EQ(d.status["reason"], "Resizing");
  ASSERT_EQ(d.delete_pods.size(), 1u);  // the launcher first: it checkpoints before the workers go
  EXPECT_EQ(d.delete_pods[0].name, "t-launcher");
  // The launcher of the next epoch lists the new workers; the stopping one is not rewritten.
  EXPECT_FALSE(d.launcher_hostfile.has_value());
}

TEST(Lifecycle, ALauncherIsRewrittenOnlyWhenItsHostfileListsOtherWorkers) {
  Decision steady = decide(observe(task_object({}, running_status()), running_pods()));
  EXPECT_FALSE(steady.launcher_hostfile.has_value());
  // A launcher made before its hostfile was an annotation (or edited by hand) gets it.
  auto pods = running_pods();
  Observed o = observe(task_object({}, running_status()), pods);
  o.pods.back().hostfile = "";
  Decision d = decide(o);
  ASSERT_TRUE(d.launcher_hostfile.has_value());
  EXPECT_EQ(*d.launcher_hostfile, render::hostfile(*o.parsed.spec, 2));
  // Nor is a launcher on its way out.
  o.pods.back().deleting = true;
  EXPECT_FALSE(decide(o).launcher_hostfile.has_value());
}

TEST(Lifecycle, HotElasticResizeKeepsTheLauncherAndTheEpoch) {
  Decision d = decide(observe(task_object({{"elasticity", "Hot"}, {"replicas", {{"target", 3}}}}, running_status()), running_pods()));
  EXPECT_EQ(d.status["epoch"], 1);
  EXPECT_EQ(d.status["epochReplicas"], 3);
  EXPECT_EQ(d.status["restarts"]["resizes"], 1);
  EXPECT_EQ(d.status["phase"], "Running");
  EXPECT_TRUE(d.delete_pods.empty());
  EXPECT_EQ(created_names(d), std::vector<std::string>{"t-worker-2"});
  // The running launcher's hostfile (which its discovery script reads) now lists the third worker.
  ASSERT_TRUE(d.launcher_hostfile.has_value());
  EXPECT_NE(d.launcher_hostfile->find("t-worker-2.t-workers.ns.svc slots=1"), std::string::npos);
  // Shrinking in place removes the highest workers only.
  Decision down = decide(observe(task_object({{"elasticity", "Hot"}, {"replicas", {{"target", 2}}}}, running_status(1, 3)), running_pods(1, 3)));
  ASSERT_EQ(down.delete_pods.size(), 1u);
  EXPECT_EQ(down.delete_pods[0].name, "t-worker-2");
}

TEST(Lifecycle, SuspendStopsPodsAndResumeStartsTheNextEpoch) {
  Decision s = decide(observe(task_object({{"runPolicy", {{"suspend", true}}}}, running_status()), running_pods()));
  EXPECT_EQ(s.status["phase"], "Suspended");
  EXPECT_EQ(s.delete_pods.size(), 1u);
  Decision s2 = decide(observe(task_object({{"runPolicy", {{"suspend", true}}}}, s.status), running_pods(1, 2, false)));
  EXPECT_EQ(s2.delete_pods.size(), 2u);
  Decision r = decide(observe(task_object({}, s.status), {}));
  EXPECT_EQ(r.status["phase"], "Admitted");
  EXPECT_EQ(r.status["epoch"], 2);
  EXPECT_EQ(created_names(r), (std::vector<std::string>{"t-worker-0", "t-worker-1", "t-launcher"}));
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

// The launcher carries its hostfile in an annotation: a maximum size whose hostfile the API server
// would refuse there fails the task at once, before anything is created, rather than at a resize.
TEST(Lifecycle, AMaximumSizeTheLaunchersHostfileCannotHoldIsInvalid) {
  // "t-worker-9999.t-workers.ns.svc slots=1\n" is 39 bytes: 6,000 of them fit in 256 KiB, 7,000 do not.
  Decision fits = decide(observe(task_object({{"replicas", {{"max", 6000}}}}), {}, false));
  EXPECT_EQ(fits.status["phase"], "Admitted") << fits.status.dump();
  Decision d = decide(observe(task_object({{"replicas", {{"max", 7000}}}}), {}, false));
  EXPECT_EQ(d.status["phase"], "Failed");
  EXPECT_EQ(d.status["reason"], "InvalidSpec");
  EXPECT_NE(d.status["message"].get<std::string>().find("spec.replicas.max: the launcher's hostfile for 7000 workers"), std::string::npos)
      << d.status["message"];
  EXPECT_TRUE(d.create.empty());
  EXPECT_FALSE(d.create_ssh_secret);
  // A Single task has no hostfile.
  json single = json::parse(R"({"metadata":{"name":"s","namespace":"ns","uid":"u"},"spec":{"taskType":"Single","image":"i"}})");
  EXPECT_NE(decide(observe(single, {}, false)).status["phase"], "Failed");
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
  refuse(o, "InsufficientCapacity: needs 8 GPUs (8 workers x 1), 3 free");
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
  ASSERT_EQ(d.create.size(), 4u);  // Service, two workers, the launcher
  EXPECT_FALSE(d.create[1]["spec"].contains("affinity"));
  EXPECT_EQ(d.create[2]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
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
  EXPECT_EQ(d.delete_pods[0].name, "t-worker-0");
}

// Valley deleted worker-0 while it was unbound (the plan moved it); kube-scheduler bound it before the
// deletion reached it. Before the epoch runs that is still Valley's re-placement, not a disruption;
// once it runs, a bound pod deleted is one.
TEST(Lifecycle, AReplacedWorkerBoundJustBeforeItsDeletionIsNotADisruption) {
  json st = {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}};
  auto pods = running_pods(1, 2, false);
  pods[0].pinned = pods[0].node = "busy-node";
  pods[0].deleting = true;
  pods[1].pinned = pods[1].node = "n1";
  Observed o = observe(task_object({}, st), pods);
  o.admission->placement[0].node = "other-node";
  o.admission->placement[1].node = "n1";
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Admitted") << d.status.dump();
  EXPECT_FALSE(d.status.contains("lastDisruption"));
  // Running: the same deletion is a disruption.
  auto running = running_pods(1, 2, true);
  running[0].pinned = running[0].node = "busy-node";
  running[0].deleting = true;
  Observed r = observe(task_object({}, running_status()), running);
  r.admission->placement[0].node = "other-node";
  EXPECT_EQ(decide(r).status["reason"], "PodDeleted");
}

TEST(Lifecycle, PreemptionStopsPodsAndReadmissionResumesInANewEpoch) {
  Observed o = observe(task_object({}, running_status()), running_pods());
  refuse(o, "preempted for ns/vip (priority 90)");
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Pending");
  EXPECT_EQ(d.status["reason"], "Preempted");
  EXPECT_EQ(d.status["restarts"]["preemptions"], 1);
  EXPECT_EQ(d.status["restarts"]["total"], 1);
  EXPECT_EQ(d.delete_pods.size(), 1u);
  Decision back = decide(observe(task_object({}, d.status), {}, true));
  EXPECT_EQ(back.status["phase"], "Admitted");
  EXPECT_EQ(back.status["epoch"], 2);
}

TEST(Lifecycle, PodViewReadsLabelsPhaseReadinessAndExitCode) {
  json p = json::parse(R"({"metadata":{"name":"t-worker-1","uid":"x","labels":{"valley.dev/role":"worker","valley.dev/epoch":"3","valley.dev/worker-index":"1"}},
    "status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False"}],
              "containerStatuses":[{"state":{"terminated":{"exitCode":0,"reason":"Completed"}}},
                                   {"state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}})");
  PodView v = view_pod(api::pod_from(p));
  EXPECT_EQ(v.epoch, 3);
  EXPECT_EQ(v.worker_index, 1);
  EXPECT_EQ(v.exit_code, 137);
  EXPECT_EQ(v.exit_reason, "OOMKilled");  // the container whose exit explains the failure
  p["status"]["containerStatuses"][1]["state"]["terminated"]["reason"] = "Error";
  EXPECT_EQ(view_pod(api::pod_from(p)).exit_reason, "") << "\"Error\" says nothing the exit code does not";
  EXPECT_FALSE(v.ready);
  json bad = json::parse(R"({"metadata":{"name":"x","labels":{"valley.dev/epoch":"nope"}}})");
  EXPECT_EQ(view_pod(api::pod_from(bad)).epoch, 0);
}


// Optional pod-status fields absent, null or mistyped (a terminated state without startedAt/finishedAt
// on some runtimes) read as absent: this used to throw "type must be string, but is null" on every
// reconcile, so the task never finished.
TEST(Lifecycle, PodViewReadsNullAndMistypedOptionalFieldsAsAbsent) {
  json p = json::parse(R"({"metadata":{"name":"s-worker-0","uid":null,"labels":{"valley.dev/role":"worker","valley.dev/epoch":"1","valley.dev/worker-index":"0"},"deletionTimestamp":null},
    "spec":{"nodeName":null},
    "status":{"phase":"Succeeded","reason":null,"conditions":[{"type":null,"status":"True"},{"type":"Ready","status":null},7],
              "containerStatuses":[{"state":{"terminated":{"exitCode":0,"startedAt":null,"finishedAt":null,"message":null}}},
                                   {"state":{"terminated":{"exitCode":null}}},{"state":null},null]}})");
  PodView v = view_pod(api::pod_from(p));
  EXPECT_EQ(v.name, "s-worker-0");
  EXPECT_EQ(v.uid, "");
  EXPECT_EQ(v.node, "");
  EXPECT_FALSE(v.deleting);
  EXPECT_EQ(v.phase, "Succeeded");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_FALSE(v.finished_at);
  EXPECT_EQ(v.termination_message, "");
  // Whole objects of the wrong type.
  for (const char* text : {R"(null)", R"([])", R"({"metadata":null,"spec":[],"status":"x"})",
                           R"({"metadata":{"name":5,"labels":{"valley.dev/epoch":3}},"status":{"phase":1,"conditions":{},"containerStatuses":"x"}})",
                           R"({"status":{"containerStatuses":[{"state":{"terminated":{"exitCode":99999999999}}}]}})"})
    EXPECT_NO_THROW(view_pod(api::pod_from(json::parse(text)))) << text;
  // And the task it belongs to finishes.
  json t = json::parse(R"({"metadata":{"name":"s","namespace":"ns","uid":"u"},"spec":{"taskType":"Single","image":"i"}})");
  t["status"] = decide(observe(t, {}, false)).status;
  Decision ok = decide(observe(t, {v}, false));
  EXPECT_EQ(ok.status["phase"], "Succeeded") << ok.status.dump(2);
}

// --- Disruptions (spot notices, lost nodes, evictions) ---

// Two workers on n1 and n2 and the launcher on n3, running in epoch 1, with the given nodes.
Observed on_nodes(const json& status, std::vector<PodView> pods, std::map<std::string, NodeView> nodes) {
  const char* where[] = {"n1", "n2", "n3"};
  for (size_t i = 0; i < pods.size(); ++i) pods[i].node = pods[i].node.empty() ? where[std::min<size_t>(i, 2)] : pods[i].node;
  Observed o = observe(task_object({{"checkpoint", {{"uri", "s3://ckpt/t"}}}}, status), pods);
  o.nodes_known = true;
  o.nodes = std::move(nodes);
  return o;
}
std::map<std::string, NodeView> healthy() { return {{"n1", {}}, {"n2", {}}, {"n3", {}}, {"n4", {}}}; }

TEST(Disruption, SpotNoticeRestartsTheTaskFromItsCheckpointWithoutCountingAFailure) {
  auto nodes = healthy();
  nodes["n2"].notice = "aws-node-termination-handler/spot-itn";
  json status = running_status();
  status["restarts"] = {{"failures", 0}};
  Observed o = on_nodes(status, running_pods(), nodes);
  o.checkpoint = storage::CheckpointRecord{300, kube::format_time(kNow - 60s), 1, 2, "ckpt-300.bin"};
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Restarting");
  EXPECT_EQ(d.status["reason"], "NodeNotice");
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["restarts"]["disruptions"], 1);
  EXPECT_EQ(d.status["restarts"]["total"], 1);
  EXPECT_EQ(d.status["restarts"]["failures"], 0);
  EXPECT_EQ(d.status["lastDisruption"]["node"], "n2");
  EXPECT_EQ(d.status["lastDisruption"]["checkpointStep"], 300);
  EXPECT_EQ(d.status["checkpoint"]["step"], 300);
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].reason, "Disrupted");
  EXPECT_EQ(d.events[1].reason, "Checkpointing");
  EXPECT_NE(d.events[1].note.find("60s"), std::string::npos) << d.events[1].note;  // the default window
  ASSERT_EQ(d.delete_pods.size(), 1u);
  EXPECT_EQ(d.delete_pods[0].name, "t-launcher");
  EXPECT_FALSE(d.delete_pods[0].force);
  EXPECT_TRUE(created_names(d).empty());

  // The launcher is terminating within its window: the workers wait, nothing new starts.
  auto pods = running_pods();
  pods[2].deleting = true;
  pods[2].deletion_deadline = kNow + 30s;
  Observed o2 = on_nodes(d.status, pods, nodes);
  o2.admission->placement[1].node = "n4";  // the planner moved worker 1 off the noticed node
  Decision d2 = decide(o2);
  EXPECT_TRUE(d2.delete_pods.empty());
  EXPECT_TRUE(created_names(d2).empty());
  ASSERT_TRUE(d2.requeue_after);
  EXPECT_EQ(d2.status["restarts"]["total"], 1);  // decided once

  // The launcher is gone: the old workers go; still nothing new while they exist.
  Decision d3 = decide(on_nodes(d.status, running_pods(1, 2, false), nodes));
  EXPECT_EQ(d3.delete_pods.size(), 2u);
  EXPECT_TRUE(created_names(d3).empty());

  // All gone: epoch 2 starts where the plan says, resuming.
  Observed o4 = on_nodes(d.status, {}, nodes);
  o4.admission->placement[1].node = "n4";
  Decision d4 = decide(o4);
  ASSERT_EQ(created_names(d4), (std::vector<std::string>{"t-worker-0", "t-worker-1", "t-launcher"}));
  EXPECT_EQ(api::pinned_node(d4.create[1]), "n4");
  bool resume = false;
  for (const auto& e : d4.create[0]["spec"]["containers"][0]["env"])
    if (e["name"] == "VALLEY_RESUME") resume = e["value"] == "1";
  EXPECT_TRUE(resume);
  EXPECT_EQ(d4.create[0]["spec"]["terminationGracePeriodSeconds"], 60);

  // Running again: recovery time and work lost are recorded (checkpointed on SIGTERM, after the notice).
  json st = d4.status;
  st["phase"] = "Admitted";
  auto epoch2 = running_pods(2, 2);
  epoch2[1].node = "n4";
  Observed o5 = on_nodes(st, epoch2, nodes);
  o5.now = kNow + 42s;
  o5.checkpoint = storage::CheckpointRecord{317, kube::format_time(kNow + 5s), 1, 2, "ckpt-317.bin"};
  Decision d5 = decide(o5);
  EXPECT_EQ(d5.status["phase"], "Running");
  EXPECT_EQ(d5.status["lastDisruption"]["recoverySeconds"], 42);
  EXPECT_EQ(d5.status["lastDisruption"]["workLostSeconds"], 0);
  EXPECT_EQ(d5.status["lastDisruption"]["resumedFromStep"], 317);
  bool recovered_event = false;
  for (const auto& e : d5.events) recovered_event |= e.reason == "Recovered";
  EXPECT_TRUE(recovered_event);
}

// A GPU fault the cluster reports on a worker's node is a platform fault: the same checkpoint-restart
// as a spot notice, with the fault's words in the status and Event, and never a failure.
TEST(Disruption, AGpuFaultOnAWorkersNodeMovesTheTaskWithoutCountingAFailure) {
  auto nodes = healthy();
  nodes["n1"].fault = "condition SysLogsXIDError: [79] GPU has fallen off the bus";
  json status = running_status();
  status["restarts"] = {{"failures", 0}};
  Decision d = decide(on_nodes(status, running_pods(), nodes));
  EXPECT_EQ(d.status["phase"], "Restarting");
  EXPECT_EQ(d.status["reason"], "GpuFault");
  EXPECT_EQ(d.status["restarts"]["disruptions"], 1);
  EXPECT_EQ(d.status["restarts"]["failures"], 0);
  EXPECT_EQ(d.status["lastDisruption"]["cause"], "GpuFault");
  EXPECT_EQ(d.status["lastDisruption"]["node"], "n1");
  EXPECT_EQ(d.status["lastDisruption"]["workers"], 2);
  EXPECT_NE(d.status["lastDisruption"]["message"].get<std::string>().find("fallen off the bus"), std::string::npos);
  ASSERT_FALSE(d.events.empty());
  EXPECT_NE(d.events[0].note.find("GPU fault (condition SysLogsXIDError"), std::string::npos) << d.events[0].note;
  // The launcher's exit while its node fails is the fault's doing too (it was already restarting).
  auto pods = running_pods();
  pods[2].phase = "Failed";
  pods[2].exit_code = 1;
  Decision after = decide(on_nodes(d.status, pods, nodes));
  EXPECT_NE(after.status["phase"], "Failed");
  EXPECT_EQ(after.status["restarts"]["failures"], 0);
}

TEST(Disruption, WorkSinceAnOlderCheckpointIsCountedAsLost) {
  json st = running_status(2, 2);
  st["phase"] = "Admitted";
  st["lastDisruption"] = {{"time", kube::format_time(kNow - 100s)}, {"cause", "NodeLost"}};
  Observed o = on_nodes(st, running_pods(2, 2), healthy());
  o.checkpoint = storage::CheckpointRecord{250, kube::format_time(kNow - 160s), 1, 2, "x"};
  Decision d = decide(o);
  EXPECT_EQ(d.status["lastDisruption"]["workLostSeconds"], 60);
  EXPECT_EQ(d.status["lastDisruption"]["recoverySeconds"], 100);
}

TEST(Disruption, ADeletedNodeForceDeletesItsPods) {
  auto nodes = healthy();
  nodes.erase("n1");
  Decision d = decide(on_nodes(running_status(), running_pods(), nodes));
  EXPECT_EQ(d.status["reason"], "NodeLost");
  // worker-0's node is gone: no kubelet will ever confirm, so it goes now and forcibly; the
  // launcher (healthy node) gets its window; worker-1 waits for it.
  ASSERT_EQ(d.delete_pods.size(), 2u);
  for (const auto& del : d.delete_pods) {
    if (del.name == "t-worker-0") {
      EXPECT_TRUE(del.force);
    }
    if (del.name == "t-launcher") {
      EXPECT_FALSE(del.force);
    }
    EXPECT_NE(del.name, "t-worker-1");
  }
}

TEST(Disruption, NotReadyCountsOnlyAfterTheGracePeriod) {
  auto nodes = healthy();
  nodes["n1"].ready = false;
  nodes["n1"].not_ready_since = kNow - 10s;
  Decision early = decide(on_nodes(running_status(), running_pods(), nodes));
  EXPECT_EQ(early.status["phase"], "Running");
  nodes["n1"].not_ready_since = kNow - 31s;
  Decision late = decide(on_nodes(running_status(), running_pods(), nodes));
  EXPECT_EQ(late.status["reason"], "NodeNotReady");
}

TEST(Disruption, EvictionAndDeletionByOthersAreDisruptionsValleysOwnShrinkIsNot) {
  auto pods = running_pods();
  pods[1].disruption = "EvictionByEvictionAPI";
  pods[1].deleting = true;
  Decision evicted = decide(on_nodes(running_status(), pods, healthy()));
  EXPECT_EQ(evicted.status["reason"], "Evicted");
  EXPECT_EQ(evicted.status["restarts"]["disruptions"], 1);

  auto deleted = running_pods();
  deleted[0].deleting = true;  // kubectl delete pod
  EXPECT_EQ(decide(on_nodes(running_status(), deleted, healthy())).status["reason"], "PodDeleted");

  // Hot shrink: Valley deleting worker-2 (beyond the size) is not a disruption.
  auto hot = running_pods(1, 3);
  hot[2].deleting = true;
  Decision d = decide(on_nodes(running_status(1, 2), hot, healthy()));
  EXPECT_EQ(d.status["phase"], "Running");
  EXPECT_FALSE(d.status.contains("lastDisruption"));
}

TEST(Disruption, SchedulerPreemptionAndTaintManagerAreNamed) {
  auto pods = running_pods();
  pods[0].disruption = "PreemptionByScheduler";
  EXPECT_EQ(decide(on_nodes(running_status(), pods, healthy())).status["reason"], "PreemptedByScheduler");
  pods[0].disruption = "DeletionByTaintManager";
  EXPECT_EQ(decide(on_nodes(running_status(), pods, healthy())).status["reason"], "NodeTaint");
}

TEST(Disruption, BackoffLimitIsNotConsumed) {
  auto nodes = healthy();
  nodes.erase("n2");
  json st = running_status();
  Observed o = on_nodes(st, running_pods(), nodes);
  o.task["spec"]["runPolicy"]["backoffLimit"] = 0;
  o.parsed = api::parse_task(o.task);
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Restarting");
  EXPECT_FALSE(d.status["restarts"].contains("failures"));
}

TEST(Disruption, APermanentLookingLauncherExitWaitsForADisruptionToExplainIt) {
  auto pods = running_pods();
  pods[2].phase = "Failed";
  pods[2].exit_code = 1;  // mpirun: a rank's host went away
  pods[2].finished_at = kNow - 2s;
  Decision wait = decide(on_nodes(running_status(), pods, healthy()));
  EXPECT_EQ(wait.status["phase"], "Running");
  ASSERT_TRUE(wait.requeue_after);
  EXPECT_LE(*wait.requeue_after, 9s);
  // The node deletion arrives: a disruption, not a failure.
  auto nodes = healthy();
  nodes.erase("n2");
  Decision d = decide(on_nodes(running_status(), pods, nodes));
  EXPECT_EQ(d.status["reason"], "NodeLost");
  // Nothing explains it after the settle time: a real failure.
  pods[2].finished_at = kNow - 11s;
  Decision f = decide(on_nodes(running_status(), pods, healthy()));
  EXPECT_EQ(f.status["phase"], "Failed");
  EXPECT_EQ(f.status["reason"], "ExitCode");
}

TEST(Disruption, BelowTheMinimumTheTaskWaitsWithoutAPreemptionCounted) {
  auto nodes = healthy();
  nodes["n1"].notice = "karpenter.sh/disrupted";
  Decision d = decide(on_nodes(running_status(), running_pods(), nodes));
  ASSERT_EQ(d.status["epoch"], 2);
  Observed o = on_nodes(d.status, {}, nodes);
  refuse(o, "InsufficientCapacity: needs 2 GPUs (2 workers x 1), 1 free");
  Decision w = decide(o);
  EXPECT_EQ(w.status["phase"], "Pending");
  EXPECT_EQ(w.status["reason"], "Waiting");
  EXPECT_NE(w.status["message"].get<std::string>().find("InsufficientCapacity"), std::string::npos);
  EXPECT_FALSE(w.status["restarts"].contains("preemptions"));
  EXPECT_EQ(w.status["restarts"]["total"], 1);
  // Capacity returns: re-admitted in a new epoch that resumes.
  Decision back = decide(on_nodes(w.status, {}, healthy()));
  EXPECT_EQ(back.status["phase"], "Admitted");
  EXPECT_EQ(created_names(back).size(), 3u);  // two workers and the launcher
  EXPECT_EQ(back.status["restarts"]["total"], 1);
}

TEST(Disruption, APodStuckPastItsGracePeriodIsForceDeleted) {
  json st = running_status(2, 2);
  st["phase"] = "Restarting";
  auto pods = running_pods(1, 2, false);
  pods[0].deleting = true;
  pods[0].deletion_deadline = kNow - 61s;
  pods[1].deleting = true;
  pods[1].deletion_deadline = kNow - 5s;
  Decision d = decide(on_nodes(st, pods, healthy()));
  ASSERT_EQ(d.delete_pods.size(), 1u);
  EXPECT_EQ(d.delete_pods[0].name, "t-worker-0");
  EXPECT_TRUE(d.delete_pods[0].force);
}

TEST(Disruption, ASizeChangeBeforeTheNewEpochStartsIsNotAnotherRestart) {
  json st = running_status(2, 2);
  st["phase"] = "Restarting";
  st["restarts"] = {{"disruptions", 1}, {"total", 1}};
  Observed o = on_nodes(st, {}, healthy());
  o.admission->workers = 3;
  o.admission->placement.assign(3, render::default_placement(*o.parsed.spec));
  Decision d = decide(o);
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["epochReplicas"], 3);
  EXPECT_EQ(d.status["restarts"]["total"], 1);
  EXPECT_EQ(created_names(d).size(), 4u);  // three workers and the launcher
}

TEST(Disruption, PodViewReadsDisruptionTargetDeletionAndTerminationMessage) {
  json p = json::parse(R"({"metadata":{"name":"t-worker-0","uid":"x","deletionTimestamp":"2026-11-22T06:00:30Z",
      "labels":{"valley.dev/role":"worker","valley.dev/epoch":"1","valley.dev/worker-index":"0"}},
    "spec":{"nodeName":"n1"},
    "status":{"phase":"Running","conditions":[{"type":"DisruptionTarget","status":"True","reason":"EvictionByEvictionAPI"}],
      "containerStatuses":[{"state":{"terminated":{"exitCode":143,"finishedAt":"2026-11-22T06:00:10Z",
        "message":"{\"step\":12,\"time\":\"2026-11-22T06:00:09Z\"}"}}}]}})");
  PodView v = view_pod(api::pod_from(p));
  EXPECT_EQ(v.disruption, "EvictionByEvictionAPI");
  ASSERT_TRUE(v.deletion_deadline);
  EXPECT_EQ(kube::format_time(*v.deletion_deadline), "2026-11-22T06:00:30Z");
  ASSERT_TRUE(v.finished_at);
  EXPECT_NE(v.termination_message.find("\"step\":12"), std::string::npos);
  json evicted = json::parse(R"({"metadata":{"name":"a"},"status":{"phase":"Failed","reason":"Evicted"}})");
  EXPECT_EQ(view_pod(api::pod_from(evicted)).disruption, "Evicted");
}

TEST(Disruption, ATerminationMessageCheckpointIsReported) {
  auto pods = running_pods();
  pods[0].termination_message = R"({"step":77,"time":"2026-11-22T05:00:00Z","worldSize":2})";
  Decision d = decide(on_nodes(running_status(), pods, healthy()));
  EXPECT_EQ(d.status["checkpoint"]["step"], 77);
  EXPECT_EQ(d.status["checkpoint"]["uri"], "s3://ckpt/t");
}

// --- Idle GPUs (utilization from DCGM through Prometheus) ---

Observed with_reading(const json& status, std::vector<gpu::GpuReading> gpus, kube::SystemTime at, api::IdlePolicy p,
                      int64_t generation = 1) {
  json t = task_object(json::object(), status);
  t["metadata"]["generation"] = generation;
  Observed o = observe(t, running_pods());
  o.gpu_reading = gpu::TaskReading{at, std::move(gpus), std::chrono::seconds(120)};
  o.idle_policy = p;
  return o;
}

TEST(Idle, ReportSaysItOnceAndClearsWhenBusy) {
  api::IdlePolicy p;
  p.after = 10min;
  json st = running_status();
  st["utilization"] = {{"updated", kube::format_time(kNow - 60s)}, {"idleSince", kube::format_time(kNow - 11min)}};
  Decision d = decide(with_reading(st, {{1, 0}, {2, 0}}, kNow, p));
  EXPECT_EQ(d.status["phase"], "Running");
  json idle = condition_of(d.status, "Idle");
  ASSERT_TRUE(idle.is_object()) << d.status.dump(2);
  EXPECT_EQ(idle["status"], "True");
  EXPECT_EQ(idle["reason"], "IdleGpus");
  EXPECT_NE(idle["message"].get<std::string>().find("below 5% since"), std::string::npos);
  int said = 0;
  for (const auto& e : d.events) said += e.reason == "Idle";
  EXPECT_EQ(said, 1);
  EXPECT_EQ(d.status["utilization"]["idleGpuSeconds"], 120);
  // Still idle a minute later: nothing new is said.
  Decision again = decide(with_reading(d.status, {{1, 0}, {2, 0}}, kNow + 60s, p));
  for (const auto& e : again.events) EXPECT_NE(e.reason, "Idle");
  EXPECT_EQ(condition_of(again.status, "Idle"), idle);
  // Busy: the condition turns False.
  Decision busy = decide(with_reading(again.status, {{95, 0}, {90, 0}}, kNow + 120s, p));
  EXPECT_EQ(condition_of(busy.status, "Idle")["status"], "False");
  EXPECT_EQ(idle_shrink(busy.status), "");
}

TEST(Idle, ShrinkIsLeftToThePlannerAndSuspendStopsUntilTheSpecChanges) {
  api::IdlePolicy p;
  p.after = 10min;
  json st = running_status();
  st["utilization"] = {{"updated", kube::format_time(kNow - 60s)}, {"idleSince", kube::format_time(kNow - 11min)}};
  p.action = api::IdleAction::Shrink;
  Decision shrink = decide(with_reading(st, {{0, 0}, {0, 0}}, kNow, p));
  EXPECT_EQ(shrink.status["phase"], "Running");
  EXPECT_NE(idle_shrink(shrink.status).find("shrinking to replicas.min"), std::string::npos);

  p.action = api::IdleAction::Suspend;
  Decision d = decide(with_reading(st, {{0, 0}, {0, 0}}, kNow, p));
  EXPECT_EQ(d.status["phase"], "Suspended");
  EXPECT_EQ(d.status["reason"], "Idle");
  EXPECT_FALSE(d.delete_pods.empty());
  const api::TaskSpec spec = *api::parse_task(task_object()).spec;
  EXPECT_TRUE(idle_suspended(spec, d.status));
  // Its pods are gone and the GPUs report nothing: it stays suspended.
  Observed later = with_reading(d.status, {}, kNow + 60s, p);
  later.pods.clear();
  Decision still = decide(later);
  EXPECT_EQ(still.status["phase"], "Suspended");
  EXPECT_TRUE(still.create.empty());
  // The user changes the spec (a new generation): it resumes, watched afresh.
  Observed changed = with_reading(d.status, {}, kNow + 120s, p, 2);
  changed.pods.clear();
  Decision resumed = decide(changed);
  EXPECT_NE(resumed.status["phase"], "Suspended");
  EXPECT_EQ(condition_of(resumed.status, "Idle")["status"], "False");
  EXPECT_EQ(condition_of(resumed.status, "Idle")["reason"], "SpecChanged");
}

}  // namespace
}  // namespace valley::task

namespace valley::task {
namespace {

// Status coalescing: counts and cost catch up with the next change worth writing; phases,
// conditions and epochs go out at once, and so does anything written before pods are deleted.
// Held for the window, or longer when many admitted tasks share the progress write rate.
TEST(StatusCoalescing, ManyAdmittedTasksHoldProgressLonger) {
  using std::chrono::milliseconds;
  EXPECT_EQ(status_hold(milliseconds(2000), 0, 5), milliseconds(2000));
  EXPECT_EQ(status_hold(milliseconds(2000), 10, 5), milliseconds(2000));
  EXPECT_EQ(status_hold(milliseconds(2000), 11, 5), milliseconds(3000));
  EXPECT_EQ(status_hold(milliseconds(2000), 1000, 5), milliseconds(200000));
  EXPECT_EQ(status_hold(milliseconds(2000), 1000, 0), milliseconds(2000));  // no rate: the window
  EXPECT_EQ(status_hold(milliseconds(0), 1000, 5), milliseconds(0));        // coalescing off
}

TEST(StatusCoalescing, OnlyProgressMayWait) {
  const json stored = {{"phase", "Admitted"}, {"epoch", 1}, {"replicas", 1}, {"cost", {{"accruedMicros", 0}}}};
  Decision d;
  d.status = stored;
  d.status["replicas"] = 3;
  d.status["readyReplicas"] = 2;
  d.status["cost"] = {{"accruedMicros", 10}, {"ledger", json::array({{{"pod", "t-worker-0"}}})}};
  d.status["utilization"] = {{"gpuPercent", 90}};
  d.create.push_back({{"kind", "Pod"}});  // creating the launcher meanwhile does not force a write
  EXPECT_TRUE(status_may_wait(stored, d, true));

  Decision phase = d;
  phase.status["phase"] = "Running";
  EXPECT_FALSE(status_may_wait(stored, phase, true));
  Decision condition = d;
  condition.status["conditions"] = json::array({{{"type", "Running"}, {"status", "True"}}});
  EXPECT_FALSE(status_may_wait(stored, condition, true));
  Decision final_cost = d;
  final_cost.status["cost"]["final"] = "0.01";
  EXPECT_FALSE(status_may_wait(stored, final_cost, true));
  Decision deletes = d;
  deletes.delete_pods.push_back({"t-worker-0", "uid-1", false, ""});
  EXPECT_FALSE(status_may_wait(stored, deletes, true));
  Decision removed = d;
  removed.status.erase("epoch");
  EXPECT_FALSE(status_may_wait(stored, removed, true));
}

TEST(StatusCoalescing, ANewTaskWaitsForThePlannerButNotOnceItSpoke) {
  Observed o = observe(task_object(), {}, false);
  o.admission.reset();
  Decision d = decide(o);
  ASSERT_EQ(d.status["phase"], "Pending");
  EXPECT_TRUE(status_may_wait(json::object(), d, false));
  Observed waiting = observe(task_object(), {}, false);
  refuse(waiting, "InsufficientCapacity: needs 2 GPUs");
  Decision told = decide(waiting);
  ASSERT_EQ(told.status["phase"], "Pending");
  EXPECT_FALSE(status_may_wait(json::object(), told, true));
  // An invalid task says so at once.
  Decision invalid = decide(observe(task_object({{"replicas", {{"min", 0}}}}), {}, false));
  EXPECT_FALSE(status_may_wait(json::object(), invalid, false)) << invalid.status.dump();
}

}  // namespace
}  // namespace valley::task
