// Which rates a task could be charged before it is placed: the GPU nodes its workers could use
// (vendor, the template's nodeSelector, a GPU resource that fits its request), priced; and the one
// it is most likely to get (where it is placed; else the cheapest on-demand capacity, or the
// cheapest of all for a reduceCost task). Shared by the controller's estimate and valleyctl.
#pragma once

#include <functional>

#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

#include "controllers/cost/engine.h"
#include "controllers/cost/policy.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/api/spec.h"

namespace valley::cost {

// `nodes`: as the planner reads them (their GPUs whether a device plugin or DRA publishes them).
std::vector<NodeRate> candidate_rates(const Policy& p, const api::TaskSpec& spec, const nlohmann::json& task_object,
                                      const std::vector<planner::Node>& nodes);

std::optional<NodeRate> likely_rate(const api::TaskSpec& spec, const std::vector<NodeRate>& candidates,
                                    const std::optional<NodeRate>& placed = std::nullopt);

// The basis of the task's estimate from the planner's decision for it: the pool of its placement, or
// of the cheaper option it waits for, else the likeliest candidate; when it starts (now, or the
// option's expected start); the size it aims for and how much longer than estimatedDuration that
// takes by its measured scaling (or the planner's prior: growth just pays).
EstimateBasis estimate_basis(const api::TaskSpec& spec, const planner::Task& t, const planner::Decision& d,
                             const planner::Config& c, const std::map<std::string, NodeRate>& node_rates,
                             const std::vector<NodeRate>& candidates, SystemTime now);
// The same with each node's rate looked up by name (null: not a priced GPU node).
EstimateBasis estimate_basis(const api::TaskSpec& spec, const planner::Task& t, const planner::Decision& d,
                             const planner::Config& c, const std::function<const NodeRate*(const std::string&)>& node_rate,
                             const std::vector<NodeRate>& candidates, SystemTime now);

}  // namespace valley::cost
