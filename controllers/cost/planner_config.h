// What a PricingPolicy tells the planner at an instant: what a GPU-hour costs on each node, whether
// electricity is off-peak now (and when it next is, for the waiting reason), the idle share that
// admits a reduceCost task anyway, and whether AMD GPUs are cheaper than NVIDIA ones. Shared by the
// operator and the trace simulator so both admit and place the same way.
#pragma once

#include <vector>

#include "controllers/cost/policy.h"
#include "controllers/planner/planner.h"

namespace valley::cost {

// Sets each GPU node's price_micros (vendor, product, spot or on-demand) and returns `base` with the
// policy's facts.
planner::Config planner_config(const Policy& p, std::vector<planner::Node>& nodes, SystemTime now,
                               planner::Config base);

}  // namespace valley::cost
