// Capacity that can be bought, as the planner sees nodes: for each NodePool, each instance type of
// the catalogue its requirements allow and each capacity type it allows, as many not-yet-bought
// nodes as the pool's limits leave room for (less what its existing nodes take), each a node object
// as Karpenter would launch it (the pool's template labels and taints, the well-known labels, the
// instance's allocatable), read through node_from like any node so that pricing, selectors and
// taints apply alike. The planner opens such a node only within the pool's budget (a pool's limit
// is shared by all its shapes): Config::pool_budgets.
// Names are api::provisionable_name's. Pure.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controllers/api/nodepool.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/planner/planner.h"

namespace valley::inputs {

struct ProvisioningOptions {
  // How long a pool takes from a pending pod to a Ready node it can bind to (by pool; else default).
  std::map<std::string, std::chrono::seconds> delay;
  std::chrono::seconds default_delay{60};
  // Not-yet-bought nodes offered per shape of a pool whose limits do not bound that shape.
  int max_nodes_per_shape = 32;
};

struct Provisionable {
  std::vector<planner::Node> nodes;
  // Pool -> resource -> units its limits leave to buy (only limited resources are listed).
  std::map<std::string, std::map<std::string, int64_t>> budgets;
  // Pools Valley buys nothing from, and why (no GPU shape, a limit spent or zero, a requirement
  // it cannot evaluate, the pool being deleted).
  std::map<std::string, std::string> unusable;
};

// `existing`: the cluster's nodes as node_from read them (a node's pool is its karpenter.sh/nodepool label).
Provisionable provisionable(const std::vector<api::NodePool>& pools, const api::Catalogue& catalogue,
                            const std::vector<const planner::Node*>& existing, const planner::NodeFacts& facts,
                            const ProvisioningOptions& options);

// What a NodePool's nodes that are up hold now (by their karpenter.sh/nodepool label): what the
// platform pays for, and how much of it runs nothing.
struct PoolUse {
  int nodes = 0;
  int idle = 0;            // nodes no pod holds a GPU of
  int64_t gpus = 0;        // whole GPUs (and GPU resources' units) they offer
  int64_t gpus_held = 0;   // of those, held by pods
};
std::map<std::string, PoolUse> pool_use(const std::vector<const planner::Node*>& existing);

// provisionable() kept across plans: a node equal to the one the last call made is handed over as
// the same object, so that what reads nodes incrementally (PlanInputs) reads it again only when it
// changed. Not thread-safe.
class ProvisionableNodes {
 public:
  struct Taken {
    std::vector<std::shared_ptr<const planner::Node>> nodes;  // by name
    std::map<std::string, std::map<std::string, int64_t>> budgets;
    std::map<std::string, std::string> unusable;
  };
  const Taken& take(const std::vector<api::NodePool>& pools, const api::Catalogue& catalogue,
                    const std::vector<const planner::Node*>& existing, const planner::NodeFacts& facts, const ProvisioningOptions& options);

 private:
  std::map<std::string, std::shared_ptr<const planner::Node>> by_name_;
  Taken last_;
};

// Whether Valley can buy from every NodePool, as the PricingPolicy in force says it (its
// NodePoolsUsable condition): judged on the pools alone, as if none of their nodes were up (a limit
// spent by nodes that are up is not a fault); reason AllUsable, SomeUnusable, NoneUsable or
// NoNodePools, and a message naming each pool it cannot buy from and why.
struct PoolsUsable {
  bool all = false;
  std::string reason, message;
};
PoolsUsable pools_usable(const std::vector<api::NodePool>& pools, const api::Catalogue& catalogue, const planner::NodeFacts& facts);

// The nodes still to buy that `selected` accepts (by their labels), laid beside the view's nodes
// that are up, the view kept in name order: what a plan reads, the operator's and the simulator's.
void offer(planner::SnapshotView& view, const ProvisionableNodes::Taken& taken,
           const std::function<bool(const std::map<std::string, std::string>&)>& selected);

}  // namespace valley::inputs
