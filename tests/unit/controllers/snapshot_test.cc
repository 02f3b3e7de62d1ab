#include "controllers/gpu/pod_requests.h"
#include "controllers/inputs/snapshot.h"

#include <gtest/gtest.h>

namespace valley::planner {
namespace {

json node(const std::string& name, json labels, json allocatable, json taints = json::array(), bool ready = true,
          bool cordoned = false) {
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"taints", taints}, {"unschedulable", cordoned}}},
          {"status", {{"allocatable", allocatable}, {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

TEST(Snapshot, NodeVendorClassAndGpuCapacity) {
  Node n = node_from(node("a", {{"karpenter.sh/capacity-type", "spot"}}, {{"cpu", "96"}, {"nvidia.com/gpu", "8"}, {"pods", "110"}}));
  EXPECT_EQ(n.vendor, "nvidia");
  EXPECT_EQ(n.capacity_class, "spot");
  EXPECT_EQ(n.free, (std::map<std::string, int64_t>{{"nvidia.com/gpu", 8}}));
  EXPECT_TRUE(n.schedulable);
  Node m = node_from(node("m", {{"cloud.google.com/gke-spot", "true"}}, {{"amd.com/gpu", "4"}}));
  EXPECT_EQ(m.vendor, "amd");
  EXPECT_EQ(m.capacity_class, "spot");
  Node mig = node_from(node("g", json::object(), {{"nvidia.com/mig-1g.10gb", "14"}, {"nvidia.com/gpu", "5"}}));
  EXPECT_EQ(mig.vendor, "nvidia");
  EXPECT_EQ(mig.free["nvidia.com/mig-1g.10gb"], 14);
  EXPECT_EQ(node_from(node("cpu", json::object(), {{"cpu", "8"}})).vendor, "");
}

TEST(Snapshot, NotReadyCordonedOrNoticedNodesTakeNoWork) {
  json gpus = {{"nvidia.com/gpu", "8"}};
  EXPECT_FALSE(node_from(node("a", json::object(), gpus, json::array(), false)).schedulable);
  EXPECT_FALSE(node_from(node("a", json::object(), gpus, json::array(), true, true)).schedulable);
  Node noticed = node_from(node("a", json::object(), gpus, {{{"key", "aws-node-termination-handler/spot-itn"}, {"effect", "NoSchedule"}}}));
  EXPECT_FALSE(noticed.schedulable);
  Node tainted = node_from(node("a", json::object(), gpus, {{{"key", "team"}, {"value", "b"}, {"effect", "NoSchedule"}}}));
  EXPECT_TRUE(tainted.schedulable);
  ASSERT_EQ(tainted.taints.size(), 1u);
  EXPECT_EQ(tainted.taints[0].key, "team");
}

// GPU faults as NVSentinel (conditions, taints) or Node Problem Detector report them: the node
// takes no work and says what is wrong; a condition that is False, or not a fault type, changes
// nothing.
TEST(Snapshot, NodesReportingAGpuFaultTakeNoWorkAndSayWhy) {
  json gpus = {{"nvidia.com/gpu", "8"}};
  json xid = node("a", json::object(), gpus);
  xid["status"]["conditions"].push_back({{"type", "SysLogsXIDError"}, {"status", "True"},
                                         {"message", "[79] GPU has fallen off the bus on GPU 3 - RecommendedAction: RESTART_BM"}});
  Node n = node_from(xid);
  EXPECT_FALSE(n.schedulable);
  EXPECT_EQ(n.fault, "condition SysLogsXIDError: [79] GPU has fallen off the bus on GPU 3 - RecommendedAction: RESTART_BM");
  json mem = node("b", json::object(), gpus);
  mem["status"]["conditions"].push_back({{"type", "GpuMemWatch"}, {"status", "True"}});
  EXPECT_EQ(node_from(mem).fault, "condition GpuMemWatch");  // Gpu*Watch
  json cleared = node("c", json::object(), gpus);
  cleared["status"]["conditions"].push_back({{"type", "GpuMemWatch"}, {"status", "False"}});
  cleared["status"]["conditions"].push_back({{"type", "KernelDeadlock"}, {"status", "True"}});  // NPD, not a GPU fault by default
  EXPECT_TRUE(node_from(cleared).schedulable);
  EXPECT_EQ(node_from(cleared).fault, "");
  Node tainted = node_from(node("d", json::object(), gpus, {{{"key", "nvidia.com/gpu-xid-error"}, {"value", "true"}, {"effect", "NoSchedule"}}}));
  EXPECT_FALSE(tainted.schedulable);
  EXPECT_EQ(tainted.fault, "taint nvidia.com/gpu-xid-error=true");
  // Configured: a Node Problem Detector rule's own condition.
  NodeFacts facts;
  facts.gpu_fault_conditions = {"GPUProblem"};
  json npd = node("e", json::object(), gpus);
  npd["status"]["conditions"].push_back({{"type", "GPUProblem"}, {"status", "True"}, {"message", std::string(300, 'x')}});
  Node e = node_from(npd, facts);
  EXPECT_FALSE(e.schedulable);
  EXPECT_EQ(e.fault.size(), std::string("condition GPUProblem: ").size() + 203);  // long messages are cut
  EXPECT_TRUE(node_from(mem, facts).schedulable);
}

TEST(Snapshot, PatternsMatchWithStars) {
  EXPECT_TRUE(matches_pattern("Gpu*Watch", "GpuMemWatch"));
  EXPECT_TRUE(matches_pattern("Gpu*Watch", "GpuWatch"));
  EXPECT_FALSE(matches_pattern("Gpu*Watch", "GpuMemWatcher"));
  EXPECT_FALSE(matches_pattern("Gpu*Watch", "SysGpuMemWatch"));
  EXPECT_TRUE(matches_pattern("*", ""));
  EXPECT_TRUE(matches_pattern("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(matches_pattern("a*b*c", "aXXbYYb"));
  EXPECT_TRUE(matches_pattern("SysLogsXIDError", "SysLogsXIDError"));
  EXPECT_FALSE(matches_pattern("", "x"));
}

TEST(Snapshot, PodUsageCountsRequestsOrLimitsAndNothingOnceFinished) {
  json pod = json::parse(R"({"spec":{"nodeName":"a","containers":[
      {"resources":{"limits":{"nvidia.com/gpu":"2"}}},
      {"resources":{"requests":{"nvidia.com/gpu":"1","cpu":"4"},"limits":{"nvidia.com/gpu":"1"}}}],
    "initContainers":[{"resources":{"limits":{"nvidia.com/gpu":"4"}}}]},"status":{"phase":"Running"}})");
  EXPECT_EQ(gpu::gpu_usage(api::pod_from(pod)), (std::map<std::string, int64_t>{{"nvidia.com/gpu", 4}}));  // init max(4) over sum(3)
  pod["status"]["phase"] = "Succeeded";
  EXPECT_TRUE(gpu::gpu_usage(api::pod_from(pod)).empty());
  Node n = node_from(node("a", json::object(), {{"nvidia.com/gpu", "8"}}));
  pod["status"]["phase"] = "Running";
  subtract(n, api::pod_from(pod));
  EXPECT_EQ(n.free["nvidia.com/gpu"], 4);
}

TEST(Snapshot, TaskWithItsLiveWorkersOfTheCurrentEpoch) {
  json obj = json::parse(R"({"metadata":{"name":"t","namespace":"ns","uid":"u","creationTimestamp":"2026-11-22T03:00:00Z"},
    "spec":{"priority":30,"replicas":{"min":2,"max":6},"reduceCost":true,"master":{"image":"l"},"worker":{"image":"w","gpus":"2"}},
    "status":{"phase":"Running","epoch":2,"lastResizeTime":"2026-11-22T03:10:00Z"}})");
  auto spec = *api::parse_task(obj).spec;
  auto worker = [](int index, int epoch, const std::string& node, const std::string& phase) {
    return json{{"metadata", {{"labels", {{"valley.dev/role", "worker"}, {"valley.dev/epoch", std::to_string(epoch)},
                                          {"valley.dev/worker-index", std::to_string(index)}}}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}},
                {"status", {{"phase", phase}}}};
  };
  std::vector<api::Pod> pods;
  for (const json& p : {worker(1, 2, "n2", "Running"), worker(0, 2, "n1", "Running"), worker(0, 1, "old", "Running"), worker(2, 2, "n3", "Failed")})
    pods.push_back(api::pod_from(p));
  Task t = task_from(spec, obj, pods);
  EXPECT_EQ(t.key, "ns/t");
  EXPECT_TRUE(t.admitted);
  EXPECT_TRUE(t.reduce_cost);
  EXPECT_EQ(t.gpu_milli, 2000);
  ASSERT_EQ(t.workers.size(), 2u);  // the epoch-1 pod and the failed one do not count
  EXPECT_EQ(t.workers[0].node, "n1");
  EXPECT_EQ(t.workers[1].count, 2);
  EXPECT_TRUE(t.last_resize.has_value());
  EXPECT_TRUE(t.workers[0].bound);
  EXPECT_EQ(t.workers[1].index, 1);
  obj["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(task_from(spec, obj, pods).admitted);
}

// The plan published for a task stands for its workers until their pods show them; a bound pod
// shows where its GPUs are, even where the plan has moved it since.
TEST(Snapshot, PlannedWorkersAreThePublishedPlacementExceptWherePodsAreBound) {
  const std::vector<Task::Worker> published = {{"n1", "nvidia.com/gpu", 1}, {"n5", "nvidia.com/gpu", 1}, {"n3", "nvidia.com/gpu", 1}};
  std::vector<Task::Worker> live = {{"n1", "nvidia.com/gpu", 1, true, 0}, {"n2", "nvidia.com/gpu", 1, true, 1},
                                    {"n9", "nvidia.com/gpu", 1, false, 2}, {"n7", "nvidia.com/gpu", 1, true, 7}};
  auto planned = planned_workers(published, live);
  ASSERT_EQ(planned.size(), 3u);  // index 7 is beyond the plan: that pod is going
  EXPECT_EQ(planned[0].node, "n1");
  EXPECT_EQ(planned[1].node, "n2");  // bound there, whatever the plan says
  EXPECT_EQ(planned[2].node, "n3");  // pinned to n9 but unbound: it is re-created where planned
  EXPECT_TRUE(planned_workers(published, {}).size() == 3u);
}

TEST(Snapshot, OnlyUpdatesThatCanMoveGpusWakeThePlanner) {
  json pod = json::parse(R"({"kind":"Pod","metadata":{"name":"t-worker-0","resourceVersion":"1","labels":{"valley.dev/epoch":"1"}},
    "spec":{"containers":[{"name":"w","resources":{"limits":{"nvidia.com/gpu":"1"}}}]},
    "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}})");
  json progressed = pod;
  progressed["metadata"]["resourceVersion"] = "2";
  progressed["status"] = json::parse(R"({"phase":"Running","conditions":[{"type":"Ready","status":"True"}],
    "containerStatuses":[{"name":"w","ready":true}]})");
  EXPECT_FALSE(replan_needed(api::pod_from(pod), api::pod_from(progressed)));  // Pending to Running, Ready flips: the same GPUs held
  json bound = pod;
  bound["spec"]["nodeName"] = "n1";
  EXPECT_TRUE(replan_needed(api::pod_from(pod), api::pod_from(bound)));
  json ended = progressed;
  ended["status"]["phase"] = "Succeeded";
  EXPECT_TRUE(replan_needed(api::pod_from(progressed), api::pod_from(ended)));  // its GPUs are free
  json deleting = progressed;
  deleting["metadata"]["deletionTimestamp"] = "2026-11-25T09:00:00Z";
  EXPECT_TRUE(replan_needed(api::pod_from(progressed), api::pod_from(deleting)));
  json relabeled = pod;
  relabeled["metadata"]["labels"]["valley.dev/epoch"] = "2";
  EXPECT_TRUE(replan_needed(api::pod_from(pod), api::pod_from(relabeled)));

  json gpus = {{"nvidia.com/gpu", "8"}};
  json n = node("a", json::object(), gpus);
  json heartbeat = n;
  heartbeat["metadata"]["resourceVersion"] = "7";
  EXPECT_FALSE(replan_needed(n, heartbeat));  // lastHeartbeatTime is not cached (lean_node)
  EXPECT_TRUE(replan_needed(n, node("a", json::object(), gpus, json::array(), false)));
  EXPECT_TRUE(replan_needed(n, node("a", json::object(), gpus, {{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}})));
  EXPECT_TRUE(replan_needed(n, node("a", json::object(), {{"nvidia.com/gpu", "7"}})));

  json task = json::parse(R"({"kind":"TrainingTask","metadata":{"name":"t","generation":1,"resourceVersion":"5"},
    "spec":{"replicas":{"min":1,"max":2}},"status":{"phase":"Running","epoch":1,"cost":{"accruedMicros":100}}})");
  json costed = task;
  costed["metadata"]["resourceVersion"] = "6";
  costed["status"]["cost"]["accruedMicros"] = 200;
  EXPECT_FALSE(replan_needed(task, costed));  // the periodic plan reads it within 2 s
  json resized = task;
  resized["metadata"]["generation"] = 2;
  resized["spec"]["replicas"]["max"] = 4;
  EXPECT_TRUE(replan_needed(task, resized));
  json restarting = costed;
  restarting["status"]["phase"] = "Restarting";
  EXPECT_TRUE(replan_needed(task, restarting));
}

