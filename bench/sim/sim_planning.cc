// The trace replay's planning: what the planner is given, and what its decisions do (sim_state.h).
#include "bench/sim/sim_state.h"

#include <algorithm>
#include <cmath>
#include <iostream>

namespace valley::sim::detail {

planner::Task Simulator::task_of(const SimJob& j) const {
  planner::Task t;
  t.key = j.trace.id;
  if (tenants_planned() && tenants_.count(j.trace.tenant)) t.tenant = j.trace.tenant;
  t.priority = policy_ == PolicyKind::Naive ? 0 : j.traits.priority;
  t.reduce_cost = j.traits.reduce_cost;
  t.amd_support = j.traits.amd;
  t.checkpointed = true;  // every replayed job checkpoints (periodically, and on SIGTERM)
  t.min_workers = j.traits.min_workers;
  t.max_workers = j.traits.max_workers;
  t.gpu_milli = 1000;
  t.created = at(j.trace.submit);
  if (policy_ == PolicyKind::Naive) t.node_selector["karpenter.sh/capacity-type"] = "on-demand";
  t.admitted = j.state == State::Running;
  t.workers = j.workers;
  t.last_resize = j.last_resize ? std::optional<SystemTime>(at(*j.last_resize)) : std::nullopt;
  if (policy_ == PolicyKind::Valley) {
    // What the operator knows: the progress it saw, its patience, and estimatedDuration.
    t.scaling = j.scaling;
    t.cheap_until = t.created + in_.pricing.reduce_cost_patience;
    if (j.state == State::Running && j.result.start >= 0)
      t.expected_end = planner::expected_end(at(j.result.start), std::chrono::seconds(j.trace.duration), j.scaling, j.gpus(),
                                             t.max_workers, growth_prior());
  }
  return t;
}

double Simulator::growth_prior() const {
  return in_.pricing.growth_min_marginal_milli > 0 ? static_cast<double>(in_.pricing.growth_min_marginal_milli) / 1000.0 : 1.0;
}

planner::Config Simulator::config_now(std::vector<planner::Node>& nodes) const {
  planner::Config config;
  switch (policy_) {
    case PolicyKind::Naive:
      config.placement = planner::Placement::Pack;  // packing, strictly in arrival order
      config.aging_step = std::chrono::seconds(0);
      config.min_marginal_efficiency = 0;
      break;
    case PolicyKind::Backfill:
      config = cost::planner_config(in_.pricing, nodes, at(now_), config);
      config.aging_step = std::chrono::seconds(0);  // priority, then arrival
      config.min_marginal_efficiency = 0;           // fixed sizes anyway
      break;
    case PolicyKind::ValleyV1:
      config = cost::planner_config(in_.pricing, nodes, at(now_), config);
      config.placement = planner::Placement::PackThenClass;
      config.reduce_cost = planner::ReduceCostRule::OffPeakOrIdle;
      config.min_marginal_efficiency = 0;
      config.fastest_priority = 101;
      break;
    case PolicyKind::Valley:
      config = cost::planner_config(in_.pricing, nodes, at(now_), config);
      break;
  }
  if (tenants_planned()) {
    config.tenants = tenants_;
    config.usage_mean_life_hours = static_cast<double>(in_.usage_half_life.count()) / 3600.0 / std::log(2.0);
  }
  return config;
}

void Simulator::replan() {
  std::vector<planner::Node> nodes;
  for (const auto& n : nodes_)
    if (n.alive) nodes.push_back(n.node);
  planner::Config config = config_now(nodes);
  if (policy_ == PolicyKind::Naive) {
    // Strictly in arrival order: the head starts when its gang fits, nothing overtakes it.
    for (auto& j : jobs_)
      if (j.state == State::Pending && j.needs_estimate) estimate_naive(j);
    for (;;) {
      std::vector<SimJob*> involved;
      SimJob* head = nullptr;
      for (auto& j : jobs_) {
        if (j.state == State::Running) involved.push_back(&j);
        if (j.state == State::Pending && !head) head = &j;
      }
      if (!head) return;
      involved.push_back(head);
      if (!apply(plan(nodes, involved, config), involved, config)) return;
    }
  }
  std::vector<SimJob*> involved;
  for (auto& j : jobs_)
    if (j.state == State::Running || j.state == State::Pending) involved.push_back(&j);
  if (!involved.empty()) apply(plan(nodes, involved, config), involved, config);
}

std::vector<planner::Decision> Simulator::plan(const std::vector<planner::Node>& nodes, const std::vector<SimJob*>& jobs,
                                    const planner::Config& config) {
  std::vector<planner::Task> tasks;
  tasks.reserve(jobs.size());
  for (const auto* j : jobs) tasks.push_back(task_of(*j));
  ++plan_calls_;
  return planner::plan(nodes, tasks, at(now_), config);
}

// Carries out decisions; true if some waiting job started.
bool Simulator::apply(const std::vector<planner::Decision>& decisions, const std::vector<SimJob*>& jobs, const planner::Config& config) {
  bool admitted = false;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    SimJob& j = *jobs[i];
    if (j.needs_estimate) estimate(j, d, config);
    switch (d.action) {
      case planner::Action::Wait:
        j.last_wait_reason = d.reason;
        break;
      case planner::Action::Keep:
        break;
      case planner::Action::Admit:
        if (j.state != State::Pending) break;
        start_segment(j, d.placement, j.resumed);
        if (j.result.claim && j.result.claim_wait < 0) {
          j.result.claim_wait = now_ - j.trace.submit;
          if (std::getenv("VALLEY_SIM_CLAIMS") && j.result.claim_wait > 120)
            std::cerr << "claim " << j.trace.id << " tenant " << j.trace.tenant << " min " << j.traits.min_workers << " prio " << j.traits.priority
                      << " waited " << j.result.claim_wait << " s; last reason: " << j.last_wait_reason << "\n";
        }
        if (j.resumed) ++j.result.restarts;
        j.resumed = true;
        admitted = true;
        break;
      case planner::Action::Grow:
      case planner::Action::Shrink:
        if (j.state != State::Running || same_placement(j.workers, d.placement)) break;
        // A new world size or new nodes: checkpoint, stop, start again from the checkpoint.
        end_segment(j);
        start_segment(j, d.placement, true);
        j.last_resize = now_;
        ++j.result.restarts;
        break;
      case planner::Action::Preempt:
        if (j.state != State::Running) break;
        end_segment(j);  // stopped with SIGTERM: it checkpoints in its grace period
        j.state = State::Pending;
        ++j.result.preemptions;
        break;
    }
  }
  return admitted;
}

}  // namespace valley::sim::detail
