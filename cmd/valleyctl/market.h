// What valleyctl reads of a cluster to price and place as the operator would: the PricingPolicy
// (--policy FILE, else the cluster's --pricing-policy), the nodes, and DRA's ResourceSlices and
// ResourceClaims where the cluster serves them; its GPU nodes read by the planner's own rebuild().
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/inputs/cluster_snapshot.h"
#include "operator/flags.h"
#include "operator/kube/client.h"

namespace valley::ctl {

struct Market {
  nlohmann::json policy_object;  // null when none was found and none was needed
  std::vector<nlohmann::json> nodes;
  std::vector<planner::ObjectPtr> slices;  // DRA, when the cluster serves it
  std::vector<planner::ClaimPtr> claims;
  std::vector<nlohmann::json> node_pools;           // Karpenter's, where the cluster serves them
  std::unique_ptr<kube::Client> client;            // null offline
};
// nullopt after telling the user why: no cluster and no policy, or (`need_policy`) no policy.
std::optional<Market> read_market(const Flags& flags, bool need_policy);

// The cluster's GPU nodes as the operator's planner reads them (device plugins' and DRA's GPUs),
// less what its pods and claims hold when `free` (nothing offline or when pods cannot be listed).
std::vector<planner::Node> market_nodes(const Market& m, bool free);

}  // namespace valley::ctl
