// The trace replay's estimates at submission, as the operator makes them (sim_state.h).
#include "bench/sim/sim_state.h"

#include "controllers/inputs/task_inputs.h"

#include <algorithm>
#include <cmath>
#include <iostream>

namespace valley::sim::detail {

// --- estimates at submission, as the operator makes them ------------------------------------
api::TaskSpec Simulator::spec_of(const SimJob& j, int64_t duration_seconds) const {
  api::TaskSpec spec;
  spec.name = j.trace.id;
  spec.priority = j.traits.priority;
  spec.min_workers = j.traits.min_workers;
  spec.max_workers = j.traits.max_workers;
  spec.reduce_cost = j.traits.reduce_cost;
  spec.vendors = j.vendors;
  spec.checkpoint_uri = "s3://sim/" + j.trace.id;
  spec.estimated_duration = std::chrono::seconds(std::max<int64_t>(1, duration_seconds));
  return spec;
}

// The user's estimatedDuration off by up to +-duration_error_percent (a stable hash of the id).
int64_t Simulator::off_duration(const SimJob& j) const {
  double e = (percentile_of(j.trace.id, "duration-error") - 50) / 50.0 * in_.duration_error_percent / 100.0;
  return static_cast<int64_t>(std::llround(static_cast<double>(j.trace.duration) * (1 + e)));
}

std::vector<cost::NodeRate> Simulator::candidates_of(const SimJob& j) const {
  std::vector<cost::NodeRate> out;
  for (const auto& n : nodes_)
    if (!n.gone && may_use(j, *n.pool)) out.push_back(n.rate);
  for (const auto& [pool, n] : prototypes_)  // bought capacity: as many as the pool's limit lets be bought
    if (may_use(j, *n.pool)) out.insert(out.end(), static_cast<size_t>(n.pool->nodes), n.rate);
  return out;
}

void Simulator::learn_duration(const SimJob& j) {
  const std::string ns = namespace_of(j);
  if (auto r = inputs::duration_ratio_of(task_object(j, policy_, ns, at(0)))) duration_ratios_[ns].push_back(*r);
  if (auto r = inputs::duration_ratio_of(task_object(j, policy_, ns, at(0), off_duration(j)))) duration_ratios_off_[ns].push_back(*r);
}

void Simulator::record_estimate(SimJob& j, const cost::EstimateBasis& basis) {
  j.needs_estimate = false;
  const std::string ns = namespace_of(j);
  cost::EstimateBasis stated = basis, off_by = basis;
  stated.spread = cost::duration_spread(duration_ratios_[ns]);
  off_by.spread = cost::duration_spread(duration_ratios_off_[ns]);
  auto exact = cost::estimate(in_.pricing, spec_of(j, j.trace.duration), stated);
  auto off = cost::estimate(in_.pricing, spec_of(j, off_duration(j)), off_by);
  if (!exact || !off) return;
  j.result.estimated = true;
  j.result.estimate = exact->expected;
  j.result.low = exact->low;
  j.result.high = exact->high;
  j.result.estimate_off = off->expected;
  j.result.low_off = off->low;
  j.result.high_off = off->high;
}

// The peers' jobs (and Valley before this change) at their full size on the pool they got, or
// the cheapest on-demand pool they may use.
cost::EstimateBasis Simulator::fixed_basis(const SimJob& j, const planner::Decision* d) const {
  cost::EstimateBasis b;
  b.start = at(now_);
  b.workers = j.traits.max_workers;
  std::optional<cost::NodeRate> placed;
  if (d && !d->placement.empty()) placed = rate_of(d->placement.front().node);
  if (auto r = cost::likely_rate(spec_of(j, j.trace.duration), candidates_of(j), placed)) b.rate = *r;
  return b;
}

void Simulator::estimate(SimJob& j, const planner::Task& input, const planner::Decision& d, const planner::Config& config) {
  if (!runs_operator_planner(policy_)) return record_estimate(j, fixed_basis(j, &d));
  std::map<std::string, cost::NodeRate> rates;
  for (const auto& n : nodes_) rates[n.node.name] = n.rate;
  for (const auto& w : d.placement)
    if (api::is_provisionable(w.node)) rates[w.node] = rate_of(w.node);
  record_estimate(j, cost::estimate_basis(spec_of(j, j.trace.duration), input, d, config, rates, candidates_of(j), at(now_)));
}

}  // namespace valley::sim::detail
