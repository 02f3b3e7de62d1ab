// Random cluster objects for the property tests of the planner's inputs: nodes, TrainingTasks, pods,
// DRA slices and claims over a small name space (so updates, deletions and re-creations collide),
// and random events applied to a ClusterSnapshot and remembered as the object lists a rebuild reads.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "controllers/api/pod.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/render/render.h"

namespace valley::planner {

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
    if (pick(3) == 0) t["spec"]["priority"] = pick(100);
    if (pick(4) == 0) t["spec"]["reduceCost"] = true;
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

// One random event: an object created, changed or deleted, or the PricingPolicy's spot labels
// changed (facts), applied to `snapshot` and remembered in `w`.
inline void random_event(World& w, ClusterSnapshot& snapshot, NodeFacts& facts) {
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
}

}  // namespace valley::planner
