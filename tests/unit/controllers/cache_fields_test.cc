#include "controllers/task/cache_fields.h"

#include <gtest/gtest.h>

#include "controllers/api/dra.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/api/pod.h"
#include "controllers/lifecycle/lifecycle.h"

namespace valley::task {
namespace {

using json = nlohmann::json;

// A worker pod as the API server returns it once it ran and ended: everything a kubelet and the
// admission chain add around what Valley reads.
json full_pod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "t-worker-1", "namespace": "ns", "uid": "p-1", "resourceVersion": "42", "generation": 1,
      "creationTimestamp": "2026-11-24T09:00:00Z", "deletionTimestamp": "2026-11-24T09:30:00Z", "deletionGracePeriodSeconds": 30,
      "labels": {"app.kubernetes.io/managed-by": "valley", "valley.dev/task": "t", "valley.dev/role": "worker",
                 "valley.dev/epoch": "2", "valley.dev/worker-index": "1"},
      "annotations": {"kwok.x-k8s.io/node": "fake", "checksum": "abc", "valley.dev/hostfile": "t-worker-0.t-workers.ns.svc slots=1\n", "valley.dev/priced-as": "nvidia/spot/A100"},
      "ownerReferences": [{"apiVersion": "valley.dev/v1beta1", "kind": "TrainingTask", "name": "t", "uid": "u-1", "controller": true}],
      "finalizers": ["valley.dev/accounting"],
      "managedFields": [{"manager": "valley", "fieldsV1": {"f:spec": {}}}]},
    "spec": {"nodeName": "a100-1", "hostname": "t-worker-1", "subdomain": "t-workers", "restartPolicy": "Never",
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a100-1"]}]}]}}},
      "volumes": [{"name": "ssh", "secret": {"secretName": "t-ssh"}}],
      "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
      "initContainers": [{"name": "wait", "image": "busybox", "command": ["sh"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
      "containers": [{"name": "worker", "image": "train:1", "command": ["/usr/sbin/sshd"], "args": ["-D"],
        "env": [{"name": "VALLEY_SSH_PORT", "value": "2222"}, {"name": "VALLEY_RECORDS", "value": "{\"valley.dev/priced-as\":\"nvidia/spot/A100\"}"},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}], "volumeMounts": [{"name": "ssh", "mountPath": "/etc/valley/ssh"}],
        "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "2", "cpu": "1"}},
        "securityContext": {"runAsNonRoot": true}}]},
    "status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory.",
      "hostIP": "10.0.0.1", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}], "qosClass": "Burstable",
      "startTime": "2026-11-24T09:00:05Z",
      "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "lastTransitionTime": "2026-11-24T09:29:00Z",
                      "lastProbeTime": null, "observedGeneration": 1},
                     {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-24T09:29:00Z"}],
      "containerStatuses": [{"name": "worker", "image": "train:1", "imageID": "sha256:1", "containerID": "containerd://1", "ready": false,
        "restartCount": 0, "started": false,
        "state": {"terminated": {"exitCode": 137, "reason": "Error", "message": "checkpoint 1200", "startedAt": "2026-11-24T09:00:06Z",
                                 "finishedAt": "2026-11-24T09:29:30Z", "containerID": "containerd://1"}},
        "lastState": {"terminated": {"exitCode": 1, "startedAt": "2026-11-24T08:59:00Z", "finishedAt": "2026-11-24T09:00:04Z",
                                     "containerID": "containerd://0"}}}]}})");
}

json full_node() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "a100-1", "uid": "n-1", "resourceVersion": "7",
      "labels": {"karpenter.sh/capacity-type": "spot", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
      "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
      "managedFields": [{"manager": "kubelet"}]},
    "spec": {"taints": [{"key": "nvidia.com/gpu-xid-error", "value": "79", "effect": "NoSchedule"}], "unschedulable": false},
    "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "96"}, "capacity": {"nvidia.com/gpu": "8"},
      "conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "PLEG",
                      "lastHeartbeatTime": "2026-11-24T09:29:59Z", "lastTransitionTime": "2026-11-24T09:20:00Z"},
                     {"type": "GpuMemWatch", "status": "True", "message": "ECC on GPU 3", "lastHeartbeatTime": "2026-11-24T09:29:59Z",
                      "lastTransitionTime": "2026-11-24T09:21:00Z"}],
      "images": [{"names": ["train:1"], "sizeBytes": 123456789}], "nodeInfo": {"kubeletVersion": "v1.34.4"},
      "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}})");
}

