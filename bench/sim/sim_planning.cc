// The trace replay's planning: what the planner is given, and what its decisions do (sim_state.h).
#include "bench/sim/sim_state.h"

#include <algorithm>
#include <cmath>
#include <iostream>

namespace valley::sim::detail {

namespace {
// VALLEY_SIM_DEBUG (main.cc): whether job j's resizes, moves and reasons to wait are printed.
bool debugged(const SimJob& j) {
  static const char* const prefix = std::getenv("VALLEY_SIM_DEBUG");
  return prefix && j.trace.id.rfind(prefix, 0) == 0;
}
// "node xN, ..." of a placement, for the debug lines.
std::string nodes_of(const std::vector<planner::Task::Worker>& placement) {
  std::map<std::string, int64_t> on;
  for (const auto& w : placement) on[w.node] += w.count;
  std::string out;
  for (const auto& [node, count] : on) out += (out.empty() ? "" : ", ") + node + " x" + std::to_string(count);
  return out;
}
}  // namespace

// The peers schedule as the schedulers they stand for; Valley with the operator's configuration.
planner::Config Simulator::config_for(const inputs::PlanInputs::Round& r) const {
  planner::Config config = r.config;
  std::vector<planner::Node> nodes;
  for (const planner::Node* n : r.nodes) nodes.push_back(*n);
  switch (policy_) {
    case PolicyKind::Naive:
      config = planner::Config{};
      config.placement = planner::Placement::Pack;  // packing, strictly in arrival order
      config.aging_step = std::chrono::seconds(0);
      config.min_marginal_efficiency = 0;
      break;
    case PolicyKind::Backfill:
      config = cost::planner_config(in_.pricing, nodes, at(now_), planner::Config{});
      config.aging_step = std::chrono::seconds(0);  // priority, then arrival
      config.min_marginal_efficiency = 0;           // fixed sizes anyway
      config.move_restart_cost = std::chrono::seconds(0);  // a job stays where it started
      config.weigh_node_lifetimes = false;                 // kube-scheduler knows no durations
      config.preempt_in_pool_order = in_.peer_as_kueue;
      break;
    case PolicyKind::ValleyV1:
      config = cost::planner_config(in_.pricing, nodes, at(now_), planner::Config{});
      config.placement = planner::Placement::PackThenClass;
      config.reduce_cost = planner::ReduceCostRule::OffPeakOrIdle;
      config.min_marginal_efficiency = 0;
      config.fastest_priority = 101;
      config.move_restart_cost = std::chrono::seconds(0);
      config.weigh_node_lifetimes = false;
      break;
    case PolicyKind::ValleyV2:
      config.scaling_priors = false;  // before issue 41's levers: every task starts at its minimum,
      config.time_bands.clear();      // grows only where it pays, reduceCost or not,
      config.reduce_cost_min_saving_percent = 0;  // and reduceCost waits for any saving,
      config.move_restart_cost = std::chrono::seconds(0);  // and a running task never moves,
      config.weigh_node_lifetimes = false;                 // nor weighs how long it keeps a node up
      break;
    case PolicyKind::Valley:
      break;
  }
  if (runs_operator_planner(policy_)) config.aging_step = in_.aging_step;
  // The NodePools' limits bind every policy; the peers buy the cheapest class with room first.
  config.pool_budgets = r.config.pool_budgets;
  if (!runs_operator_planner(policy_)) config.up_before_bought = false;
  config.launcher_nodes_known = false;  // launchers run on CPU nodes the replay does not model
  config.topology.clear();
  if (in_.topology_aware) config.topology.push_back({"rack", kRackLabel});
  // The tenants' decayed usage as this replay measures it (there are no Tenant objects to read it from).
  if (tenants_planned()) {
    config.tenants = tenants_;
    config.usage_mean_life_hours = tenancy::mean_life_hours(in_.usage_half_life);
  }
  return config;
}

void Simulator::replan() {
  if (policy_ == PolicyKind::Naive) {
    // Strictly in arrival order: the head starts when its gang fits, nothing overtakes it.
    for (auto& j : jobs_)
      if (j.state == State::Pending && j.needs_estimate) estimate_naive(j);
    for (;;) {
      const auto& r = take_inputs();
      std::vector<size_t> which;
      const SimJob* head = nullptr;
      for (size_t i = 0; i < r.tasks.size(); ++i) {
        const SimJob& j = *by_key_.at(r.tasks[i]->key);
        if (j.state == State::Running) which.push_back(i);
        if (j.state == State::Pending && (!head || j.trace.submit < head->trace.submit ||
                                          (j.trace.submit == head->trace.submit && &j < head))) {
          head = &j;
        }
      }
      if (!head) return;
      for (size_t i = 0; i < r.tasks.size(); ++i)
        if (by_key_.at(r.tasks[i]->key) == head) which.push_back(i);
      if (!plan_and_apply(r, which, config_for(r))) return;
    }
  }
  const auto& r = take_inputs();
  std::vector<size_t> which(r.tasks.size());
  for (size_t i = 0; i < which.size(); ++i) which[i] = i;
  if (!which.empty()) plan_and_apply(r, which, config_for(r));
}

bool Simulator::plan_and_apply(const inputs::PlanInputs::Round& r, const std::vector<size_t>& which, const planner::Config& config) {
  std::vector<const planner::Task*> tasks;
  std::vector<SimJob*> jobs;
  for (size_t i : which) {
    tasks.push_back(r.tasks[i]);
    jobs.push_back(by_key_.at(r.tasks[i]->key));
  }
  ++plan_calls_;
  return apply(planner::plan(r.nodes, r.held, tasks, r.now, config), jobs, tasks, config);
}

// Carries out decisions; true if some waiting job started.
bool Simulator::apply(const std::vector<planner::Decision>& decisions, const std::vector<SimJob*>& jobs,
                      const std::vector<const planner::Task*>& inputs, const planner::Config& config) {
  bool admitted = false;
  // What the plan takes away goes first (a time-sliced GPU's replicas are handed out one by one):
  // stopped jobs, and the old placements of those resized or moved, which start again below.
  std::vector<size_t> restarted;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    SimJob& j = *jobs[i];
    if (j.needs_estimate) estimate(j, *inputs[i], d, config);
    switch (d.action) {
      case planner::Action::Grow:
      case planner::Action::Shrink:
      case planner::Action::Move:
        if (j.state != State::Running || same_placement(j.workers, d.placement)) break;
        // A new world size or new nodes: checkpoint, stop, start again from the checkpoint.
        if (debugged(j))
          std::cerr << "t=" << now_ << " " << j.trace.id << " " << planner::to_string(d.action) << " to " << d.workers << " workers: " << d.reason << "\n";
        end_segment(j);
        restarted.push_back(i);
        break;
      case planner::Action::Preempt:
        if (debugged(j)) std::cerr << "t=" << now_ << " " << j.trace.id << " preempted: " << d.reason << "\n";
        if (j.state == State::Provisioning) give_up_buying(j);  // its nodes stay bought, for others
        if (j.state != State::Running) break;
        end_segment(j);  // stopped with SIGTERM: it checkpoints in its grace period
        j.state = State::Pending;
        touch(j);
        ++j.result.preemptions;
        break;
      default:
        break;
    }
  }
  for (size_t i : restarted) {
    SimJob& j = *jobs[i];
    admit(j, decisions[i].placement);  // (it has run: a restart, now or once bought nodes are Ready)
    j.last_resize = now_;
    touch(j);
    if (j.state == State::Running) ++j.result.restarts;
  }
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    SimJob& j = *jobs[i];
    switch (d.action) {
      case planner::Action::Wait:
        if (debugged(j) && d.reason != j.last_wait_reason)
          std::cerr << "t=" << now_ << " " << j.trace.id << " waits: " << d.reason << "\n";
        j.last_wait_reason = d.reason;
        break;
      case planner::Action::Admit:
        if (j.state != State::Pending) break;
        if (debugged(j)) std::cerr << "t=" << now_ << " " << j.trace.id << " admitted on " << nodes_of(d.placement) << ": " << d.reason << "\n";
        admit(j, d.placement);
        if (j.result.claim && j.result.claim_wait < 0) {
          j.result.claim_wait = now_ - j.trace.submit;
          if (std::getenv("VALLEY_SIM_CLAIMS") && j.result.claim_wait > 120)
            std::cerr << "claim " << j.trace.id << " tenant " << j.trace.tenant << " min " << j.traits.min_workers << " prio " << j.traits.priority
                      << " waited " << j.result.claim_wait << " s; last reason: " << j.last_wait_reason << "\n";
        }
        if (j.state == State::Running) {  // (else once its bought nodes are Ready: cloud_events)
          if (j.resumed) ++j.result.restarts;
          j.resumed = true;
        }
        admitted = true;
        break;
      default:
        break;
    }
  }
  return admitted;
}

}  // namespace valley::sim::detail
