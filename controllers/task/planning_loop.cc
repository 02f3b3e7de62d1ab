#include "controllers/task/planning_loop.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "controllers/inputs/candidates.h"
#include "operator/kube/label_selector.h"
#include "controllers/task/metrics.h"
#include "operator/kube/remote_clock.h"

namespace valley::task {

namespace {
inputs::InputOptions input_options(const ControllerOptions& o) {
  inputs::InputOptions in;
  in.base = o.planner;
  in.node_not_ready_grace = o.disruption.node_not_ready_grace;
  in.unschedulable_timeout = o.unschedulable_timeout;
  in.avoid_for = o.avoid_for;
  in.usage_half_life = o.usage_half_life;
  return in;
}
}  // namespace

PlanningLoop::PlanningLoop(ClusterCache& cache, AdmissionBoard& board, Refusals& refusals, kube::EventRecorder& events,
                           const ControllerOptions& options, OnChanged on_changed)
    : cache_(cache),
      board_(board),
      refusals_(refusals),
      events_(events),
      options_(options),
      on_changed_(std::move(on_changed)),
      inputs_(input_options(options)) {}

void PlanningLoop::replan() {
  {
    std::lock_guard lock(mu_);
    dirty_ = true;
  }
  cv_.notify_one();
}

void PlanningLoop::run(const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_start{};
  Clock::duration last_plan{};
  while (!stop.load()) {
    {
      std::unique_lock lock(mu_);
      // Also every couple of seconds without changes: time alone matters (aging, resize intervals,
      // unschedulable timeouts).
      cv_.wait_for(lock, std::chrono::seconds(2), [this, &stop] { return dirty_ || stop.load(); });
      dirty_ = false;
    }
    // A burst of changes (a gang of pods appearing) settles into one plan; under a long burst plans
    // start at most every plan_interval and take at most a tenth of the time.
    const auto earliest = std::max(Clock::now() + std::chrono::milliseconds(50),
                                   last_start + std::max<Clock::duration>(options_.plan_interval, 10 * last_plan));
    std::this_thread::sleep_until(earliest);
    try {
      last_start = Clock::now();
      plan_once();
      last_plan = Clock::now() - last_start;
      controller_metrics().plan_seconds.observe({}, std::chrono::duration<double>(last_plan).count());
    } catch (const std::exception& e) {
      spdlog::error("planner: {}", e.what());
    }
  }
}

inputs::ClusterFacts PlanningLoop::facts() {
  inputs::ClusterFacts f;
  f.gpu_fault = [this](const planner::Node& n) { return cache_.gpu_fault_of(n); };
  f.namespace_going = [this](const std::string& ns) { return cache_.namespace_going(ns); };
  f.creation_refused = [this](const inputs::TaskEntry& entry) {
    auto refusal = refusals_.of(entry.key, *entry.object, [this](const std::string& ns) { return cache_.namespace_labels(ns); });
    return refusal && refusal->blocking;
  };
  // Read without a lock: this thread is the only one that writes the board.
  f.published = [this](const std::string& key) -> const std::vector<render::WorkerPlacement>* {
    const auto& published = board_.published();
    auto it = published.find(key);
    return it == published.end() || !it->second.admitted ? nullptr : &it->second.placement;
  };
  // The API server's policy (deploy/policies) refuses this up front where installed; without it,
  // the user learns here why the task ranks lower than it asked.
  f.priority_capped = [this](const inputs::TaskEntry& entry, int asked, int planned, const std::string& tenant) {
    events_.record(*entry.object, "Warning", "PriorityCapped", "Plan",
                   "spec.priority " + std::to_string(asked) + " is above tenant " + tenant + "'s maxPriority; planned at " +
                       std::to_string(planned));
  };
  f.avoided = [this] { replan(); };
  return f;
}

void PlanningLoop::publish(const inputs::PlanInputs::Round& r, const std::vector<planner::Decision>& decisions) {
  const std::map<std::string, lifecycle::Admission>& published = board_.published();
  auto rate_of = [this](const std::string& node) { return inputs_.rate_of(node); };
  // What changed is published; a placed task whose decision, entry and nodes are as in the last
  // plan keeps its admission as it is (its estimate basis starts when it was placed, not at every
  // plan), so a plan of a thousand running tasks rebuilds none of them.
  std::vector<std::pair<const std::string*, lifecycle::Admission>> updates;
  std::vector<std::string> changed;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    const planner::Task& task = *r.tasks[i];
    inputs::PlanInputs::TaskState& ts = *r.planned[i];
    auto old = published.find(d.key);
    bool same = old != published.end() && old->second.admitted == (d.workers > 0) && old->second.workers == d.workers &&
                old->second.reason == d.reason && old->second.queue_position == d.queue_position &&
                old->second.expected_start == d.expected_start && old->second.placement.size() == d.placement.size() &&
                old->second.launcher_on_spot == d.launcher_on_spot;
    bool same_nodes = old != published.end() && old->second.placement.size() == d.placement.size();
    for (size_t k = 0; k < d.placement.size() && same_nodes; ++k) same_nodes = old->second.placement[k].node == d.placement[k].node;
    same = same && same_nodes;
    // A move holds until the placement changes: the plan after it keeps the task where it moves.
    const bool moving = d.action == planner::Action::Move || (same_nodes && old->second.moving);
    if (same && old->second.admitted && !ts.fresh && !r.rates_changed && ts.published_priority == task.priority) continue;
    ts.published_priority = task.priority;  // (the estimate's size follows it)
    lifecycle::Admission a;
    a.admitted = d.workers > 0;
    a.workers = d.workers;
    a.reason = d.reason;
    a.queue_position = d.queue_position;
    a.moving = moving;
    a.expected_start = d.expected_start;
    a.cheap_until = task.cheap_until;
    a.priority = task.priority;
    a.launcher_on_spot = d.launcher_on_spot;
    if (r.pricing) {
      const api::TaskSpec& spec = *ts.entry->parsed->spec;
      a.estimate_basis = cost::estimate_basis(spec, task, d, r.config, rate_of, inputs_.rates_for(spec.vendors),
                                              r.now);
    }
    for (const auto& w : d.placement) {
      const cost::NodeRate* rate = inputs_.rate_of(w.node);
      a.placement.push_back({inputs_.vendor_of(w.node), w.gpu_resource, static_cast<int>(w.count), w.node, "",
                             rate ? cost::price_class_of(*rate) : api::PriceClass{}});
    }
    if (!same) changed.push_back(d.key);
    updates.emplace_back(&d.key, std::move(a));
    ts.overlay_stale = true;  // laid over its input anew at the next plan
  }
  board_.publish(updates, [this](const std::string& key) { return inputs_.planned_in_last_round(key); });
  for (const auto& key : changed) on_changed_(key);
}