TEST(CacheFields, ThePodReadersSeeTheSameInALeanPod) {
  const json full = full_pod();
  json lean = full;
  lean_pod(lean);
  EXPECT_LT(lean.dump().size(), full.dump().size() * 2 / 3);
  EXPECT_EQ(lean["metadata"]["annotations"], json({{"valley.dev/hostfile", "t-worker-0.t-workers.ns.svc slots=1\n"}, {"valley.dev/priced-as", "nvidia/spot/A100"}}));
  EXPECT_FALSE(lean["spec"].contains("volumes"));
  // Of the environment, names and values (Valley's sealed records are one of them).
  EXPECT_EQ(lean["spec"]["containers"][0]["env"].size(), 3u);
  EXPECT_FALSE(lean["spec"]["containers"][0]["env"][2].contains("valueFrom"));
  EXPECT_FALSE(lean["status"]["conditions"][0].contains("lastProbeTime"));
  EXPECT_FALSE(lean["status"]["containerStatuses"][0]["state"]["terminated"].contains("containerID"));
  EXPECT_EQ(lean["status"]["containerStatuses"][0]["lastState"]["terminated"]["startedAt"], "2026-11-24T08:59:00Z");

  // The typed pod the cache holds is the same made from either: the mask keeps all it reads.
  const api::Pod a = api::pod_from(full), b = api::pod_from(lean);
  EXPECT_TRUE(a == b);
  // And it holds what the readers go by.
  EXPECT_EQ(a.key(), "ns/t-worker-1");
  EXPECT_EQ(a.uid, "p-1");
  EXPECT_EQ(a.resource_version, "42");
  EXPECT_EQ(a.label("valley.dev/worker-index"), "1");
  EXPECT_EQ(a.label("absent"), "");
  EXPECT_EQ(a.priced_as, api::price_class("nvidia/spot/A100"));
  EXPECT_EQ(a.owner_uids, std::vector<std::string>{"u-1"});
  EXPECT_EQ(a.finalizers, std::vector<std::string>{"valley.dev/accounting"});
  EXPECT_TRUE(a.deleting);
  EXPECT_EQ(a.deletion_timestamp, kube::parse_time("2026-11-24T09:30:00Z"));
  EXPECT_EQ(a.pinned, "a100-1");
  EXPECT_EQ(a.hostfile, "t-worker-0.t-workers.ns.svc slots=1\n");
  ASSERT_EQ(a.containers.size(), 1u);
  EXPECT_EQ(a.containers[0].requests, (std::vector<std::pair<std::string, int64_t>>{{"cpu", 1000}, {"nvidia.com/gpu", 2}}))
      << "cpu in thousandths, as kube-scheduler counts it";
  ASSERT_EQ(a.conditions.size(), 2u);
  EXPECT_EQ(a.conditions[0].reason, "EvictionByEvictionAPI");
  ASSERT_EQ(a.container_statuses.size(), 1u);
  EXPECT_TRUE(a.container_statuses[0].terminated);
  EXPECT_FALSE(a.container_statuses[0].running);
  EXPECT_EQ(a.container_statuses[0].exit_code, 137);
  const lifecycle::PodView v = lifecycle::view_pod(a);
  EXPECT_EQ(json({v.role, v.epoch, v.worker_index, v.phase, v.ready, v.exit_code.value_or(-1), v.node, v.disruption, v.termination_message}),
            json({"worker", 2, 1, "Failed", false, 137, "a100-1", "EvictionByEvictionAPI", "checkpoint 1200"}));
  EXPECT_EQ(v.hostfile, a.hostfile);
  EXPECT_EQ(v.finished_at, kube::parse_time("2026-11-24T09:29:30Z"));
  const cost::PodUse u = cost::pod_use(a);
  EXPECT_EQ(u.share_milli, 2000);  // the init container's 1 GPU is within the worker's 2
  EXPECT_EQ(u.start, kube::parse_time("2026-11-24T08:59:00Z")) << "the first start, from lastState";
  EXPECT_EQ(u.end, kube::parse_time("2026-11-24T09:29:30Z"));
}

TEST(CacheFields, TheNodeReaderSeesTheSameInALeanNode) {
  const json full = full_node();
  json lean = full;
  lean_node(lean);
  EXPECT_FALSE(lean["status"].contains("images"));
  EXPECT_FALSE(lean["status"]["conditions"][0].contains("lastHeartbeatTime"));
  const planner::Node a = planner::node_from(full), b = planner::node_from(lean);
  EXPECT_EQ(json({a.name, a.vendor, a.capacity_class, a.free, a.capacity, a.labels, a.schedulable, a.ready, a.notice, a.fault}),
            json({b.name, b.vendor, b.capacity_class, b.free, b.capacity, b.labels, b.schedulable, b.ready, b.notice, b.fault}));
  EXPECT_EQ(a.not_ready_since, b.not_ready_since);
  EXPECT_EQ(a.taints.size(), b.taints.size());
}

