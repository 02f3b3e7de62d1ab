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
        placement.push_back({"nvidia", wk[1].get<std::string>(), static_cast<int>(wk[2].get<int64_t>()), wk[0].get<std::string>(), ""});
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

}  // namespace
}  // namespace valley::inputs
