#include "controllers/cost/planner_config.h"

#include <optional>

namespace valley::cost {

planner::Config planner_config(const Policy& p, std::vector<planner::Node>& nodes, SystemTime now,
                               planner::Config config) {
  config.off_peak = off_peak(p, now);
  if (auto next = next_off_peak(p, now)) config.next_off_peak = kube::format_time(*next);
  config.idle_percent = p.reduce_cost_idle_percent;
  // The cheapest AMD GPU-hour against the cheapest NVIDIA one, as the nodes are priced.
  std::optional<Micros> amd, nvidia;
  for (auto& n : nodes) {
    if (n.vendor != "amd" && n.vendor != "nvidia") continue;
    n.price_micros = rate_for(p, n.vendor, n.labels).gpu_per_hour;
    auto& best = n.vendor == "amd" ? amd : nvidia;
    if (!best || n.price_micros < *best) best = n.price_micros;
  }
  config.amd_cheaper = !amd || !nvidia || *amd < *nvidia;
  return config;
}

}  // namespace valley::cost
