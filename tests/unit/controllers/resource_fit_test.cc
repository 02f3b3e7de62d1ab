// What kube-scheduler checks besides GPUs, as the planner counts it: quantities, a pod's requests,
// a node's room, and gangs placed only where they can bind.
#include <gtest/gtest.h>

#include "controllers/api/quantity.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/inputs/snapshot.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {

using namespace fixtures;
using api::parse_quantity;

TEST(Quantity, ReadsWhatTheApiServerAcceptsRoundedUp) {
  EXPECT_EQ(parse_quantity("500m", 1000), 500);
  EXPECT_EQ(parse_quantity("1.5", 1000), 1500);
  EXPECT_EQ(parse_quantity("96", 1000), 96000);
  EXPECT_EQ(parse_quantity("0.1", 1000), 100) << "no rounding error past the exact value";
  EXPECT_EQ(parse_quantity("1u", 1000), 1) << "a millionth of a core rounds up to a thousandth";
  EXPECT_EQ(parse_quantity("32Gi"), int64_t{32} << 30);
  EXPECT_EQ(parse_quantity("1.5Ki"), 1536);
  EXPECT_EQ(parse_quantity("2M"), 2000000);
  EXPECT_EQ(parse_quantity("1e3"), 1000);
  EXPECT_EQ(parse_quantity("+4k"), 4000);
  for (const char* bad : {"", "Gi", "abc", "1.2.3", "12Q", "1e", "-1", "1Gib", "99999999999999999999E"})
    EXPECT_FALSE(parse_quantity(bad, 1000).has_value()) << bad;
  EXPECT_EQ(api::quantity_of(nlohmann::json(8), 1000), 8000);
  EXPECT_FALSE(api::quantity_of(nlohmann::json::array()).has_value());
}

nlohmann::json pod_json(const std::string& name, const std::string& node, const nlohmann::json& containers, const nlohmann::json& inits = nlohmann::json::array(),
                        const std::string& phase = "Running") {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", name}}},
          {"spec", {{"nodeName", node}, {"containers", containers}, {"initContainers", inits}}},
          {"status", {{"phase", phase}}}};
}

TEST(RoomRequests, ContainersSumInitContainersByTheirLargestRequestsElseLimits) {
  const api::Pod p = api::pod_from(pod_json(
      "p", "n1",
      {{{"name", "a"}, {"resources", {{"requests", {{"cpu", "2"}, {"memory", "1Gi"}}}}}},
       {{"name", "b"}, {"resources", {{"limits", {{"cpu", "500m"}, {"ephemeral-storage", "10Gi"}}}}}}},
      {{{"name", "init"}, {"resources", {{"requests", {{"cpu", "4"}}}}}}}));
  const auto r = room_requests(p);
  EXPECT_EQ(r.at("cpu"), 4000) << "the init container asks more than both containers together";
  EXPECT_EQ(r.at("memory"), int64_t{1} << 30);
  EXPECT_EQ(r.at("ephemeral-storage"), int64_t{10} << 30) << "a limit alone is the request";
  EXPECT_EQ(r.at("pods"), 1);
  api::Pod done = p;
  done.phase = "Succeeded";
  EXPECT_TRUE(room_usage(done).empty()) << "a finished pod holds nothing";
}

nlohmann::json node_json(const std::string& name, const std::string& cpu, int gpus) {
  return {{"metadata", {{"name", name}, {"labels", {{"rack", name == "n1" ? "a" : "b"}}}}},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", cpu}, {"memory", "512Gi"}, {"pods", "110"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

TEST(RoomRequests, ANodesRoomIsAllocatableLessWhatEveryPodThereRequests) {
  ClusterSnapshot s;
  s.upsert_node(std::make_shared<const nlohmann::json>(node_json("n1", "96", 8)));
  // Someone else's pod (no GPUs) takes CPU and a pod slot all the same.
  s.upsert_pod(std::make_shared<const api::Pod>(
      api::pod_from(pod_json("other", "n1", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "90"}}}}}}}))));
  const auto view = s.view();
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0]->room.at("cpu"), 6000);
  EXPECT_EQ(view.nodes[0]->room.at("pods"), 109);
  EXPECT_EQ(view.nodes[0]->room_capacity.at("cpu"), 96000);
  EXPECT_EQ(view.nodes[0]->free.at("nvidia.com/gpu"), 8);
  EXPECT_EQ(view.nodes[0]->free.count("cpu"), 0u) << "GPUs and room are kept apart";
  s.remove_pod("ns/other");
  EXPECT_EQ(s.view().nodes[0]->room.at("cpu"), 96000);
}

