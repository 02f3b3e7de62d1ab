#include "controllers/inputs/cluster_snapshot.h"

#include <gtest/gtest.h>

#include <random>

#include "controllers/api/pod.h"
#include "controllers/render/render.h"
#include "tests/unit/controllers/random_cluster.h"

namespace valley::planner {
namespace {

// What a view says, in a form two views can be compared in (and printed when they differ).
json dump(const SnapshotView& v) {
  json out = {{"nodes", json::array()}, {"tasks", json::array()}, {"workers", json::object()}};
  for (const auto& node : v.nodes) {
    const Node& n = *node;
    out["nodes"].push_back({{"name", n.name}, {"vendor", n.vendor}, {"class", n.capacity_class}, {"free", n.free},
                            {"capacity", n.capacity}, {"schedulable", n.schedulable}, {"notice", n.notice}, {"fault", n.fault},
                            {"draClass", n.dra_class}, {"draProduct", n.dra_product}});
  }
  for (const auto& entry : v.tasks) {
    const auto& t = *entry;
    json e = {{"key", t.key}, {"valid", t.parsed->spec.has_value()}, {"owned", json::array()}, {"waiting", json::array()}};
    for (const auto& p : t.owned) e["owned"].push_back(p->name);
    for (const auto& w : t.waiting)
      e["waiting"].push_back({w.pod->name, w.node, w.refused_since ? kube::format_time(*w.refused_since) : "", w.refusal});
    if (t.task) {
      e["admitted"] = t.task->admitted;
      e["range"] = {t.task->min_workers, t.task->max_workers};
      for (const auto& w : t.task->workers) e["workers"].push_back({w.node, w.gpu_resource, w.count});
    }
    out["tasks"].push_back(e);
  }
  for (const auto& [task, workers] : v.workers)
    for (const auto& w : *workers) out["workers"][task].push_back({w.node, w.usage, w.epoch});
  out["sharedDevices"] = v.shared_devices;
  return out;
}

TEST(ClusterSnapshot, EqualsARebuildAfterRandomEventSequences) {
  World w;
  NodeFacts facts;
  ClusterSnapshot snapshot(facts);
  for (int step = 0; step < 4000; ++step) {
    random_event(w, snapshot, facts);
    if (step % 7 == 0) {
      const json incremental = dump(snapshot.view());
      const json reference =
          dump(rebuild(World::all(w.nodes), World::all(w.pods), World::all(w.tasks), facts, World::all(w.slices), World::all(w.claims)));
      ASSERT_EQ(incremental, reference) << "after step " << step << "\nincremental: " << incremental.dump() << "\nrebuild: " << reference.dump();
    }
  }
}

// A view hands over the entries of tasks and workers that did not change since the last one (the
// same objects, nothing recomputed); a pod's change makes its task's and its workers' entries anew.
TEST(ClusterSnapshot, AViewSharesWhatDidNotChange) {
  ClusterSnapshot s;
  for (const char* name : {"n0", "n1", "n2"})
    s.upsert_node(std::make_shared<const json>(json{{"metadata", {{"name", name}}},
                                                    {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}},
                                                                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}}));
  auto task = [](int i) {
    return std::make_shared<const json>(json{{"metadata", {{"name", "t" + std::to_string(i)}, {"namespace", "ns"}, {"uid", "u" + std::to_string(i)}}},
                                             {"spec", {{"taskType", "MPI"}, {"replicas", {{"min", 1}, {"max", 2}}}, {"master", {{"image", "l"}}},
                                                       {"worker", {{"image", "w"}, {"gpus", "1"}}}}}});
  };
  auto worker = [](int i, const std::string& node) {
    json p = {{"metadata", {{"name", "t" + std::to_string(i) + "-worker-0"}, {"namespace", "ns"}, {"uid", "p" + std::to_string(i)},
                            {"labels", {{render::label::kManagedBy, "valley"}, {render::label::kTask, "t" + std::to_string(i)},
                                        {render::label::kRole, "worker"}, {render::label::kEpoch, "0"}, {render::label::kWorkerIndex, "0"}}},
                            {"ownerReferences", json::array({{{"uid", "u" + std::to_string(i)}}})}}},
              {"spec", {{"nodeName", node}, {"containers", json::array({{{"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}},
              {"status", {{"phase", "Running"}}}};
    return std::make_shared<const api::Pod>(api::pod_from(p));
  };
  for (int i = 0; i < 2; ++i) {
    s.upsert_task(task(i));
    s.upsert_pod(worker(i, "n0"));
  }
  const SnapshotView first = s.view();
  s.upsert_pod(worker(1, "n1"));
  const SnapshotView second = s.view();
  ASSERT_EQ(second.nodes.size(), 3u);
  EXPECT_NE(second.nodes[0], first.nodes[0]);  // n0: t1's worker left it
  EXPECT_NE(second.nodes[1], first.nodes[1]);  // n1: t1's worker came
  EXPECT_EQ(second.nodes[2], first.nodes[2]);  // n2: nothing changed
  EXPECT_EQ(first.nodes[0]->free.at("nvidia.com/gpu"), 6);  // an earlier view is not changed under its holder
  EXPECT_EQ(second.nodes[0]->free.at("nvidia.com/gpu"), 7);
  ASSERT_EQ(second.tasks.size(), 2u);
  EXPECT_EQ(second.tasks[0], first.tasks[0]);  // t0: nothing changed
  EXPECT_EQ(second.workers.at("ns/t0"), first.workers.at("ns/t0"));
  EXPECT_NE(second.tasks[1], first.tasks[1]);  // t1: its worker moved
  EXPECT_NE(second.workers.at("ns/t1"), first.workers.at("ns/t1"));
  EXPECT_EQ(second.workers.at("ns/t1")->at(0).node, "n1");
  EXPECT_EQ(first.workers.at("ns/t1")->at(0).node, "n0");  // an earlier view is not changed under its holder
  s.upsert_task(task(0));
  EXPECT_NE(s.view().tasks[0], second.tasks[0]);  // t0's object changed
}

TEST(ClusterSnapshot, AStatusWriteKeepsTheParsedSpecAndASpecChangeParsesAgain) {
  ClusterSnapshot s;
  auto task = [](const std::string& uid, int generation, int max, const std::string& phase) {
    return std::make_shared<const json>(json{{"metadata", {{"name", "t"}, {"namespace", "ns"}, {"uid", uid}, {"generation", generation}}},
                                             {"spec", {{"taskType", "MPI"}, {"replicas", {{"min", 1}, {"max", max}}}, {"master", {{"image", "l"}}},
                                                       {"worker", {{"image", "w"}, {"gpus", "1"}}}}},
                                             {"status", {{"phase", phase}}}});
  };
  auto parsed = [&s] { return s.view().tasks.at(0)->parsed; };
  s.upsert_task(task("u1", 1, 2, "Pending"));
  const auto first = parsed();
  ASSERT_TRUE(first->spec);
  const auto running = task("u1", 1, 2, "Running");
  s.upsert_task(running);  // a status write
  EXPECT_EQ(parsed(), first);
  EXPECT_EQ(s.view().tasks.at(0)->object, running);
  s.upsert_task(task("u1", 2, 3, "Running"));  // the spec changed
  ASSERT_NE(parsed(), first);
  EXPECT_EQ(parsed()->spec->max_workers, 3);
  const auto second = parsed();
  s.upsert_task(task("u1", 2, 4, "Running"));  // a spec changed without a new generation (no API server)
  EXPECT_EQ(parsed()->spec->max_workers, 4);
  EXPECT_NE(parsed(), second);
  s.upsert_task(task("u2", 2, 4, "Pending"));  // a new incarnation of the same name
  EXPECT_EQ(parsed()->spec->uid, "u2");
}

TEST(ClusterSnapshot, FreeGpusAreAllocatableLessWhatPodsHoldOnlyWhileTheyRun) {
  World w;
  ClusterSnapshot s;
  s.upsert_node(std::make_shared<const json>(json::parse(
      R"({"metadata":{"name":"n0"},"status":{"allocatable":{"nvidia.com/gpu":"8"},"conditions":[{"type":"Ready","status":"True"}]}})")));
  auto pod = [](const std::string& name, const std::string& phase) {
    return std::make_shared<const api::Pod>(api::pod_from(json{{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", name}}},
                                             {"spec", {{"nodeName", "n0"}, {"containers", json::array({{{"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}})}}},
                                             {"status", {{"phase", phase}}}}));
  };
  s.upsert_pod(pod("a", "Running"));
  s.upsert_pod(pod("b", "Pending"));
  EXPECT_EQ(s.view().nodes.at(0)->free.at("nvidia.com/gpu"), 4);
  s.upsert_pod(pod("a", "Succeeded"));
  EXPECT_EQ(s.view().nodes.at(0)->free.at("nvidia.com/gpu"), 6);
  s.remove_pod("ns/b");
  EXPECT_EQ(s.view().nodes.at(0)->free.at("nvidia.com/gpu"), 8);
}


// A task's live workers as the view has them: n of `gpus` each on `node`, in epoch "1".
std::shared_ptr<const std::vector<SnapshotView::Worker>> live_workers(const std::string& node, int n, int64_t gpus = 1) {
  return std::make_shared<const std::vector<SnapshotView::Worker>>(
      std::vector<SnapshotView::Worker>(static_cast<size_t>(n), SnapshotView::Worker{node, {{"nvidia.com/gpu", gpus}}, "1", {{"cpu", 2000}, {"pods", 1}}}));
}
std::vector<Task::Worker> planned_on(const std::string& node, int n) {
  return std::vector<Task::Worker>(static_cast<size_t>(n), Task::Worker{node, "nvidia.com/gpu", 1});
}

TEST(HeldByPlanned, GivesBackWhatThePlanInputTakesAgainAndNoMore) {
  SnapshotView view;
  view.workers["ns/same"] = live_workers("n1", 8);    // where its plan input has them
  view.workers["ns/moved"] = live_workers("n2", 8);   // pinned to n2, not bound; the plan moved them to n3
  view.workers["ns/shrunk"] = live_workers("n4", 4);  // four pods left, its plan input keeps two
  view.workers["ns/waiting"] = live_workers("n5", 2); // not planned
  view.workers["ns/gone"] = live_workers("n9", 2);    // on a node the plan does not have
  const std::string epoch = "1";
  std::map<std::string, std::vector<Task::Worker>> input = {{"ns/same", planned_on("n1", 8)}, {"ns/moved", planned_on("n3", 8)},
                                                            {"ns/shrunk", planned_on("n4", 2)}, {"ns/gone", planned_on("n9", 2)}};
  const HeldByPlanned returned = held_by_planned(
      view,
      [&](const std::string& key) -> std::optional<PlannedTask> {
        auto it = input.find(key);
        if (it == input.end()) return std::nullopt;
        return PlannedTask{&epoch, &it->second};
      },
      [](const std::string& node) { return node != "n9"; });
  EXPECT_EQ(returned.at("n1").at("nvidia.com/gpu"), 8);
  // What its pods ask besides GPUs goes back with each worker the plan places again.
  EXPECT_EQ(returned.at("n1").at("cpu"), 8 * 2000);
  EXPECT_EQ(returned.at("n1").at("pods"), 8);
  EXPECT_EQ(returned.at("n4").at("pods"), 2);
  EXPECT_EQ(returned.count("n2"), 0u);  // its pods hold n2 until they are deleted: kube-scheduler may bind them there
  EXPECT_EQ(returned.count("n3"), 0u);  // nothing of it is there yet
  EXPECT_EQ(returned.at("n4").at("nvidia.com/gpu"), 2);
  EXPECT_EQ(returned.count("n5"), 0u);
  EXPECT_EQ(returned.count("n9"), 0u);
  EXPECT_EQ(returned.size(), 2u);

  // Another epoch's pods are not the task's current workers: they give nothing back.
  const std::string next = "2";
  const HeldByPlanned later = held_by_planned(
      view, [&](const std::string&) -> std::optional<PlannedTask> { return PlannedTask{&next, &input["ns/same"]}; },
      [](const std::string&) { return true; });
  EXPECT_TRUE(later.empty());
}

// The N=5,000 run of 2026-11-26: a gang whose pods were pinned to a node, not bound yet, was moved
// by the plan (its node NotReady past the grace); until the reconciler deleted those pods, their
// node was given back to the plan as free, another task was placed there, and kube-scheduler then
// bound the first gang's pods there and refused the second's (Insufficient nvidia.com/gpu).
TEST(HeldByPlanned, AGangMovedBeforeItWasBoundStillHoldsItsOldNode) {
  Node n1, n2;
  n1.name = "n1";
  n2.name = "n2";
  for (Node* n : {&n1, &n2}) {
    n->vendor = "nvidia";
    n->capacity = {{"nvidia.com/gpu", 8}};
  }
  n1.free = {{"nvidia.com/gpu", 0}};  // the moved gang's eight pods, pinned there, count in the view
  n2.free = {{"nvidia.com/gpu", 8}};
  const auto now = SystemTime(std::chrono::seconds(1795316645));
  Task moved, waiting;
  moved.key = "ns/moved";
  moved.min_workers = moved.max_workers = 8;
  moved.gpu_milli = 1000;
  moved.admitted = true;
  moved.created = now - std::chrono::minutes(30);
  moved.workers = planned_on("n2", 8);  // its published admission: placement on n2
  waiting.key = "ns/waiting";
  waiting.min_workers = waiting.max_workers = 8;
  waiting.gpu_milli = 1000;
  waiting.created = now - std::chrono::minutes(1);
  SnapshotView view;
  view.workers["ns/moved"] = live_workers("n1", 8);
  const std::string epoch = "1";
  const HeldByPlanned returned = held_by_planned(
      view,
      [&](const std::string& key) -> std::optional<PlannedTask> {
        if (key != moved.key) return std::nullopt;
        return PlannedTask{&epoch, &moved.workers};
      },
      [](const std::string&) { return true; });
  const auto decisions = plan(std::vector<const Node*>{&n1, &n2}, returned, std::vector<Task>{moved, waiting}, now);
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0].workers, 8);
  for (const auto& w : decisions[0].placement) EXPECT_EQ(w.node, "n2");
  EXPECT_EQ(decisions[1].workers, 0) << "placed on GPUs the moved gang's pods still hold: " << decisions[1].reason;
  EXPECT_EQ(decisions[1].action, Action::Wait);
}

}  // namespace
}  // namespace valley::planner
