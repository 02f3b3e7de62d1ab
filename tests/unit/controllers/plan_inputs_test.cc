// PlanInputs keeps each node's and task's planner input from round to round and remakes only what
// changed. The property: after any sequence of cluster events, pricing changes and admissions
// published, the round it hands out equals the round a fresh PlanInputs makes from a snapshot
// rebuilt from the same objects, and so does the plan made from each.
#include "controllers/inputs/plan_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "controllers/planner/planner.h"
#include "tests/unit/controllers/random_cluster.h"

namespace valley::inputs {
namespace {

using planner::World;
using json = nlohmann::json;

json workers_of(const std::vector<planner::Task::Worker>& workers) {
  json out = json::array();
  for (const auto& w : workers) out.push_back({w.node, w.gpu_resource, w.count, w.bound, w.index});
  return out;
}

// What a round hands the planner, in a form two rounds can be compared in (and printed).
json dump(const PlanInputs::Round& r) {
  json out = {{"nodes", json::array()}, {"tasks", json::array()}, {"held", json::object()}};
  for (const planner::Node* n : r.nodes)
    out["nodes"].push_back({{"name", n->name}, {"vendor", n->vendor}, {"class", n->capacity_class}, {"free", n->free},
                            {"capacity", n->capacity}, {"schedulable", n->schedulable}, {"fault", n->fault}});
  for (size_t i = 0; i < r.tasks.size(); ++i) {
    const planner::Task& t = *r.tasks[i];
    const PlanInputs::TaskState& s = *r.planned[i];
    out["tasks"].push_back({{"key", t.key}, {"priority", t.priority}, {"reduceCost", t.reduce_cost}, {"admitted", t.admitted},
                            {"range", {t.min_workers, t.max_workers}}, {"gpuMilli", t.gpu_milli}, {"workers", workers_of(t.workers)},
                            {"tenant", t.tenant}, {"avoid", t.avoid_nodes}, {"holds", s.holds}, {"epoch", s.epoch}, {"kind", s.kind},
                            {"waitsForData", s.waits_for_data}});
  }
  for (const auto& [node, held] : r.held) out["held"][node] = held;
  return out;
}

json decisions(const PlanInputs::Round& r) {
  json out = json::array();
  for (const auto& d : planner::plan(r.nodes, r.held, r.tasks, r.now, r.config))
    out.push_back({d.key, static_cast<int>(d.action), d.workers, workers_of(d.placement), d.reason, d.queue_position, d.price_micros});
  return out;
}

TEST(PlanInputs, KeptFromRoundToRoundEqualsOneMadeFromScratch) {
  World w;
  planner::NodeFacts facts;
  planner::ClusterSnapshot snapshot(facts);
  // A node a task's pod could not be bound to is avoided for a while: memory of past rounds that
  // no rebuild has, so none is made here (no refusal lasts this long).
  InputOptions options;
  options.unschedulable_timeout = std::chrono::hours(24 * 365);
  PlanInputs kept(options);
  auto usual = std::make_shared<const api::Policy>();
  auto other = std::make_shared<api::Policy>();
  other->default_watts = 700;
  other->flat_per_kwh = 120000;
  std::shared_ptr<const api::Policy> pricing = usual;
  // The admissions the operator published from the plans so far (an overlay on the tasks' input).
  std::map<std::string, std::vector<render::WorkerPlacement>> published;
  ClusterFacts cluster;
  cluster.published = [&](const std::string& key) -> const std::vector<render::WorkerPlacement>* {
    auto it = published.find(key);
    return it == published.end() ? nullptr : &it->second;
  };
  // Tasks whose pods the API server refuses (until they change): planned again later, with their
  // entries unchanged meanwhile.
  std::set<std::string> refused;
  cluster.creation_refused = [&](const TaskEntry& e) { return refused.count(e.key) > 0; };
  auto now = kube::parse_time("2026-12-01T00:00:00Z").value();
  int rounds = 0, planned = 0;
  for (int step = 0; step < 3000; ++step) {
    random_event(w, snapshot, facts);
    if (w.pick(60) == 0) pricing = pricing == usual ? std::shared_ptr<const api::Policy>(other) : usual;
    if (w.pick(20) == 0) {
      const std::string key = "ns/t" + std::to_string(w.pick(4));
      if (!refused.erase(key)) refused.insert(key);
    }
    if (step % 5 != 0) continue;
    now += std::chrono::seconds(w.pick(120));
    const PlanInputs::Round& incremental = kept.take(snapshot.view(), pricing, Tenancy{}, now, cluster);
    const json a = dump(incremental), plan_a = decisions(incremental);
    PlanInputs fresh(options);
    const planner::SnapshotView rebuilt =
        planner::rebuild(World::all(w.nodes), World::all(w.pods), World::all(w.tasks), facts, World::all(w.slices), World::all(w.claims));
    const PlanInputs::Round& scratch = fresh.take(rebuilt, pricing, Tenancy{}, now, cluster);
    ASSERT_EQ(a, dump(scratch)) << "after step " << step << "\nkept:    " << a.dump() << "\nscratch: " << dump(scratch).dump();
    ASSERT_EQ(plan_a, decisions(scratch)) << "after step " << step;
    ++rounds;
    planned += static_cast<int>(incremental.tasks.size());
    // Published as the planning loop does: a changed admission replaces the old one and is laid
    // over the task's input anew at the next round (overlay_stale); the board forgets the
    // admissions of tasks no longer planned.
    std::map<std::string, std::vector<render::WorkerPlacement>> now_published;
    for (size_t i = 0; i < plan_a.size(); ++i) {
      const json& d = plan_a[i];
      std::vector<render::WorkerPlacement> placement;
      for (const auto& wk : d[3])
        placement.push_back({"nvidia", wk[1].get<std::string>(), static_cast<int>(wk[2].get<int64_t>()), wk[0].get<std::string>(), "", {}});
      const std::string key = d[0].get<std::string>();
      auto old = published.find(key);
      const bool same = old != published.end() && old->second.size() == placement.size() &&
                        std::equal(placement.begin(), placement.end(), old->second.begin(), [](const auto& x, const auto& y) {
                          return x.node == y.node && x.gpu_resource == y.gpu_resource && x.gpu_count == y.gpu_count;
                        });
      if (!same) incremental.planned[i]->overlay_stale = true;
      if (!placement.empty()) now_published[key] = std::move(placement);
    }
    published = std::move(now_published);
  }
  EXPECT_EQ(rounds, 600);
  EXPECT_GT(planned, rounds / 2) << "the rounds planned tasks";
}

// A refused worker: its node is avoided once kube-scheduler has refused it for the timeout, counted
// from when no pod on its way out (of an epoch its task left, or being deleted) held the node.
struct NodeRefusals : ::testing::Test {
  planner::NodeFacts facts;
  planner::ClusterSnapshot snapshot{facts};
  InputOptions options;
  kube::SystemTime t0 = kube::parse_time("2026-12-01T00:00:00Z").value();
  void SetUp() override {
    options.unschedulable_timeout = std::chrono::seconds(3);
    snapshot.upsert_node(std::make_shared<const json>(json{
        {"metadata", {{"name", "n1"}}},
        {"status", {{"allocatable", {{"nvidia.com/gpu", "1"}}}, {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}}));
    task("old", 2);
    task("vip", 1);
    // The vip's worker, pinned to n1 and refused since t0 (the old task's worker still holds it).
    json p = pod("vip", 1);
    p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
        json::array({{{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n1"}}}})}}});
    p["status"] = {{"phase", "Pending"},
                   {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                                                {"lastTransitionTime", kube::format_time(t0)},
                                                {"message", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}}})}};
    snapshot.upsert_pod(std::make_shared<const api::Pod>(api::pod_from(p)));
  }
  void task(const std::string& name, int epoch) {
    snapshot.upsert_task(std::make_shared<const json>(json{
        {"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"},
        {"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "u-" + name}}},
        {"spec", {{"taskType", "MPI"}, {"replicas", {{"min", 1}, {"max", 1}}}, {"master", {{"image", "l"}}}, {"worker", {{"image", "w"}, {"gpus", "1"}}}}},
        {"status", {{"phase", "Running"}, {"epoch", epoch}}}}));
  }
  json pod(const std::string& task, int epoch) {
    return {{"metadata", {{"name", task + "-worker-0"}, {"namespace", "ns"}, {"uid", "p-" + task},
                          {"labels", {{render::label::kManagedBy, "valley"}, {render::label::kTask, task}, {render::label::kRole, "worker"},
                                      {render::label::kEpoch, std::to_string(epoch)}, {render::label::kWorkerIndex, "0"}}},
                          {"ownerReferences", json::array({{{"uid", "u-" + task}}})}}},
            {"spec", {{"containers", json::array({{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
  }
  // The old task's worker of epoch 1, bound to n1 (deleting since `deleted` when given).
  void old_worker(std::optional<kube::SystemTime> deleted = std::nullopt) {
    json p = pod("old", 1);
    p["spec"]["nodeName"] = "n1";
    p["status"] = {{"phase", "Running"}};
    if (deleted) p["metadata"]["deletionTimestamp"] = kube::format_time(*deleted);
    snapshot.upsert_pod(std::make_shared<const api::Pod>(api::pod_from(p)));
  }
  std::vector<std::string> avoided(PlanInputs& inputs, kube::SystemTime now) {
    const PlanInputs::Round& r = inputs.take(snapshot.view(), nullptr, Tenancy{}, now, ClusterFacts{});
    for (const planner::Task* t : r.tasks)
      if (t->key == "ns/vip") return t->avoid_nodes;
    ADD_FAILURE() << "ns/vip was not planned";
    return {};
  }
};

TEST_F(NodeRefusals, ANodeRefusingWithNothingLeavingIsAvoidedAfterTheTimeout) {
  PlanInputs inputs(options);
  EXPECT_TRUE(avoided(inputs, t0 + std::chrono::seconds(2)).empty());
  EXPECT_EQ(avoided(inputs, t0 + std::chrono::seconds(3)), std::vector<std::string>{"n1"});
}

TEST_F(NodeRefusals, PodsOfAnEpochTheirTaskLeftExplainTheRefusalUntilTheyAreGone) {
  old_worker();
  PlanInputs inputs(options);
  EXPECT_TRUE(avoided(inputs, t0 + std::chrono::seconds(10)).empty()) << "the old epoch's worker still holds n1";
  snapshot.remove_pod("ns/old-worker-0");
  EXPECT_TRUE(avoided(inputs, t0 + std::chrono::seconds(12)).empty()) << "gone 2 s ago: kube-scheduler may not have retried yet";
  EXPECT_EQ(avoided(inputs, t0 + std::chrono::seconds(13)), std::vector<std::string>{"n1"}) << "refused for 3 s with n1 vacated";
}

TEST_F(NodeRefusals, APodStuckInDeletionPastItsGraceExplainsNothing) {
  const auto at = [&](int s) { return t0 + std::chrono::seconds(s); };
  old_worker(at(2));  // deleting, its grace over at t0 + 2 s
  task("old", 1);     // of the task's current epoch: only its deletion says it leaves
  EXPECT_EQ(nodes_being_vacated(snapshot.view(), at(4), options.unschedulable_timeout), std::set<std::string>{"n1"});
  EXPECT_TRUE(nodes_being_vacated(snapshot.view(), at(5), options.unschedulable_timeout).empty()) << "stuck for 3 s past its grace";
  PlanInputs inputs(options);
  EXPECT_TRUE(avoided(inputs, at(4)).empty());
  EXPECT_TRUE(avoided(inputs, at(6)).empty()) << "explained 2 s ago";
  EXPECT_EQ(avoided(inputs, at(7)), std::vector<std::string>{"n1"});
}

}  // namespace
}  // namespace valley::inputs
