// Pods that cannot start: the kubelet's and kube-scheduler's reasons in the task's words, the grace,
// the GPUs given back, the backoff, the limit, and a fixed spec tried at once.
#include "controllers/lifecycle/start_failure.h"

#include <gtest/gtest.h>

#include "controllers/api/conditions.h"
#include "controllers/api/pod.h"
#include "tests/unit/controllers/lifecycle_fixtures.h"

namespace valley::lifecycle {
namespace {
using namespace fixtures;

// A pod that cannot start, as view_pod reads it from the kubelet's waiting reason.
PodView not_starting(PodView p, const std::string& kubelet_reason, const std::string& said) {
  api::Pod pod;
  pod.name = p.name;
  pod.phase = "Pending";
  pod.container_statuses.push_back({});
  pod.container_statuses[0].name = p.role;
  pod.container_statuses[0].waiting_reason = kubelet_reason;
  pod.container_statuses[0].waiting_message = said;
  const PodView seen = view_pod(pod);
  p.phase = "Pending";
  p.ready = false;
  p.start_failure = seen.start_failure;
  p.start_failure_message = seen.start_failure_message;
  return p;
}

json admitted_status() { return {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}, {"startTime", "2026-11-22T03:00:00Z"}}; }

TEST(StartFailure, TheKubeletsWaitingReasonsMapToTheTasksWords) {
  api::Pod pod;
  pod.phase = "Pending";
  pod.init_container_statuses.push_back({});
  pod.init_container_statuses[0].name = "fetch";
  pod.init_container_statuses[0].waiting_reason = "CreateContainerConfigError";
  pod.init_container_statuses[0].waiting_message = "secret \"s3-creds\" not found";
  auto f = start_failure(pod);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->reason, "ContainerConfigError");
  EXPECT_EQ(f->message, "fetch: CreateContainerConfigError: secret \"s3-creds\" not found");
  for (const char* r : {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"}) {
    pod.init_container_statuses[0].waiting_reason = r;
    EXPECT_EQ(start_failure(pod)->reason, "ImagePullFailed") << r;
  }
  for (const char* r : {"CreateContainerError", "RunContainerError", "CrashLoopBackOff"}) {
    pod.init_container_statuses[0].waiting_reason = r;
    EXPECT_EQ(start_failure(pod)->reason, "ContainerStartFailed") << r;
  }
  pod.init_container_statuses[0].waiting_reason = "ContainerCreating";
  EXPECT_FALSE(start_failure(pod)) << "still starting is not a failure";
  pod.init_container_statuses[0].waiting_reason = "PodInitializing";
  EXPECT_FALSE(start_failure(pod));
  // kube-scheduler cannot place an unpinned pod (a launcher); a pinned worker is the planner's to move.
  pod.conditions.push_back({"PodScheduled", "False", "Unschedulable", "0/9 nodes are available: 9 Insufficient cpu.", std::nullopt});
  EXPECT_EQ(start_failure(pod)->reason, "Unschedulable");
  EXPECT_EQ(start_failure(pod)->message, "0/9 nodes are available: 9 Insufficient cpu.");
  pod.pinned = "n1";
  EXPECT_FALSE(start_failure(pod));
  pod.pinned.clear();
  pod.deleting = true;
  EXPECT_FALSE(start_failure(pod)) << "a pod going away is not reported";
  EXPECT_TRUE(is_start_failure_reason("ImagePullFailed"));
  EXPECT_FALSE(is_start_failure_reason("Waiting"));
}

TEST(StartFailure, SaysWhyAtOnceWithOneEventAndKeepsTheGpusThroughTheGrace) {
  auto pods = running_pods(1, 2);
  pods[0] = not_starting(pods[0], "ImagePullBackOff", "Back-off pulling image \"valley-trian:dev\"");
  Observed o = observe(task_object({}, admitted_status()), pods);
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Admitted");
  EXPECT_EQ(d.status["reason"], "ImagePullFailed");
  EXPECT_EQ(d.status["message"], "t-worker-0: worker: ImagePullBackOff: Back-off pulling image \"valley-trian:dev\"");
  const json* c = api::find_condition(d.status, "PodsStarted");
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["status"], "False");
  EXPECT_EQ((*c)["reason"], "ImagePullFailed");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "ImagePullFailed");
  EXPECT_TRUE(d.delete_pods.empty()) << "within the grace the pods stay: a registry may come back";
  ASSERT_TRUE(d.requeue_after);
  EXPECT_LE(*d.requeue_after, 181s);
  // Seen again within the grace: no new Event.
  o.task["status"] = d.status;
  o.now = kNow + 60s;
  EXPECT_TRUE(decide(o).events.empty());
}