Node with_room(Node n, int64_t cpu_cores, int64_t pods = 110) {
  n.room = n.room_capacity = {{"cpu", cpu_cores * 1000}, {"pods", pods}};
  return n;
}

TEST(PlaceWhatCanBind, AWorkerTooLargeForEveryNodeWaitsHoldingNothingAndSaysWhy) {
  const std::vector<Node> nodes = {with_room(nvidia("n1", 8), 96), with_room(nvidia("n2", 8), 96)};
  Task huge = task("ns/huge", 50, 2, 2);
  huge.worker_room = {{"cpu", 500000}, {"pods", 1}};
  Task small = task("ns/small", 10, 4, 4);
  small.worker_room = {{"cpu", 8000}, {"pods", 1}};
  Task running = task("ns/running", 0, 2, 2);
  running.admitted = true;
  running.workers = {{"n1", "nvidia.com/gpu", 1}, {"n1", "nvidia.com/gpu", 1}};
  const auto ds = greedy_plan(nodes, {huge, small, running}, kNow);
  const Decision& h = find(ds, "ns/huge");
  EXPECT_EQ(h.action, Action::Wait);
  EXPECT_EQ(h.workers, 0);
  EXPECT_EQ(h.reason, "Unplaceable: needs 500 CPUs per worker; the largest node it may use has 96");
  EXPECT_EQ(find(ds, "ns/small").action, Action::Admit) << "a gang that can never fit holds nobody back";
  EXPECT_NE(find(ds, "ns/running").action, Action::Preempt) << "nor is anyone preempted for it";
  EXPECT_NE(find(ds, "ns/running").action, Action::Shrink);
}

TEST(PlaceWhatCanBind, WorkersGoOnlyWhereTheirCpuFitsBesideTheGpus) {
  // 8 GPUs but CPU for two workers on each node: a gang of four takes two nodes.
  const std::vector<Node> nodes = {with_room(nvidia("n1", 8), 20), with_room(nvidia("n2", 8), 20), with_room(nvidia("n3", 8), 20)};
  Task t = task("ns/t", 10, 4, 4);
  t.worker_room = {{"cpu", 8000}, {"pods", 1}};
  const auto ds = greedy_plan(nodes, {t}, kNow);
  const Decision& d = find(ds, "ns/t");
  ASSERT_EQ(d.action, Action::Admit);
  std::map<std::string, int> per_node;
  for (const auto& w : d.placement) ++per_node[w.node];
  for (const auto& [node, n] : per_node) EXPECT_LE(n, 2) << node;
  EXPECT_EQ(d.workers, 4);

  // Six such workers need three nodes; seven do not fit anywhere at once (and say so as capacity).
  Task seven = task("ns/seven", 10, 7, 7);
  seven.worker_room = t.worker_room;
  const auto seven_ds = greedy_plan(nodes, {seven}, kNow);
  const Decision& s = find(seven_ds, "ns/seven");
  EXPECT_EQ(s.action, Action::Wait);
  EXPECT_EQ(s.reason.rfind("InsufficientCapacity", 0), 0u) << s.reason;
}

TEST(PlaceWhatCanBind, PodSlotsCountLikeAnyOtherRoom) {
  const std::vector<Node> nodes = {with_room(nvidia("n1", 8), 96, /*pods=*/1)};
  Task t = task("ns/t", 10, 2, 2);
  t.worker_room = {{"pods", 1}};
  EXPECT_EQ(find(greedy_plan(nodes, {t}, kNow), "ns/t").action, Action::Wait);
  t.min_workers = t.max_workers = 1;
  EXPECT_EQ(find(greedy_plan(nodes, {t}, kNow), "ns/t").action, Action::Admit);
}

