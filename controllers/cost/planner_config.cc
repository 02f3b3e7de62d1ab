#include "controllers/cost/planner_config.h"

#include <optional>

namespace valley::cost {

planner::Config planner_config(const Policy& p, const std::vector<planner::Node>& nodes, SystemTime now,
                               planner::Config config) {
  config.off_peak = off_peak(p, now);
  if (auto next = next_off_peak(p, now)) config.next_off_peak = kube::format_time(*next);
  config.idle_percent = p.reduce_cost_idle_percent;
  // Compare what the cluster's GPUs would cost, on demand: the cheapest AMD against the cheapest NVIDIA.
  std::optional<Micros> amd, nvidia;
  for (const auto& n : nodes) {
    if (n.vendor != "amd" && n.vendor != "nvidia") continue;
    Micros price = rate_for(p, n.vendor, n.labels).gpu_per_hour;
    auto& best = n.vendor == "amd" ? amd : nvidia;
    if (!best || price < *best) best = price;
  }
  config.amd_cheaper = !amd || !nvidia || *amd < *nvidia;
  return config;
}

void price_nodes(const Policy& p, std::vector<planner::Node>& nodes) {
  for (auto& n : nodes)
    if (n.vendor == "amd" || n.vendor == "nvidia") n.price_micros = rate_for(p, n.vendor, n.labels).gpu_per_hour;
}

}  // namespace valley::cost