TEST(Snapshot, TaskPlacementConstraintsComeFromTheWorkerTemplate) {
  json obj = json::parse(R"({"metadata":{"name":"t","namespace":"ns"},
    "spec":{"master":{"image":"l"},"worker":{"image":"w","template":{"spec":{
      "nodeSelector":{"topology.kubernetes.io/zone":"zone-b"},
      "tolerations":[{"key":"dedicated","operator":"Equal","value":"ml","effect":"NoSchedule"},{"key":"valley.dev/spot","operator":"Exists"}]}}}}})");
  Task t = task_from(*api::parse_task(obj).spec, obj, {});
  EXPECT_EQ(t.node_selector.at("topology.kubernetes.io/zone"), "zone-b");
  ASSERT_EQ(t.tolerations.size(), 2u);
  EXPECT_EQ(t.tolerations[0].key, "dedicated");
  EXPECT_EQ(t.tolerations[1].op, "Exists");
  // The launcher's come from the master template; it asks for a pod slot besides what it requests.
  ASSERT_TRUE(t.launcher.has_value());
  EXPECT_TRUE(t.launcher->node_selector.empty());
  EXPECT_EQ(t.launcher->room.at("pods"), 1);
  obj["spec"]["master"]["template"] = json::parse(R"({"spec":{"nodeSelector":{"pool":"cpu"},
      "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
        {"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]}]}}},
      "tolerations":[{"key":"spot","operator":"Exists"}],
      "containers":[{"name":"launcher","resources":{"requests":{"cpu":"2"}}}]}})");
  Task with_launcher = task_from(*api::parse_task(obj).spec, obj, {});
  ASSERT_TRUE(with_launcher.launcher.has_value());
  EXPECT_EQ(with_launcher.launcher->node_selector.at("pool"), "cpu");
  ASSERT_EQ(with_launcher.launcher->node_terms.size(), 1u);
  EXPECT_EQ(with_launcher.launcher->node_terms[0][0].values, std::vector<std::string>{"spot"});
  ASSERT_EQ(with_launcher.launcher->tolerations.size(), 1u);
  EXPECT_EQ(with_launcher.launcher->room.at("cpu"), 2000);
  // A task of one pod has no launcher.
  obj["spec"]["taskType"] = "Single";
  EXPECT_FALSE(task_from(*api::parse_task(obj).spec, obj, {}).launcher.has_value());
}

}  // namespace
}  // namespace valley::planner
