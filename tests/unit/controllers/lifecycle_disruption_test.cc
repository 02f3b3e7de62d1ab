// The lifecycle under disruptions (spot notices, lost nodes, evictions), and status coalescing.
#include "controllers/lifecycle/lifecycle.h"

#include <gtest/gtest.h>

#include "controllers/api/pod.h"
#include "tests/unit/controllers/lifecycle_fixtures.h"

namespace valley::lifecycle {
namespace {
using namespace fixtures;


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

// Valley re-places a worker it saw unbound; the scheduler may have bound it meanwhile, on the
// very node the plan has again. The deletion is still Valley's: the record of its uid says so.
TEST(Disruption, APodValleyDeletedIsNeverADisruptionWhereverItIsBound) {
  auto pods = running_pods();
  pods[0].deleting = true;
  pods[0].node = pods[0].pinned = "n1";
  json st = running_status();
  st["phase"] = "Admitted";
  Observed o = on_nodes(st, pods, healthy());
  o.admission->placement[0].node = "n1";
  EXPECT_EQ(decide(o).status["reason"], "PodDeleted");  // nothing says Valley did it
  o.deleted_by_valley.insert(pods[0].uid);
  Decision d = decide(o);
  EXPECT_FALSE(d.status.contains("lastDisruption")) << d.status.dump(2);
  EXPECT_EQ(d.status["epoch"], 1);
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
}  // namespace valley::lifecycle

namespace valley::lifecycle {
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
}  // namespace valley::lifecycle
