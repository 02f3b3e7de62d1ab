// The trace replay's tenants: quotas, usage, fair share (sim_state.h).
#include "bench/sim/sim_state.h"

#include <algorithm>
#include <cmath>
#include <iostream>

#include "controllers/planner/fair_share.h"

namespace valley::sim::detail {

// Each tenant's nominal quota in every pool, its normalized entitlement; its fair-share weight the
// same, or 1/n with equal_fair_share_weights. Strict: nothing may be borrowed (what rounding leaves
// over stays idle).
void Simulator::setup_tenants() {
  double total = 0;
  for (const auto& [name, w] : in_.tenant_weights) total += std::max(0.0, w);
  if (total <= 0) return;
  std::map<std::string, int64_t> capacity;  // planner pool -> thousandths of a GPU
  for (const auto& n : nodes_) capacity[planner::pool_of(n.node)] += int64_t{n.pool->gpus_per_node} * 1000;
  for (const auto& [name, w] : in_.tenant_weights) {
    planner::Tenant t;
    const double entitled = std::max(0.0, w) / total;
    t.weight = in_.equal_fair_share_weights ? 1.0 / static_cast<double>(in_.tenant_weights.size()) : entitled;
    for (const auto& [pool, milli] : capacity) {
      planner::PoolQuota q;
      q.nominal_milli = static_cast<int64_t>(std::floor(static_cast<double>(milli) * entitled));
      if (in_.tenancy == Tenancy::Strict) q.borrowing_limit_milli = 0;
      t.quota[pool] = q;
    }
    tenants_[name] = t;
  }
}

// GPUs of running jobs on each node.
std::map<std::string, int64_t> Simulator::used_by_node() const {
  std::map<std::string, int64_t> used;
  for (const auto& j : jobs_)
    if (j.state == State::Running)
      for (const auto& w : j.workers) used[w.node] += w.count;
  return used;
}

// A job arriving when its gang fits in its tenant's unused nominal quota, summed over the pools of
// one vendor it may use (quotas are per pool, as the planner keeps them, and a gang may use several
// pools of its vendor), while those pools have not enough GPUs free: the tenant's quota there is
// held by others, and must come back.
bool Simulator::claims_nominal(const SimJob& j) const {
  auto tenant = tenants_.find(j.trace.tenant);
  if (tenant == tenants_.end() || j.traits.reduce_cost || j.trace.submit >= window_end_) return false;
  const planner::Task probe = where_it_may_run(j);
  auto used = used_by_node();
  std::map<std::string, int64_t> free, usage;  // by pool
  for (const auto& n : nodes_)
    if (n.alive && usable_by(probe, n)) free[planner::pool_of(n.node)] += n.node.schedulable ? n.pool->gpus_per_node - used[n.node.name] : 0;
  for (const auto& other : jobs_)
    if (other.state == State::Running && other.trace.tenant == j.trace.tenant)
      for (const auto& w : other.workers) usage[planner::pool_of(node(w.node).node)] += w.count * 1000;
  std::map<std::string, int64_t> free_by_vendor, unused_by_vendor;
  for (const auto& [pool, gpus] : free) {
    const std::string vendor = planner::vendor_of_pool(pool);
    free_by_vendor[vendor] += gpus;
    auto q = tenant->second.quota.find(pool);
    const int64_t nominal = q == tenant->second.quota.end() ? 0 : q->second.nominal_milli;
    unused_by_vendor[vendor] += std::max<int64_t>(0, nominal - usage[pool]);
  }
  bool held_by_others = false;
  for (const auto& [vendor, gpus] : free_by_vendor) {
    if (gpus >= j.traits.min_workers) return false;  // it starts at once anyway
    held_by_others = held_by_others || int64_t{j.traits.min_workers} * 1000 <= unused_by_vendor[vendor];
  }
  return held_by_others;
}

// Over [from, to) nothing changes: decays each tenant's usage and, inside the window, takes the
// fairness figures (weighted max-min fair shares of the live GPUs by demand: what runs plus what
// waits at its full size).
void Simulator::measure_tenants(int64_t from, int64_t to) {
  if (tenants_.empty() || to <= from) return;
  std::map<std::string, double> held, demand;
  std::set<std::string> backlogged;
  for (const auto& j : jobs_) {
    if (!tenants_.count(j.trace.tenant)) continue;
    if (j.state == State::Running) {
      held[j.trace.tenant] += j.gpus();
      demand[j.trace.tenant] += j.gpus();
    } else if (j.state == State::Pending && !j.traits.reduce_cost) {
      demand[j.trace.tenant] += j.traits.max_workers;
      backlogged.insert(j.trace.tenant);
    }
  }
  for (auto& [name, t] : tenants_)
    t.decayed_gpu_hours = tenancy::decay_usage(t.decayed_gpu_hours, held[name], std::chrono::seconds(to - from), in_.usage_half_life);
  const int64_t end = std::min(to, window_end_);
  if (end <= from) return;
  const double dt = static_cast<double>(end - from);
  for (int64_t s = from; s < end;) {  // GPUs held per tenant, by hour
    int64_t hour = s / 3600, stop = std::min(end, (hour + 1) * 3600);
    if (static_cast<int64_t>(tenant_hourly_.size()) <= hour) tenant_hourly_.resize(static_cast<size_t>(hour + 1));
    for (const auto& [name, g] : held) tenant_hourly_[static_cast<size_t>(hour)][name] += g * static_cast<double>(stop - s) / 3600.0;
    s = stop;
  }
  double capacity = 0;
  for (const auto& n : nodes_)
    if (n.alive) capacity += n.pool->gpus_per_node;
  if (capacity <= 0) return;
  std::map<std::string, planner::FairShareClaim> claims;
  for (const auto& [name, d] : demand) claims[name] = {tenants_.at(name).weight, static_cast<int64_t>(std::llround(d * 1000))};
  std::map<std::string, double> fair;
  for (const auto& [name, milli] : planner::fair_shares(static_cast<int64_t>(std::llround(capacity * 1000)), claims))
    fair[name] = static_cast<double>(milli) / 1000;
  for (const auto& name : backlogged) {
    auto& f = figures_[name];
    f.backlogged_hours += dt / 3600;
    f.share += held[name] / capacity * dt;
    f.fair_share += fair[name] / capacity * dt;
  }
  for (const auto& [name, g] : held) figures_[name].gpu_hours += g * dt / 3600;
  // Jain's index of held / fair over the tenants with demand, while some tenant is backlogged
  // (with none, everyone has what it asks and the index is 1 by construction).
  double sum = 0, squares = 0;
  int n = 0;
  for (const auto& [name, f] : fair) {
    if (f <= 0) continue;
    const double x = held[name] / f;
    sum += x;
    squares += x * x;
    ++n;
  }
  if (!backlogged.empty() && n >= 2 && squares > 0) {
    jain_weighted_ += sum * sum / (n * squares) * dt;
    jain_seconds_ += dt;
  }
}

}  // namespace valley::sim::detail
