#include "controllers/planner/cluster_snapshot.h"

#include <gtest/gtest.h>

#include <random>

#include "controllers/api/pod.h"
#include "controllers/render/render.h"

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

// Random objects over a small name space, so that updates, deletions and re-creations collide.
struct World {
  std::mt19937 rng{7};
  std::map<std::string, ObjectPtr> nodes, tasks, slices;
  std::map<std::string, PodPtr> pods;
  std::map<std::string, ClaimPtr> claims;
  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }

  ObjectPtr node() {
    json n = {{"metadata", {{"name", "n" + std::to_string(pick(5))}, {"labels", json::object()}}},
              {"status", {{"allocatable", pick(3) ? json{{"nvidia.com/gpu", std::to_string(pick(9))}} : json::object()},
                          {"conditions", json::array({{{"type", "Ready"}, {"status", pick(4) ? "True" : "False"}}})}}},
              {"spec", json::object()}};
    if (pick(3) == 0) n["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot";
    if (pick(3) == 0) n["metadata"]["labels"]["example.com/spot"] = "yes";
    if (pick(5) == 0) n["spec"]["taints"] = json::array({{{"key", "nvidia.com/gpu-xid-error"}, {"effect", "NoSchedule"}}});
    return std::make_shared<const json>(std::move(n));
  }
  // A DRA driver's slice of a pool on a node (n5 never exists; gpu.example.com is not a GPU driver).
  ObjectPtr slice() {
    const std::string node = "n" + std::to_string(pick(6)), driver = pick(5) ? "gpu.nvidia.com" : "gpu.example.com";
    json devices = json::array();
    for (int d = 0, count = pick(5); d < count; ++d)
      devices.push_back({{"name", "gpu-" + std::to_string(pick(6))}, {"attributes", {{"productName", {{"string", pick(2) ? "H100" : "A100"}}}}}});
    return std::make_shared<const json>(json{{"metadata", {{"name", "s" + std::to_string(pick(6))}}},
                                             {"spec", {{"driver", driver}, {"nodeName", node}, {"pool", {{"name", node}, {"generation", pick(3)}}},
                                                       {"devices", devices}}}});
  }
  // A claim holding devices of a node's pool; Valley's sometimes.
  ClaimPtr claim() {
    json results = json::array();
    for (int d = 0, count = pick(3); d < count; ++d)
      results.push_back({{"driver", "gpu.nvidia.com"}, {"pool", "n" + std::to_string(pick(6))}, {"device", "gpu-" + std::to_string(pick(6))}});
    json c = {{"metadata", {{"name", "c" + std::to_string(pick(5))}, {"namespace", "ns"}, {"labels", json::object()}}},
              {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
    if (pick(3) == 0) c["metadata"]["labels"][render::label::kManagedBy] = "valley";
    if (pick(3) == 0) {  // a task's seats claim (only Valley's count as one)
      c["metadata"]["labels"][render::label::kRole] = api::kSeatsClaimRole;
      c["metadata"]["labels"][render::label::kTask] = "t" + std::to_string(pick(4));
    }
    return std::make_shared<const api::DraClaim>(api::dra_claim_from(c));
  }
  ObjectPtr task() {
    const int i = pick(4);
    json t = {{"apiVersion", "valley.dev/v1beta1"},
              {"kind", "TrainingTask"},
              {"metadata", {{"name", "t" + std::to_string(i)}, {"namespace", "ns"}, {"uid", "u" + std::to_string(i) + "-" + std::to_string(pick(2))}}},
              {"spec", {{"taskType", "MPI"}, {"replicas", {{"min", 1 + pick(2)}, {"max", pick(4) == 0 ? 0 : 4}}},
                        {"master", {{"image", "l"}}}, {"worker", {{"image", "w"}, {"gpus", "1"}}}}}};
    if (pick(2)) t["status"] = {{"phase", pick(2) ? "Running" : "Pending"}, {"epoch", pick(3)}};
    return std::make_shared<const json>(std::move(t));
  }
  PodPtr pod() {
    const int task = pick(4), index = pick(3);
    json p = {{"metadata", {{"name", "t" + std::to_string(task) + "-worker-" + std::to_string(index)}, {"namespace", "ns"},
                            {"uid", "p" + std::to_string(rng())},
                            {"labels", {{render::label::kManagedBy, "valley"}, {render::label::kTask, "t" + std::to_string(task)},
                                        {render::label::kRole, pick(4) ? "worker" : "launcher"}, {render::label::kEpoch, std::to_string(pick(3))},
                                        {render::label::kWorkerIndex, std::to_string(index)}}},
                            {"ownerReferences", json::array({{{"uid", "u" + std::to_string(task) + "-" + std::to_string(pick(2))}}})}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(pick(3))}}}}}}})}}},
              {"status", {{"phase", std::vector<std::string>{"Pending", "Running", "Running", "Succeeded", "Failed"}[pick(5)]}}}};
    const std::string node = "n" + std::to_string(pick(6));  // n5 never exists
    if (pick(3)) {
      p["spec"]["nodeName"] = node;
    } else if (pick(2)) {
      p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
          json::array({{{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}})}}});
      if (pick(2))  // kube-scheduler refuses it
        p["status"]["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                                                  {"lastTransitionTime", "2026-11-25T10:0" + std::to_string(pick(10)) + ":00Z"},
                                                  {"message", "0/5 nodes are available: " + std::to_string(pick(3))}}});
    }
    if (pick(6) == 0) p["metadata"]["labels"].erase(render::label::kManagedBy);  // someone else's pod
    if (pick(4) == 0) p["metadata"]["annotations"][api::kClaimedGpusAnnotation] = "gpu.nvidia.com=" + std::to_string(pick(3));
    return std::make_shared<const api::Pod>(api::pod_from(p));
  }
  static std::string key(const ObjectPtr& o) {
    const auto& m = (*o)["metadata"];
    return m.contains("namespace") ? m["namespace"].get<std::string>() + "/" + m["name"].get<std::string>() : m["name"].get<std::string>();
  }
  static std::string key(const PodPtr& p) { return p->key(); }
  static std::string key(const ClaimPtr& c) { return c->key; }
  template <class Ptr>
  static std::vector<Ptr> all(const std::map<std::string, Ptr>& m) {
    std::vector<Ptr> out;
    for (const auto& [k, v] : m) out.push_back(v);
    return out;
  }
};