TEST(CacheFields, TheInformersParseWhatLeanPodAndLeanNodeKeep) {
  json pod = full_pod(), node = full_node();
  lean_pod(pod);
  lean_node(node);
  EXPECT_EQ(pod_fields()->parse(full_pod().dump()), pod);
  EXPECT_EQ(node_fields()->parse(full_node().dump()), node);
}

// A ResourceClaim as the claims informer keeps it: what dra_claim_from reads, and nothing of its
// spec, reservations or devices' status.
TEST(CacheFields, TheClaimReaderSeesTheSameInALeanClaim) {
  const json full = json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"job-worker-0-gpus-x","namespace":"team","uid":"u","resourceVersion":"7","labels":{"app.kubernetes.io/managed-by":"valley"},
                "managedFields":[{"manager":"kube-scheduler"}],"ownerReferences":[{"uid":"p"}]},
    "spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}},
    "status":{"allocation":{"devices":{"results":[{"request":"gpus","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-0"},
                                                  {"request":"gpus","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-1"}],
                                       "config":[{"source":"FromClass"}]},
                            "nodeSelector":{"nodeSelectorTerms":[]}},
              "reservedFor":[{"resource":"pods","name":"job-worker-0","uid":"p"}],
              "devices":[{"driver":"gpu.nvidia.com","pool":"n1","device":"gpu-0","conditions":[]}]}})");
  json lean = full;
  lean_claim(lean);
  EXPECT_FALSE(lean.contains("spec"));
  EXPECT_FALSE(lean["status"].contains("reservedFor"));
  EXPECT_FALSE(lean["metadata"].contains("managedFields"));
  EXPECT_EQ(api::dra_claim_from(full), api::dra_claim_from(lean));
  EXPECT_EQ(api::dra_claim_from(lean).allocated.size(), 2u);
  EXPECT_EQ(claim_fields()->parse(full.dump()), lean);

  // A seats claim keeps its task, node, age and deletion (render::seat_workers reads them).
  json seats = full;
  seats["metadata"]["labels"]["valley.dev/role"] = api::kSeatsClaimRole;
  seats["metadata"]["labels"]["valley.dev/task"] = "job";
  seats["metadata"]["annotations"] = {{api::kSeatsNodeAnnotation, "n1"}, {"other", "x"}};
  seats["metadata"]["creationTimestamp"] = "2026-11-29T10:00:00Z";
  seats["metadata"]["deletionTimestamp"] = "2026-11-29T10:05:00Z";
  json lean_seats = seats;
  lean_claim(lean_seats);
  const api::DraClaim read = api::dra_claim_from(lean_seats);
  EXPECT_EQ(read, api::dra_claim_from(seats));
  EXPECT_EQ(read.seats_task, "team/job");
  EXPECT_EQ(read.seats_node, "n1");
  EXPECT_EQ(read.created, api::dra_claim_from(seats).created);
  EXPECT_TRUE(read.created.has_value());
  EXPECT_TRUE(read.deleting);
  EXPECT_FALSE(lean_seats["metadata"]["annotations"].contains("other"));

  // Cached typed, a claim whose reservations and resourceVersion changed is the same claim (the
  // informer calls no handler); one whose allocation changed is not.
  using Traits = kube::ObjectTraits<api::DraClaim>;
  json released = full;
  released["metadata"]["resourceVersion"] = "8";
  released["status"].erase("reservedFor");
  const auto before = Traits::from(json(full)), after = Traits::from(std::move(released));
  EXPECT_EQ(Traits::resource_version(after), "8");
  EXPECT_TRUE(Traits::same_but_resource_version(before, after));
  json reallocated = full;
  reallocated["status"]["allocation"]["devices"]["results"][1]["device"] = "gpu-2";
  EXPECT_FALSE(Traits::same_but_resource_version(before, Traits::from(std::move(reallocated))));
}

TEST(CacheFields, OddObjectsAreLeftAlone) {
  json not_an_object = json::array({1, 2});
  lean_pod(not_an_object);
  lean_node(not_an_object);
  EXPECT_EQ(not_an_object, json::array({1, 2}));
  json odd = {{"metadata", "x"}, {"spec", {{"containers", "y"}}}, {"status", 3}};
  lean_pod(odd);
  EXPECT_EQ(odd["spec"]["containers"], "y");
}

}  // namespace
}  // namespace valley::task
