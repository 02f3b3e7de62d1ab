// GPUs shared as replicas by the NVIDIA device plugin, through MPS or time-slicing: a node that says
// its split counts its replicas as 1/R of a GPU each; a fraction that fits in an MPS replica takes
// one, any fraction takes a time-sliced one; and a worker's pod says the split so that the ledger
// and quotas price it by its share.
#include <gtest/gtest.h>

#include "controllers/api/pod.h"
#include "controllers/cost/engine.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/gpu/resources.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {

json node_json(const std::string& name, const std::string& resource, int units, int replicas, const std::string& strategy = "mps") {
  return {{"metadata",
           {{"name", name},
            {"labels", {{gpu::kSharingStrategyLabel, strategy}, {gpu::kReplicasLabel, std::to_string(replicas)}, {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-SHARED"}}}}},
          {"status",
           {{"allocatable", {{resource, std::to_string(units)}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

TEST(Replicas, NamesCarryTheStrategyTheSplitAndTheDevicePluginsResource) {
  EXPECT_EQ(gpu::replicas_resource(gpu::Sharing::Mps, 4, "nvidia.com/gpu.shared"), "mps:4:nvidia.com/gpu.shared");
  EXPECT_EQ(gpu::replicas_resource(gpu::Sharing::TimeSliced, 4, "nvidia.com/gpu.shared"), "ts:4:nvidia.com/gpu.shared");
  const auto m = gpu::replicas_of("mps:10:nvidia.com/gpu");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->sharing, gpu::Sharing::Mps);
  EXPECT_EQ(m->replicas, 10);
  EXPECT_EQ(m->resource, "nvidia.com/gpu");
  const auto t = gpu::replicas_of("ts:3:nvidia.com/gpu.shared");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->sharing, gpu::Sharing::TimeSliced);
  EXPECT_EQ(t->replicas, 3);
  for (const char* bad : {"mps:1:nvidia.com/gpu", "mps::nvidia.com/gpu", "mps:4:", "mps:x:nvidia.com/gpu", "mps:4", "nvidia.com/gpu", "mps:1000:a/b",
                          "ts:1:nvidia.com/gpu", "ts:4", "tsx:4:nvidia.com/gpu"})
    EXPECT_FALSE(gpu::replicas_of(bad)) << bad;
  EXPECT_EQ(gpu::share_milli("mps:4:nvidia.com/gpu.shared", 3), 750);
  EXPECT_EQ(gpu::share_milli("ts:4:nvidia.com/gpu.shared", 2), 500);
  EXPECT_EQ(gpu::share_milli("nvidia.com/gpu.shared", 1), gpu::kTimeSlicedShareMilli) << "replicas of an unknown split";
  EXPECT_TRUE(gpu::is_gpu_resource("mps:4:nvidia.com/gpu.shared"));
  EXPECT_TRUE(gpu::is_gpu_resource("ts:4:nvidia.com/gpu.shared"));
  EXPECT_EQ(gpu::sharing_kind("mps:4:nvidia.com/gpu.shared"), "mps");
  EXPECT_EQ(gpu::sharing_kind("ts:4:nvidia.com/gpu.shared"), "time-sliced");
}

// Renamed (nvidia.com/gpu.shared) or not (nvidia.com/gpu), the replicas of an MPS or time-slicing
// node are 1/R of a GPU. Without a strategy label only the renamed resource is known to be
// replicas; without the replicas label the split is unknown and the resource stays as it is.
TEST(Replicas, ANodesReplicasAreCountedAsTheirShareAndItsPodsRequestsWithThem) {
  const Node renamed = node_from(node_json("n1", "nvidia.com/gpu.shared", 8, 4), {});
  EXPECT_EQ(renamed.vendor, "nvidia");
  EXPECT_EQ(renamed.replicas_resource, "mps:4:nvidia.com/gpu.shared");
  EXPECT_EQ(renamed.capacity, (std::map<std::string, int64_t>{{"mps:4:nvidia.com/gpu.shared", 8}}));
  const Node plain = node_from(node_json("n2", "nvidia.com/gpu", 20, 10), {});
  EXPECT_EQ(plain.capacity, (std::map<std::string, int64_t>{{"mps:10:nvidia.com/gpu", 20}}));
  const Node sliced = node_from(node_json("n3", "nvidia.com/gpu.shared", 8, 4, "time-slicing"), {});
  EXPECT_EQ(sliced.replicas_resource, "ts:4:nvidia.com/gpu.shared");
  EXPECT_EQ(sliced.capacity, (std::map<std::string, int64_t>{{"ts:4:nvidia.com/gpu.shared", 8}}));
  const Node sliced_plain = node_from(node_json("n4", "nvidia.com/gpu", 8, 2, "time-slicing"), {});
  EXPECT_EQ(sliced_plain.capacity, (std::map<std::string, int64_t>{{"ts:2:nvidia.com/gpu", 8}}));
  const Node unlabelled = node_from(node_json("n5", "nvidia.com/gpu.shared", 16, 4, ""), {});
  EXPECT_EQ(unlabelled.capacity, (std::map<std::string, int64_t>{{"ts:4:nvidia.com/gpu.shared", 16}}));
  const Node whole = node_from(node_json("n6", "nvidia.com/gpu", 8, 4, ""), {});
  EXPECT_EQ(whole.capacity, (std::map<std::string, int64_t>{{"nvidia.com/gpu", 8}})) << "no strategy: whole GPUs, as the resource says";
  json no_split = node_json("n7", "nvidia.com/gpu.shared", 8, 4, "time-slicing");
  no_split["metadata"]["labels"].erase(gpu::kReplicasLabel);
  EXPECT_EQ(node_from(no_split, {}).capacity, (std::map<std::string, int64_t>{{"nvidia.com/gpu.shared", 8}}));

  // A foreign pod asks for the device plugin's resource: the node counts it against its replicas.
  Node n = renamed;
  const api::Pod theirs = api::pod_from({{"metadata", {{"name", "theirs"}, {"namespace", "x"}}},
                                         {"spec", {{"nodeName", "n1"}, {"containers", json::array({{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu.shared", "3"}}}}}}})}}},
                                         {"status", {{"phase", "Running"}}}});
  subtract(n, theirs);
  EXPECT_EQ(n.free["mps:4:nvidia.com/gpu.shared"], 5);
  EXPECT_EQ(n.free.count("nvidia.com/gpu.shared"), 0u);
}

TEST(Replicas, AFractionUpToOneMpsReplicaTakesOneAndALargerOneAWholeGpuElsewhere) {
  Node n = node_from(node_json("n1", "nvidia.com/gpu.shared", 8, 4), {});
  auto quarter = worker_shape(250, n);
  ASSERT_TRUE(quarter);
  EXPECT_EQ(quarter->gpu_resource, "mps:4:nvidia.com/gpu.shared");
  EXPECT_EQ(quarter->count, 1);
  EXPECT_FALSE(worker_shape(300, n)) << "a third of a GPU is more than a replica's quarter, and the node has no whole GPU";
  EXPECT_FALSE(worker_shape(1000, n));

  // Four workers of a quarter pack onto the MPS node (one GPU's worth of replicas); a half-GPU task
  // goes to the whole GPUs of the other node.
  std::vector<Node> nodes = {n, fixtures::nvidia("whole", 2)};
  nodes[0].price_micros = nodes[1].price_micros = 2'000'000;
  const auto ds = fixtures::greedy_plan(nodes, {fixtures::task("ns/quarters", 0, 4, 4, 250), fixtures::task("ns/half", 0, 1, 1, 500)}, fixtures::kNow);
  const Decision& q = fixtures::find(ds, "ns/quarters");
  ASSERT_EQ(q.action, Action::Admit) << q.reason;
  for (const auto& w : q.placement) {
    EXPECT_EQ(w.node, "n1");
    EXPECT_EQ(w.gpu_resource, "mps:4:nvidia.com/gpu.shared");
  }
  const Decision& h = fixtures::find(ds, "ns/half");
  ASSERT_EQ(h.action, Action::Admit) << h.reason;
  EXPECT_EQ(h.placement.at(0).node, "whole");
}

// Rendered, the worker asks for the device plugin's resource and says the split; read back, its
// GPUs are that replica again, and the ledger charges a quarter of a GPU.
TEST(Replicas, AWorkerOnAnMpsReplicaAsksForTheDevicePluginsResourceAndIsPricedByItsShare) {
  auto parsed = api::parse_task(json::parse(R"({"metadata":{"name":"job","namespace":"team","uid":"u"},
    "spec":{"replicas":{"min":1,"max":2},"master":{"image":"l"},"worker":{"image":"w","gpus":"0.25"}}})"));
  ASSERT_TRUE(parsed.spec);
  const json pod = render::worker_pod(*parsed.spec, 0, {1, 1}, {"nvidia", "mps:4:nvidia.com/gpu.shared", 1, "n1", "", {}});
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["resources"]["limits"], json::parse(R"({"nvidia.com/gpu.shared":"1"})"));
  EXPECT_EQ(pod["metadata"]["annotations"][api::kMpsReplicasAnnotation], "4");
  const api::Pod read = api::pod_from(pod);
  EXPECT_EQ(gpu::gpu_requests(read), (std::map<std::string, int64_t>{{"mps:4:nvidia.com/gpu.shared", 1}}));
  EXPECT_EQ(cost::pod_use(read).share_milli, 250);
}

// Any fraction takes one time-sliced replica (no isolation, so no share to fit), here a half on a
// GPU split four ways; a whole GPU's request never does.
TEST(Replicas, AnyFractionTakesOneTimeSlicedReplica) {
  const Node n = node_from(node_json("n1", "nvidia.com/gpu.shared", 16, 4, "time-slicing"), {});
  for (int milli : {100, 250, 500, 900}) {
    auto w = worker_shape(milli, n);
    ASSERT_TRUE(w) << milli;
    EXPECT_EQ(w->gpu_resource, "ts:4:nvidia.com/gpu.shared");
    EXPECT_EQ(w->count, 1);
  }
  EXPECT_FALSE(worker_shape(1000, n));
}

// Rendered on a time-sliced replica the worker asks for the device plugin's resource and says the
// split; read back it is that replica, and the ledger charges a quarter of a GPU for it.
TEST(Replicas, AWorkerOnATimeSlicedReplicaIsPricedByTheNodesSplit) {
  auto parsed = api::parse_task(json::parse(R"({"metadata":{"name":"job","namespace":"team","uid":"u"},
    "spec":{"replicas":{"min":1,"max":2},"master":{"image":"l"},"worker":{"image":"w","gpus":"0.5"}}})"));
  ASSERT_TRUE(parsed.spec);
  const json pod = render::worker_pod(*parsed.spec, 0, {1, 1}, {"nvidia", "ts:4:nvidia.com/gpu.shared", 1, "n1", "", {}});
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"], json::parse(R"({"nvidia.com/gpu.shared":"1"})"));
  EXPECT_EQ(pod["metadata"]["annotations"][api::kTimeSlicedReplicasAnnotation], "4");
  EXPECT_FALSE(pod["metadata"]["annotations"].contains(api::kMpsReplicasAnnotation));
  const api::Pod read = api::pod_from(pod);
  EXPECT_EQ(gpu::gpu_requests(read), (std::map<std::string, int64_t>{{"ts:4:nvidia.com/gpu.shared", 1}}));
  EXPECT_EQ(cost::pod_use(read).share_milli, 250);
  // A pod from before the node said its split (no annotation) is counted against the node's
  // replicas all the same.
  json old = pod;
  old["metadata"]["annotations"].erase(api::kTimeSlicedReplicasAnnotation);
  Node n = node_from(node_json("n1", "nvidia.com/gpu.shared", 16, 4, "time-slicing"), {});
  subtract(n, api::pod_from(old));
  EXPECT_EQ(n.free["ts:4:nvidia.com/gpu.shared"], 15);
}

}  // namespace
}  // namespace valley::planner
