#include "controllers/lifecycle/lifecycle.h"

#include <gtest/gtest.h>

#include "controllers/api/pod.h"
#include "tests/unit/controllers/lifecycle_fixtures.h"

namespace valley::lifecycle {
namespace {
using namespace fixtures;

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

// A task without checkpoints keeps its launcher off spot nodes (its loss would restart the gang
// from the beginning); one that checkpoints may have it there.
TEST(Lifecycle, OnlyACheckpointingTasksLauncherMayRunOnSpot) {
  auto launcher_of = [](const Decision& d) {
    for (const auto& o : d.create)
      if (o["metadata"]["name"] == "t-launcher") return o;
    return json();
  };
  Observed plain = observe(task_object(), {}, false);
  plain.spot_labels = {{"karpenter.sh/capacity-type", "spot"}};
  const json kept_off = launcher_of(decide(plain));
  ASSERT_TRUE(kept_off.is_object());
  EXPECT_EQ(kept_off["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                    ["matchExpressions"][0]["operator"],
            "NotIn");
  Observed checkpointed = observe(task_object({{"checkpoint", {{"uri", "s3://ckpt/t"}}}}), {}, false);
  checkpointed.spot_labels = plain.spot_labels;
  const json anywhere = launcher_of(decide(checkpointed));
  ASSERT_TRUE(anywhere.is_object());
  EXPECT_FALSE(anywhere["spec"]["affinity"].contains("nodeAffinity"));
  // The operator's launcher pool is required for both.
  checkpointed.launcher_pool = {{"node-role/cpu", "true"}};
  const json pooled = launcher_of(decide(checkpointed));
  EXPECT_EQ(pooled["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                  ["matchExpressions"][0]["operator"],
            "In")
      << pooled.dump();
  // A master template that allows only spot nodes (the plan found no other): honoured, with a
  // Warning that says what a notice would cost; no Warning while it is kept off spot.
  for (const auto& e : decide(plain).events) EXPECT_NE(e.reason, "LauncherOnSpot");
  Observed pinned = plain;
  pinned.admission->launcher_on_spot = true;
  const Decision d = decide(pinned);
  const json honoured = launcher_of(d);
  ASSERT_TRUE(honoured.is_object());
  EXPECT_FALSE(honoured["spec"]["affinity"].contains("nodeAffinity")) << honoured.dump();
  std::string warnings;
  for (const auto& e : d.events)
    if (e.type == "Warning") warnings += e.reason + ": " + e.note + "\n";
  EXPECT_NE(warnings.find("LauncherOnSpot: "), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("restarts the task from its start"), std::string::npos) << warnings;
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

TEST(Lifecycle, AMoveIsANewEpochOnTheNodesThePlanMovesItToAtTheSameSize) {
  auto pods = running_pods();
  for (auto& p : pods)
    if (p.role == "worker") p.node = p.pinned = "od-0";
  Observed o = observe(task_object({}, running_status()), pods);
  for (auto& w : o.admission->placement) w.node = "od-0";
  EXPECT_EQ(decide(o).status["epoch"], 1);
  // The plan has its workers elsewhere but is not moving it (a cordoned node): bound pods stay.
  for (auto& w : o.admission->placement) w.node = "spot-0";
  EXPECT_EQ(decide(o).status["epoch"], 1);
  o.admission->moving = true;
  o.admission->reason = "moving to cheaper capacity";
  Decision d = decide(o);
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["epochReplicas"], 2);
  EXPECT_EQ(d.status["reason"], "Moving");
  EXPECT_EQ(d.status["restarts"]["moves"], 1);
  EXPECT_EQ(d.status["restarts"]["total"], 1);
  EXPECT_EQ(d.status["lastResizeTime"], kube::format_time(kNow));
  ASSERT_FALSE(d.events.empty());
  EXPECT_EQ(d.events.back().reason, "Moving");
  ASSERT_EQ(d.delete_pods.size(), 1u);  // the launcher first: it checkpoints before the workers go
  EXPECT_EQ(d.delete_pods[0].name, "t-launcher");
  // Once the epoch's pods are where the plan has them, the move is done: no further epoch.
  for (auto& p : o.pods) p.epoch = 2, p.node = p.pinned = p.role == "worker" ? "spot-0" : "";
  o.task["status"]["epoch"] = 2;
  EXPECT_EQ(decide(o).status["epoch"], 2);
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


// An operator restarted mid-expansion: the task is admitted (its status says so), some workers are
// out, and the new operator has not planned yet. The missing workers wait for the plan: unpinned,
// kube-scheduler could bind them to a node the plan gives another task or one Valley does not plan.
TEST(Lifecycle, AMissingWorkerIsCreatedOnlyWhereThePlanPutsIt) {
  json st = {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}};
  auto pods = running_pods(1, 1, false);
  pods[0].pinned = pods[0].node = "n1";
  Observed o = observe(task_object({}, st), pods);
  o.admission.reset();
  auto workers_of = [](const Decision& d) {
    std::vector<json> out;
    for (const auto& c : d.create)
      if (c.value("kind", "") == "Pod" && c["metadata"]["labels"].value("valley.dev/role", "") == "worker") out.push_back(c);
    return out;
  };
  Decision before_plan = decide(o);
  EXPECT_TRUE(workers_of(before_plan).empty());
  EXPECT_TRUE(before_plan.delete_pods.empty());
  EXPECT_EQ(before_plan.status["epoch"], 1) << "no restart for want of a plan";

  Observed planned = observe(task_object({}, st), pods);
  planned.admission->placement[0].node = "n1";
  planned.admission->placement[1].node = "n2";
  const std::vector<json> workers = workers_of(decide(planned));
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0]["metadata"]["name"], "t-worker-1");
  EXPECT_EQ(workers[0]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                    ["matchFields"][0]["values"][0],
            "n2");
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

}  // namespace
}  // namespace valley::lifecycle

