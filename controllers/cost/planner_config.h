// What a PricingPolicy tells the planner at an instant: whether electricity is off-peak now (and
// when it next is, for the waiting reason), the idle share that admits a reduceCost task anyway,
// whether AMD GPUs are cheaper than NVIDIA ones on demand, and what a GPU-hour costs on each node. Shared by the operator and the
// trace simulator so both admit the same way.
#pragma once

#include <vector>

#include "controllers/cost/policy.h"
#include "controllers/planner/planner.h"

namespace valley::cost {

planner::Config planner_config(const Policy& p, const std::vector<planner::Node>& nodes, SystemTime now,
                               planner::Config base);

// Sets each node's GPU-hour price (vendor, product, spot or on-demand) for cost-aware placement.
void price_nodes(const Policy& p, std::vector<planner::Node>& nodes);

}  // namespace valley::cost