void PlanningLoop::count_pool_use(const std::vector<const planner::Node*>& existing) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = last_pool_count_ ? std::chrono::duration<double>(now - *last_pool_count_).count() : 0;
  last_pool_count_ = now;
  auto& m = controller_metrics();
  const auto use = inputs::pool_use(existing);
  for (const auto& pool : counted_pools_)
    if (!use.count(pool)) {
      m.pool_nodes.set({pool, "bought"}, 0);
      m.pool_nodes.set({pool, "idle"}, 0);
    }
  counted_pools_.clear();
  for (const auto& [pool, u] : use) {
    counted_pools_.insert(pool);
    m.pool_nodes.set({pool, "bought"}, u.nodes);
    m.pool_nodes.set({pool, "idle"}, u.idle);
    if (seconds <= 0) continue;
    m.pool_node_seconds.inc({pool, "bought"}, u.nodes * seconds);
    m.pool_node_seconds.inc({pool, "idle"}, u.idle * seconds);
    m.pool_gpu_seconds.inc({pool, "bought"}, static_cast<double>(u.gpus) * seconds);
    m.pool_gpu_seconds.inc({pool, "sold"}, static_cast<double>(u.gpus_held) * seconds);
  }
}

void PlanningLoop::add_provisionable(planner::SnapshotView& view) {
  if (options_.instance_types.types.empty()) return;
  std::vector<const planner::Node*> existing;
  for (const auto& n : view.nodes) existing.push_back(n.get());
  const auto& taken = provisionable_.take(cache_.node_pool_list(), options_.instance_types, existing, cache_.node_facts(), options_.provisioning);
  for (const auto& [pool, why] : taken.unusable)
    if (auto [it, fresh] = unusable_pools_.try_emplace(pool, why); fresh || it->second != why) {
      it->second = why;
      spdlog::info("provisioning: Valley buys nothing from NodePool {}: {}", pool, why);
    }
  std::erase_if(unusable_pools_, [&](const auto& kv) { return !taken.unusable.count(kv.first); });
  inputs_.set_pool_budgets(taken.budgets);
  count_pool_use(existing);
  // Only what the operator plans on (--node-selector), as for nodes that are up.
  inputs::offer(view, taken, [this](const auto& labels) { return kube::selects_labels(options_.node_requirements, labels); });
}

void PlanningLoop::plan_once() {
  // The cluster as the informers last showed it, kept up to date event by event (ClusterSnapshot).
  planner::SnapshotView view = cache_.snapshot_view();
  add_provisionable(view);
  const auto& r = inputs_.take(view, cache_.policy(), cache_.tenancy(), kube::cluster_clock().now(), facts());
  auto decisions = planner::plan(r.nodes, r.held, r.tasks, r.now, r.config);
  if (options_.verify_plan_inputs) verify_plan_inputs(r, view, decisions);
  publish(r, decisions);
}

}  // namespace valley::task