TEST(StartFailure, ARunningEpochsPodsHaveStarted) {
  auto pods = running_pods(1, 2);
  pods[0] = not_starting(pods[0], "CrashLoopBackOff", "");
  pods[0].phase = "Running";
  Decision d = decide(observe(task_object({}, running_status()), pods));
  EXPECT_EQ(d.status["phase"], "Running");
  EXPECT_EQ(api::find_condition(d.status, "PodsStarted"), nullptr);
}

TEST(StartFailure, PastTheGraceTheGpusGoBackAndTheTaskWaitsItsBackoff) {
  auto pods = running_pods(1, 2);
  pods[2] = not_starting(pods[2], "ErrImagePull", "pull access denied");  // the launcher
  Observed o = observe(task_object({{"runPolicy", {{"startGraceSeconds", 60}}}}, admitted_status()), pods);
  Decision first = decide(o);
  o.task["status"] = first.status;
  o.now = kNow + 61s;
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Pending");
  EXPECT_EQ(d.status["reason"], "ImagePullFailed");
  EXPECT_EQ(d.status["restarts"]["startFailures"], 1);
  EXPECT_EQ(d.status["startFailure"]["retryAfter"], kube::format_time(o.now + 60s));
  EXPECT_EQ(d.status["startFailure"]["generation"], 1);
  EXPECT_EQ(d.delete_pods.size(), 3u) << "every pod of the epoch goes: its GPUs are given back";
  EXPECT_TRUE(std::any_of(d.events.begin(), d.events.end(), [](const EventSpec& e) { return e.reason == "StartFailed"; }));
  EXPECT_EQ(start_backoff_until(*o.parsed.spec, d.status), o.now + 60s);

  // During the backoff, an admission (a stale one) does not start it, and it keeps saying why.
  o.task["status"] = d.status;
  o.pods.clear();
  o.now += 30s;
  Decision waiting = decide(o);
  EXPECT_EQ(waiting.status["phase"], "Pending");
  EXPECT_EQ(waiting.status["reason"], "ImagePullFailed");
  EXPECT_TRUE(waiting.create.empty());
  // After it, the planner's admission starts a new epoch.
  o.now += 31s;
  Decision again = decide(o);
  EXPECT_EQ(again.status["epoch"], 2);
  EXPECT_FALSE(again.create.empty());
}

TEST(StartFailure, MoreFailedStartsThanTheBackoffLimitFailTheTask) {
  auto pods = running_pods(1, 2);
  pods[1] = not_starting(pods[1], "CreateContainerConfigError", "secret \"s3-creds\" not found");
  json status = admitted_status();
  status["restarts"] = {{"startFailures", 2}, {"total", 2}};  // backoffLimit 2 in the fixture
  Observed o = observe(task_object({{"runPolicy", {{"startGraceSeconds", 0}}}}, status), pods);
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Failed");
  EXPECT_EQ(d.status["reason"], "ContainerConfigError");
  EXPECT_NE(d.status["message"].get<std::string>().find("3 starts failed"), std::string::npos) << d.status["message"];

  // A launcher no node takes is retried however often: the cluster may make room.
  auto unplaced = running_pods(1, 2);
  unplaced[2].phase = "Pending";
  unplaced[2].ready = false;
  unplaced[2].start_failure = "Unschedulable";
  unplaced[2].start_failure_message = "0/9 nodes are available: 9 Insufficient cpu.";
  Decision retried = decide(observe(task_object({{"runPolicy", {{"startGraceSeconds", 0}}}}, status), unplaced));
  EXPECT_EQ(retried.status["phase"], "Pending");
  EXPECT_EQ(retried.status["reason"], "Unschedulable");
}