TEST(ClusterSnapshot, EqualsARebuildAfterRandomEventSequences) {
  World w;
  NodeFacts facts;
  ClusterSnapshot snapshot(facts);
  for (int step = 0; step < 4000; ++step) {
    switch (w.pick(11)) {
      case 0: {
        auto n = w.node();
        w.nodes[World::key(n)] = n;
        snapshot.upsert_node(n);
        break;
      }
      case 1: {
        const std::string name = "n" + std::to_string(w.pick(5));
        w.nodes.erase(name);
        snapshot.remove_node(name);
        break;
      }
      case 2:
      case 3: {
        auto p = w.pod();
        w.pods[World::key(p)] = p;
        snapshot.upsert_pod(p);
        break;
      }
      case 4: {
        const std::string key = "ns/t" + std::to_string(w.pick(4)) + "-worker-" + std::to_string(w.pick(3));
        w.pods.erase(key);
        snapshot.remove_pod(key);
        break;
      }
      case 5: {
        auto t = w.task();
        w.tasks[World::key(t)] = t;
        snapshot.upsert_task(t);
        break;
      }
      case 6: {
        const std::string key = "ns/t" + std::to_string(w.pick(4));
        w.tasks.erase(key);
        snapshot.remove_task(key);
        break;
      }
      case 7:
        if (w.pick(10) == 0) {  // a PricingPolicy with other spot labels
          facts.spot_labels = w.pick(2) ? NodeFacts{}.spot_labels : std::vector<std::pair<std::string, std::string>>{{"example.com/spot", "yes"}};
          snapshot.set_facts(facts);
        }
        break;
      case 8: {
        auto s = w.slice();
        w.slices[World::key(s)] = s;
        snapshot.upsert_slice(s);
        break;
      }
      case 9: {
        auto c = w.claim();
        w.claims[World::key(c)] = c;
        snapshot.upsert_claim(c);
        break;
      }
      case 10:
        if (w.pick(2)) {
          const std::string name = "s" + std::to_string(w.pick(6));
          w.slices.erase(name);
          snapshot.remove_slice(name);
        } else {
          const std::string key = "ns/c" + std::to_string(w.pick(5));
          w.claims.erase(key);
          snapshot.remove_claim(key);
        }
        break;
    }
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
