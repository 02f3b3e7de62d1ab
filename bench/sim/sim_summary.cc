// The trace replay's figures (sim_state.h).
#include "bench/sim/sim_state.h"

#include "bench/sim/ideal.h"

#include <algorithm>
#include <cmath>
#include <iostream>

namespace valley::sim::detail {

void Simulator::split_cost(const SimJob& j, Result::MoneySplit& split) const {
  const JobTraits real = traits_of(j.trace, in_.workload);  // what the job may use, whatever the policy ran it on
  double cheapest = -1;
  for (const auto& pool : in_.cluster.pools)
    if (pool.vendor != "amd" || real.amd) {
      const double price = cheapest_by_pool_.at(pool.name);
      cheapest = cheapest < 0 ? price : std::min(cheapest, price);
    }
  const double m = static_cast<double>(cost::multiplier_milli(in_.pricing, j.traits.priority)) / 1000.0;
  const double held = static_cast<double>(j.result.gpu_seconds);
  const double wasted = static_cast<double>(j.restart_gpu_seconds) + j.result.work_lost_gpu_seconds;
  const double ideal = std::min(ideal_gpu_seconds(in_, j.trace, real), std::max(0.0, held - wasted));
  split.ideal += m * ideal * cheapest;
  split.size += m * (held - wasted - ideal) * cheapest;
  split.restarts += m * wasted * cheapest;
  split.capacity += m * (j.held_at_cheapest - held * cheapest);
  split.tariff += m * (static_cast<double>(j.charge.gpu + j.charge.energy) - j.held_at_cheapest);
}

Result Simulator::summarize() {
  Result r;
  r.policy = policy_;
  r.tenancy = in_.tenancy;
  r.topology_aware = in_.topology_aware;
  r.multi_gpu_segments = multi_gpu_segments_;
  r.spread_node_segments = spread_node_segments_;
  r.spread_rack_segments = spread_rack_segments_;
  r.spread_far_segments = spread_far_segments_;
  std::vector<double> jct, jct_not_reduce_cost, queue;
  for (auto& j : jobs_) {
    if (j.state == State::Rejected) {
      ++r.rejected;
      continue;
    }
    if (j.state != State::Done) {
      if (j.state == State::Running) {
        end_segment(j);
        j.result.cost = cost::apply_multiplier(j.charge.gpu + j.charge.energy, cost::multiplier_milli(in_.pricing, j.traits.priority));
      }
      ++r.unfinished;
      r.split.unfinished += static_cast<double>(j.result.cost);
    } else {
      split_cost(j, r.split);
      jct.push_back(static_cast<double>(j.result.end - j.result.submit));
      if (!j.result.asked_reduce_cost) jct_not_reduce_cost.push_back(static_cast<double>(j.result.end - j.result.submit));
      queue.push_back(static_cast<double>(j.result.start - j.result.submit));
      r.useful_gpu_hours += static_cast<double>(j.trace.duration) * j.trace.gpus / 3600.0;
      r.makespan = std::max(r.makespan, j.result.end);
    }
    r.cost += j.result.cost;
    r.gpu_cost += j.charge.gpu;
    r.energy_cost += j.charge.energy;
    r.held_gpu_hours += static_cast<double>(j.result.gpu_seconds) / 3600.0;
    r.preemptions += j.result.preemptions;
    r.restarts += j.result.restarts;
    r.launcher_losses += j.result.launcher_losses;
    r.work_lost_gpu_hours += j.result.work_lost_gpu_seconds / 3600.0;
    r.jobs.push_back(j.result);
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / static_cast<double>(v.size());
  };
  const auto& pct = percentile;
  r.mean_jct = mean(jct);
  r.mean_jct_not_reduce_cost = mean(jct_not_reduce_cost);
  r.p50_jct = pct(jct, 50);
  r.p95_jct = pct(jct, 95);
  for (const auto& [pool, secs] : pool_gpu_seconds_) r.pool_gpu_hours[pool] = static_cast<double>(secs) / 3600.0;
  auto fit = [&](bool off) {
    std::vector<double> errors, widths;
    int inside = 0;
    for (const auto& j : r.jobs) {
      if (!j.estimated || j.end < 0 || j.cost <= 0) continue;
      const double est = static_cast<double>(off ? j.estimate_off : j.estimate);
      const double lo = static_cast<double>(off ? j.low_off : j.low), hi = static_cast<double>(off ? j.high_off : j.high);
      const double fin = static_cast<double>(j.cost);
      errors.push_back(std::abs(fin - est) / fin);
      widths.push_back(est > 0 ? (hi - lo) / est : 0);
      inside += fin >= lo && fin <= hi;
    }
    Result::EstimateFit f;
    f.median_error = pct(errors, 50);
    f.median_width = pct(widths, 50);
    f.inside = errors.empty() ? 0 : static_cast<double>(inside) / static_cast<double>(errors.size());
    return f;
  };
  r.estimates = fit(false);
  r.estimates_off = fit(true);
  r.p99_jct = pct(jct, 99);
  r.mean_queue = mean(queue);
  r.p99_queue = pct(queue, 99);
  double held = 0, alive = 0;
  for (size_t h = 0; h < held_hourly_.size(); ++h) {
    if (static_cast<int64_t>(h) * 3600 >= r.makespan) break;
    held += held_hourly_[h];
    alive += alive_hourly_[h];
    r.hourly_allocation_percent.push_back(alive_hourly_[h] > 0 ? 100.0 * held_hourly_[h] / alive_hourly_[h] : 0.0);
  }
  r.allocation_percent = alive > 0 ? 100.0 * held / alive : 0;
  double window_held = 0, window_alive = 0;
  for (size_t h = 0; h < held_hourly_.size() && static_cast<int64_t>(h) * 3600 < window_end_; ++h) {
    window_held += held_hourly_[h];
    window_alive += alive_hourly_[h];
  }
  r.window_allocation_percent = window_alive > 0 ? 100.0 * window_held / window_alive : 0;
  for (const auto& [name, t] : tenants_) {
    auto f = figures_[name];
    f.weight = t.weight;
    for (const auto& [pool, q] : t.quota) f.nominal_gpus += static_cast<double>(q.nominal_milli) / 1000.0;
    if (f.backlogged_hours > 0) {  // time sums to means
      f.share /= f.backlogged_hours * 3600;
      f.fair_share /= f.backlogged_hours * 3600;
    }
    r.tenants[name] = f;
  }
  for (const auto& j : r.jobs) {
    if (auto it = r.tenants.find(j.tenant); it != r.tenants.end()) ++it->second.jobs;
    if (j.claim) r.claim_waits.push_back(static_cast<double>(j.claim_wait >= 0 ? j.claim_wait : now_ - j.submit));
  }
  r.jain = jain_seconds_ > 0 ? jain_weighted_ / jain_seconds_ : 0;
  r.jain_hours = jain_seconds_ / 3600;
  r.hourly_tenant_gpus = tenant_hourly_;
  r.interruptions = interruptions_;
  r.plan_calls = plan_calls_;
  if (cloud()) {
    r.bought = bill_nodes();
    r.bought->sold_gpu_hours = r.held_gpu_hours;
  }
  r.kpis = measure_kpis(kpi_jobs(), kpi_settings());
  return r;
}

std::vector<KpiJob> Simulator::kpi_jobs() const {
  std::vector<KpiJob> out;
  out.reserve(jobs_.size());
  for (const auto& j : jobs_) {
    if (j.state == State::Rejected) continue;
    KpiJob k;
    k.id = j.trace.id;
    k.user = j.trace.tenant;
    k.priority = j.traits.priority;
    k.waits_by_choice = j.traits.reduce_cost;  // as this policy runs it: the peers clear it
    k.submit = j.trace.submit;
    k.end = j.state == State::Done ? j.result.end : -1;
    k.min_gpu_milli = int64_t{j.traits.min_workers} * 1000;
    k.run_seconds = j.trace.duration;
    // What advanced it (not restarting, not redone), no more than its work at the size it asked.
    const double advanced = static_cast<double>(j.result.gpu_seconds - j.restart_gpu_seconds) - j.result.work_lost_gpu_seconds;
    k.useful_gpu_seconds = std::max(0.0, std::min(static_cast<double>(j.trace.duration) * j.trace.gpus, advanced));
    k.segments = j.result.segments;
    out.push_back(std::move(k));
  }
  return out;
}

KpiSettings Simulator::kpi_settings() const {
  KpiSettings s;
  for (const auto& pool : in_.cluster.pools) s.capacity_gpu_milli += int64_t{pool.nodes} * pool.gpus_per_node * 1000;
  s.horizon = now_;
  return s;
}

}  // namespace valley::sim::detail
