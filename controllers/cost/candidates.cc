#include "controllers/cost/candidates.h"

#include <algorithm>

namespace valley::cost {

std::vector<NodeRate> candidate_rates(const Policy& p, const task::TaskSpec& spec, const nlohmann::json& task_object,
                                      const std::vector<nlohmann::json>& nodes, const planner::NodeFacts& facts) {
  const planner::Task shape = planner::task_from(spec, task_object, {});
  std::vector<NodeRate> out;
  for (const auto& n : nodes) {
    planner::Node node = planner::node_from(n, facts);
    if (node.vendor != "nvidia" && !(node.vendor == "amd" && spec.amd_support)) continue;
    if (!planner::selects(shape, node) || !planner::worker_shape(spec.gpus.milli, node)) continue;  // cannot host a worker
    out.push_back(rate_for(p, node.vendor, node.labels));
  }
  return out;
}

std::optional<NodeRate> likely_rate(const task::TaskSpec& spec, const std::vector<NodeRate>& candidates,
                                    const std::optional<NodeRate>& placed) {
  if (placed) return placed;
  std::optional<NodeRate> best;
  for (const auto& c : candidates)
    if ((spec.reduce_cost || c.capacity_class == "on-demand") && (!best || c.gpu_per_hour < best->gpu_per_hour)) best = c;
  if (!best && !candidates.empty()) best = candidates.front();
  return best;
}

}  // namespace valley::cost
