#include "controllers/inputs/candidates.h"

#include <algorithm>

#include "controllers/gpu/resources.h"

namespace valley::cost {

std::vector<NodeRate> candidate_rates(const Policy& p, const api::TaskSpec& spec, const nlohmann::json& task_object,
                                      const std::vector<planner::Node>& nodes) {
  const planner::Task shape = planner::task_from(spec, task_object, {});
  std::vector<NodeRate> out;
  for (const auto& node : nodes) {
    if (!spec.runs_on(node.vendor)) continue;
    if (!planner::selects(shape, node) || !planner::worker_shape(spec.gpus.milli, node)) continue;  // cannot host a worker
    out.push_back(rate_for(p, node.vendor, node.labels, node.dra_product));
  }
  return out;
}

std::optional<NodeRate> likely_rate(const api::TaskSpec& spec, const std::vector<NodeRate>& candidates,
                                    const std::optional<NodeRate>& placed) {
  if (placed) return placed;
  std::optional<NodeRate> best;
  for (const auto& c : candidates)
    if ((spec.reduce_cost || c.capacity_class == "on-demand") && (!best || c.gpu_per_hour < best->gpu_per_hour)) best = c;
  if (!best && !candidates.empty()) best = candidates.front();
  return best;
}

EstimateBasis estimate_basis(const api::TaskSpec& spec, const planner::Task& t, const planner::Decision& d,
                             const planner::Config& c, const std::map<std::string, NodeRate>& node_rates,
                             const std::vector<NodeRate>& candidates, SystemTime now) {
  auto rate_of = [&node_rates](const std::string& node) -> const NodeRate* {
    auto it = node_rates.find(node);
    return it == node_rates.end() ? nullptr : &it->second;
  };
  return estimate_basis(spec, t, d, c, rate_of, candidates, now);
}

EstimateBasis estimate_basis(const api::TaskSpec& spec, const planner::Task& t, const planner::Decision& d,
                             const planner::Config& c, const std::function<const NodeRate*(const std::string&)>& node_rate,
                             const std::vector<NodeRate>& candidates, SystemTime now) {
  EstimateBasis b;
  b.start = now;
  b.priority = t.priority;
  // Spot capacity only for a task that checkpoints (or asks for spot itself), as the planner places.
  auto may_land = [&t](const NodeRate& r) { return r.capacity_class != "spot" || t.checkpointed || t.selects_spot; };
  std::string node = !d.placement.empty() ? d.placement.front().node : d.expected_node;
  if (const NodeRate* rate = node.empty() ? nullptr : node_rate(node)) {
    b.rate = *rate;
    b.why = !d.placement.empty() ? "where it is placed" : "the cheaper capacity it waits for";
  } else {
    // Not placeable now: the cheapest capacity it may use.
    std::optional<NodeRate> best;
    for (const auto& r : candidates)
      if (may_land(r) && (!best || r.gpu_per_hour < best->gpu_per_hour)) best = r;
    if (auto l = likely_rate(spec, candidates); !best && l) best = l;
    if (best) b.rate = *best;
    b.why = "the cheapest capacity it may use, once it fits";
  }
  if (d.placement.empty()) {
    // Until it is placed, nothing holds it to the capacity assumed: the high end is the dearest it may use.
    for (const auto& r : candidates)
      if (may_land(r) && r.gpu_per_hour > b.rate.gpu_per_hour && (!b.high_rate || r.gpu_per_hour > b.high_rate->gpu_per_hour))
        b.high_rate = r;
  }
  // A task that may share a GPU: on a shared one it is charged its share and runs at least as fast
  // as its worst pair that pays (the planner pairs no other way).
  const auto worst = planner::may_share(t, c) ? c.pair_rates->worst_paying(t.sharing_profile) : std::nullopt;
  if (worst) {
    const auto replicas = d.placement.empty() ? std::nullopt : gpu::replicas_of(d.placement.front().gpu_resource);
    if (replicas) b.shared = EstimateBasis::Shared{gpu::share_milli(d.placement.front().gpu_resource, 1), *worst, true};
    else if (d.placement.empty() && c.pair_nodes) b.shared = EstimateBasis::Shared{500, *worst, false};
  }
  if (d.expected_start && *d.expected_start > now) b.start = *d.expected_start;
  const int aim = planner::target_size(t, 0, c);
  b.workers = std::max(d.workers, aim);
  const double prior = c.min_marginal_efficiency > 0 ? c.min_marginal_efficiency : 1.0;
  b.duration_factor = planner::speedup_ratio(t.scaling, b.workers, t.max_workers, prior);
  return b;
}

}  // namespace valley::cost
