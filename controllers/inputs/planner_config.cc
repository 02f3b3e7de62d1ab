#include "controllers/inputs/planner_config.h"

#include <algorithm>
#include <optional>

#include "controllers/gpu/resources.h"

#include "controllers/api/vendors.h"

namespace valley::cost {

std::vector<planner::TariffStep> tariff_steps(const Policy& p, SystemTime from, std::chrono::seconds span, int max_steps) {
  std::vector<planner::TariffStep> out;
  const SystemTime end = from + span;
  for (SystemTime t = from; t < end && static_cast<int>(out.size()) < max_steps;) {
    Micros price = tariff_at(p, t).per_kwh;
    if (out.empty() || out.back().per_kwh_micros != price) out.push_back({t, price});
    SystemTime next = next_tariff_boundary(p, t);
    if (next <= t) break;
    t = next;
  }
  return out;
}

NodeRate price_node(const Policy& p, planner::Node& n) {
  NodeRate rate = rate_for(p, n.vendor, n.labels, n.dra_product);
  if (api::is_vendor(n.vendor)) {
    n.price_micros = rate.gpu_per_hour;
    n.kw_milli = int64_t{rate.watts} * p.pue_milli / 1000;
  }
  return rate;
}

planner::PairRates pair_rates(const Policy& p) {
  planner::PairRates rates;
  for (const auto& pair : p.sharing_pairs) rates.set(pair.a, pair.b, pair.a_milli / 1000.0, pair.b_milli / 1000.0);
  return rates;
}

planner::Config planner_config(const Policy& p, const std::vector<const planner::Node*>& priced, SystemTime now,
                               planner::Config config) {
  config.off_peak = off_peak(p, now);
  if (auto next = next_off_peak(p, now)) config.next_off_peak = kube::format_time(*next);
  config.idle_percent = p.reduce_cost_idle_percent;
  config.reduce_cost_min_saving_percent = p.reduce_cost_min_saving_percent;
  config.min_marginal_efficiency = static_cast<double>(p.growth_min_marginal_milli) / 1000.0;
  config.fastest_priority = p.growth_fast_priority;
  config.time_bands.clear();
  for (const auto& b : p.growth_time_bands)
    config.time_bands.push_back({b.min_priority, static_cast<double>(b.min_marginal_milli) / 1000.0});
  config.spot_needs_checkpoint = true;
  config.move_restart_cost = p.move_restart_cost;
  if (!p.sharing_pairs.empty()) config.pair_rates = std::make_shared<planner::PairRates>(pair_rates(p));
  // A reduceCost task looks at most its patience ahead (a deadline may reach further: a week).
  config.tariff = tariff_steps(p, now, std::max<std::chrono::seconds>(p.reduce_cost_patience, std::chrono::hours(24 * 7)));
  // The cheapest AMD GPU-hour against the cheapest NVIDIA one, as the nodes are priced.
  std::optional<Micros> amd, nvidia;
  for (const planner::Node* n : priced) {
    if (n->vendor != "amd" && n->vendor != "nvidia") continue;
    auto& best = n->vendor == "amd" ? amd : nvidia;
    if (!best || n->price_micros < *best) best = n->price_micros;
  }
  config.amd_cheaper = !amd || !nvidia || *amd < *nvidia;
  config.pair_nodes = std::any_of(priced.begin(), priced.end(), [](const planner::Node* n) {
    const auto r = gpu::replicas_of(n->replicas_resource);
    return r && r->replicas == 2;
  });
  return config;
}

planner::Config planner_config(const Policy& p, std::vector<planner::Node>& nodes, SystemTime now, planner::Config base) {
  std::vector<const planner::Node*> priced;
  for (auto& n : nodes) {
    price_node(p, n);
    priced.push_back(&n);
  }
  return planner_config(p, priced, now, std::move(base));
}

}  // namespace valley::cost
