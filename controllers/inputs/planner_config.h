// What a PricingPolicy tells the planner at an instant: what a GPU-hour costs on each node (the
// pool's GPU price, and the power it draws incl. PUE for the energy part), the energy tariff from now
// over the next week (so a reduceCost task can compare waiting for a cheaper window), how much growth
// must pay and from which priority tasks grow regardless. For Valley before price-first placement
// (valley-sim's valley-v1) also the off-peak facts and whether AMD is the cheaper vendor. Shared by
// the operator and the trace simulator so both admit and place the same way.
#pragma once

#include <vector>

#include "controllers/cost/policy.h"
#include "controllers/planner/planner.h"

namespace valley::cost {

// Sets a GPU node's price_micros and kw_milli (nothing for a node without GPUs); the rate they are
// from (the node's NodeRate, also for one without GPUs).
NodeRate price_node(const Policy& p, planner::Node& n);

// The policy's measured pairs (spec.sharing.pairs) as the planner reads them.
planner::PairRates pair_rates(const Policy& p);

// `base` with the policy's facts, for nodes priced already (price_node).
planner::Config planner_config(const Policy& p, const std::vector<const planner::Node*>& priced, SystemTime now,
                               planner::Config base);

// Prices each GPU node (price_node) and returns `base` with the policy's facts.
planner::Config planner_config(const Policy& p, std::vector<planner::Node>& nodes, SystemTime now,
                               planner::Config base);

// The energy price per kWh from `from` over `span`, one step per tariff change (at most `max_steps`).
std::vector<planner::TariffStep> tariff_steps(const Policy& p, SystemTime from, std::chrono::seconds span, int max_steps = 400);

}  // namespace valley::cost