TEST(PlaceWhatCanBind, NodesWithoutRoomFiguresLimitNothing) {
  Task t = task("ns/t", 10, 8, 8);
  t.worker_room = {{"cpu", 500000}, {"pods", 1}};
  EXPECT_EQ(find(greedy_plan({nvidia("n1", 8)}, {t}, kNow), "ns/t").action, Action::Admit);
  // A node given with free GPUs but no allocatable figures (a synthetic one) holds what is free.
  Node bare = nvidia("n2", 8);
  bare.capacity.clear();
  EXPECT_EQ(find(greedy_plan({bare}, {t}, kNow), "ns/t").action, Action::Admit);
  Task wide = task("ns/wide", 10, 1, 1, 16000);
  const auto ds = greedy_plan({bare}, {wide}, kNow);
  EXPECT_EQ(find(ds, "ns/wide").reason, "Unplaceable: needs 16 GPUs per worker; the largest node it may use has 8");
}

TEST(PlaceWhatCanBind, RequiredNodeAffinityOfTheTemplateChoosesTheNodes) {
  Node a = nvidia("n1", 8), b = nvidia("n2", 8);
  a.labels = {{"rack", "a"}, {"gen", "3"}};
  b.labels = {{"rack", "b"}, {"gen", "5"}};
  Task t = task("ns/t", 10, 1, 1);
  t.node_terms = {{{"rack", "In", {"b"}}}};
  EXPECT_TRUE(selects(t, b));
  EXPECT_FALSE(selects(t, a));
  t.node_terms = {{{"rack", "In", {"a"}}, {"gen", "Gt", {"4"}}}, {{"rack", "NotIn", {"a"}}}};  // terms are ORed, requirements ANDed
  EXPECT_FALSE(selects(t, a));
  EXPECT_TRUE(selects(t, b));
  t.node_terms = {{{"gpu-broken", "DoesNotExist", {}}, {"gen", "Lt", {"4"}}}};
  EXPECT_TRUE(selects(t, a));
  EXPECT_FALSE(selects(t, b));
  t.node_terms = {{}};
  EXPECT_FALSE(selects(t, a)) << "an empty term matches no node";
  t.node_terms = {{{"rack", "In", {"c"}}}};
  const auto ds = greedy_plan({a, b}, {t}, kNow);
  const Decision& d = find(ds, "ns/t");
  EXPECT_EQ(d.action, Action::Wait);
  EXPECT_EQ(d.reason, "Unplaceable: no GPU node matches its workers' nodeSelector and required node affinity");
}

TEST(PlaceWhatCanBind, TheTasksWorkerRoomIsWhatItsRenderedWorkerPodAsks) {
  const auto object = nlohmann::json::parse(R"({"apiVersion":"valley.dev/v1beta1","kind":"TrainingTask",
    "metadata":{"name":"t","namespace":"ns"},
    "spec":{"taskType":"MPI","replicas":{"min":1,"max":2},"master":{"image":"l"},
      "worker":{"image":"w","gpus":"1","resources":{"requests":{"cpu":"500","memory":"8Gi"}},
        "template":{"spec":{"initContainers":[{"name":"fetch","image":"x","resources":{"requests":{"cpu":"600"}}}],
          "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"rack","operator":"In","values":["a"]}]}]}}}}}}}})");
  const auto parsed = api::parse_task(object);
  ASSERT_TRUE(parsed.spec) << (parsed.errors.empty() ? "" : parsed.errors[0]);
  const Task t = task_from(*parsed.spec, object, {});
  EXPECT_EQ(t.worker_room.at("cpu"), 600000) << "its init container asks more";
  EXPECT_EQ(t.worker_room.at("memory"), int64_t{8} << 30);
  EXPECT_EQ(t.worker_room.at("pods"), 1);
  ASSERT_EQ(t.node_terms.size(), 1u);
  EXPECT_EQ(t.node_terms[0][0].key, "rack");
}

}  // namespace
}  // namespace valley::planner