// A gang on capacity still to be bought: waiting for its nodes is said (a Normal Event), not a
// failure; past the provisioning timeout the gang's pods go (no half-bought gang holds nodes), the
// task says the nodes did not come, and it is retried however often (not the task's fault).
TEST(StartFailure, AGangWaitingForNodesToBeBoughtGivesItsPodsBackAfterTheProvisioningTimeout) {
  api::Pod pod;
  pod.name = "t-worker-1";
  pod.phase = "Pending";
  pod.bought_from = "a100-od";
  pod.conditions.push_back({"PodScheduled", "False", "Unschedulable", "0/9 nodes are available: 9 node(s) didn't match Pod's node affinity.", std::nullopt});
  ASSERT_TRUE(start_failure(pod));
  EXPECT_EQ(start_failure(pod)->reason, kAwaitingNodes);
  EXPECT_NE(start_failure(pod)->message.find("waiting for a node NodePool a100-od is to buy"), std::string::npos);

  auto pods = running_pods(1, 2);
  for (auto& p : pods) p.phase = "Pending", p.ready = false;
  pods[1].start_failure = kAwaitingNodes;
  pods[1].start_failure_message = start_failure(pod)->message;
  json status = admitted_status();
  status["restarts"] = {{"startFailures", 5}, {"total", 5}};  // beyond backoffLimit 2: still retried
  Observed o = observe(task_object({{"runPolicy", {{"startGraceSeconds", 0}}}}, status), pods);
  o.disruption.provisioning_timeout = 600s;
  Decision first = decide(o);
  EXPECT_EQ(first.status["phase"], "Admitted");
  EXPECT_EQ(first.status["reason"], kAwaitingNodes);
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].type, "Normal");
  EXPECT_TRUE(first.delete_pods.empty()) << "the start grace (0s) is not what a gang being bought waits";
  o.task["status"] = first.status;
  o.now = kNow + 601s;
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Pending");
  EXPECT_EQ(d.status["reason"], kNodesNotProvisioned);
  EXPECT_NE(d.status["message"].get<std::string>().find("no node came; the gang's pods given back"), std::string::npos) << d.status["message"];
  EXPECT_EQ(d.delete_pods.size(), 3u);
  EXPECT_EQ(d.status["startFailure"]["reason"], kNodesNotProvisioned);
}

TEST(StartFailure, AChangedSpecIsTriedAtOnce) {
  auto pods = running_pods(1, 2);
  pods[0] = not_starting(pods[0], "ImagePullBackOff", "not found");
  Observed o = observe(task_object({}, admitted_status()), pods);
  Decision failing = decide(o);
  // The user fixes the image: a new generation.
  o.task["status"] = failing.status;
  o.task["metadata"]["generation"] = 2;
  o.task["spec"]["worker"]["image"] = "w:fixed";
  o.parsed = api::parse_task(o.task);
  Decision d = decide(o);
  EXPECT_EQ(d.status["epoch"], 2);
  EXPECT_EQ(d.status["phase"], "Restarting");
  EXPECT_EQ(d.status["reason"], "SpecChanged");
  EXPECT_FALSE(d.delete_pods.empty()) << "the old epoch's pods go";
  // In its backoff, too: the new generation is not held back.
  json backing_off = failing.status;
  backing_off["startFailure"] = {{"reason", "ImagePullFailed"}, {"retryAfter", kube::format_time(kNow + 3600s)}, {"generation", 1}};
  o.task["status"] = backing_off;
  EXPECT_FALSE(start_backoff_until(*o.parsed.spec, backing_off));
}

}  // namespace
}  // namespace valley::lifecycle
