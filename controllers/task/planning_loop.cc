#include "controllers/task/planning_loop.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <thread>
#include <tuple>

#include "controllers/cost/candidates.h"
#include "controllers/cost/planner_config.h"
#include "controllers/inputs/task_inputs.h"
#include "controllers/task/metrics.h"
#include "operator/kube/json_fields.h"

namespace valley::task {

PlanningLoop::PlanningLoop(ClusterCache& cache, AdmissionBoard& board, Refusals& refusals, kube::EventRecorder& events,
                           const ControllerOptions& options, OnChanged on_changed)
    : cache_(cache), board_(board), refusals_(refusals), events_(events), options_(options), on_changed_(std::move(on_changed)) {}

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

void PlanningLoop::make_plan_task(PlanTask& pt, const std::shared_ptr<const planner::SnapshotView::TaskEntry>& entry,
                                  const std::shared_ptr<const cost::Policy>& pricing) const {
  const nlohmann::json& obj = *entry->object;
  const api::TaskSpec& spec = *entry->parsed->spec;
  const nlohmann::json& status = kube::object_at(obj, "status");
  pt.entry = entry;
  pt.pricing = pricing;
  // Going away (deletionTimestamp), ended, suspended, over its budget or idle: holds nothing.
  pt.holds = !(kube::object_at(obj, "metadata").contains("deletionTimestamp") || lifecycle::finished(kube::string_at(status, "phase")) ||
               spec.run_policy.suspend || lifecycle::over_budget(spec, status) || lifecycle::idle_suspended(spec, status));
  pt.epoch = std::to_string(status.value("epoch", 0));
  pt.task = *entry->task;
  inputs::status_inputs(pt.task, spec, status, pricing.get());
  pt.overlay_stale = true;
}

void overlay_admission(planner::Task& t, const planner::Task& observed, const std::map<std::string, lifecycle::Admission>& published) {
  t.admitted = observed.admitted;
  t.workers = observed.workers;
  if (auto it = published.find(t.key); it != published.end() && it->second.admitted) {
    t.admitted = true;
    std::vector<planner::Task::Worker> placed;
    for (const auto& w : it->second.placement) placed.push_back({w.node, w.gpu_resource, w.gpu_count});
    t.workers = planner::planned_workers(placed, t.workers);
  }
}

void PlanningLoop::take_nodes(const planner::SnapshotView& view, Round& r) {
  r.nodes.reserve(view.nodes.size());
  // The view's nodes come by name, as plan_nodes_ keeps them: walked side by side.
  auto next = plan_nodes_.begin();
  for (const auto& source : view.nodes) {
    const std::string fault = cache_.gpu_fault_of(*source);
    while (next != plan_nodes_.end() && next->first < source->name) ++next;
    const bool added = next == plan_nodes_.end() || next->first != source->name;
    if (added) next = plan_nodes_.emplace_hint(next, source->name, PlanNode{});
    auto it = next++;
    PlanNode& pn = it->second;
    if (added || pn.source != source || pn.pricing != r.pricing || pn.fault != fault) {
      pn.source = source;
      pn.pricing = r.pricing;
      pn.fault = fault;
      pn.node = ClusterCache::with_gpu_fault(*source, fault);
      cost::NodeRate rate;
      if (r.pricing && !pn.node.vendor.empty()) rate = cost::price_node(*r.pricing, pn.node);
      // A node's price changed, or one came: the rates waiting tasks' estimates look at, and the
      // estimates of placed tasks, are made anew.
      if (added || !(rate == pn.rate)) r.rates_changed = true;
      pn.rate = std::move(rate);
    }
    pn.seen = r.number;
    r.nodes.push_back(&pn.node);
  }
  if (plan_nodes_.size() != r.nodes.size()) {
    const uint64_t round = r.number;
    std::erase_if(plan_nodes_, [round](const auto& entry) { return entry.second.seen != round; });
    r.rates_changed = true;
  }
}

void PlanningLoop::lay_tenancy(planner::Task& t, const planner::SnapshotView::TaskEntry& entry, const Round& r) {
  const api::TaskSpec& spec = *entry.parsed->spec;
  t.tenant = entry.task->tenant;
  t.priority = entry.task->priority;
  auto owner = r.tenancy.ownership.owner.find(spec.ns);
  if (owner == r.tenancy.ownership.owner.end()) return;
  t.tenant = owner->second;
  auto spec_of = r.tenant_spec.find(t.tenant);
  const api::TenantSpec* tenant = spec_of == r.tenant_spec.end() ? nullptr : spec_of->second;
  bool capped = false;
  t.priority = tenancy::effective_priority(spec.priority_set ? std::optional<int>(spec.priority) : std::nullopt, tenant, &capped);
  // Once per generation: the API server's policy (deploy/policies) refuses this up front where
  // installed; without it, the user learns here why the task ranks lower than it asked.
  const nlohmann::json& obj = *entry.object;
  if (capped &&
      priority_capped_.insert(obj["metadata"].value("uid", "") + "@" + std::to_string(obj["metadata"].value("generation", int64_t{0}))).second)
    events_.record(obj, "Warning", "PriorityCapped", "Plan",
                   "spec.priority " + std::to_string(spec.priority) + " is above tenant " + t.tenant + "'s maxPriority; planned at " +
                       std::to_string(t.priority));
}

void PlanningLoop::lay_avoided(planner::Task& t, const planner::SnapshotView::TaskEntry& entry, kube::SystemTime now) {
  for (const auto& waiting : entry.waiting) {
    // Pinned, unbound and refused by kube-scheduler for longer than the timeout.
    const auto& since = waiting.refused_since;
    auto& avoid = avoid_[t.key];
    if (since && now - *since >= options_.unschedulable_timeout && !avoid.count(waiting.node)) {
      avoid[waiting.node] = now + options_.avoid_for;
      spdlog::info("{}: node {} did not take its worker for {}s ({}); planning around it", t.key, waiting.node,
                   options_.unschedulable_timeout.count(), waiting.refusal);
      replan();
    }
  }
  t.avoid_nodes = entry.task->avoid_nodes;
  if (auto avoiding = avoid_.find(t.key); avoiding != avoid_.end()) {
    auto& avoid = avoiding->second;
    for (auto it = avoid.begin(); it != avoid.end();) it = it->second <= now ? avoid.erase(it) : std::next(it);
    for (const auto& [node, until] : avoid) t.avoid_nodes.push_back(node);
    if (avoid.empty()) avoid_.erase(avoiding);
  }
}

void PlanningLoop::take_tasks(const planner::SnapshotView& view, Round& r) {
  const std::map<std::string, lifecycle::Admission>& published = board_.published();
  std::map<std::string, bool> namespace_going;
  for (const auto& shared_entry : view.tasks) {
    const auto& entry = *shared_entry;
    const api::ParsedTask& parsed = *entry.parsed;
    if (!parsed.spec || !entry.task) continue;
    // Its namespace is being deleted: the task goes with it, and its pods hold their GPUs until
    // they are gone (the nodes' free capacity shows them).
    auto going = namespace_going.try_emplace(parsed.spec->ns, false);
    if (going.second) going.first->second = cache_.namespace_going(parsed.spec->ns);
    if (going.first->second) continue;
    auto [cached, added] = plan_tasks_.try_emplace(entry.key);
    PlanTask& pt = cached->second;
    pt.fresh = added || pt.entry != shared_entry || pt.pricing != r.pricing;
    if (pt.fresh) make_plan_task(pt, shared_entry, r.pricing);
    // Not in the last plan: what was published for it then may be gone.
    if (pt.planned + 1 != r.number) pt.overlay_stale = true;
    pt.seen = r.number;
    if (!pt.holds) continue;
    // Its pods are refused until it or its namespace changes: it holds no capacity meanwhile.
    auto labels = [this](const std::string& ns) { return cache_.namespace_labels(ns); };
    if (auto refusal = refusals_.of(entry.key, *entry.object, labels); refusal && refusal->blocking) continue;
    planner::Task& t = pt.task;
    lay_tenancy(t, entry, r);
    lay_avoided(t, entry, r.now);
    // What we published counts as taken until the pods show it (bound ones show where they are).
    if (pt.overlay_stale) {
      overlay_admission(t, *entry.task, published);
      pt.overlay_stale = false;
    }
    pt.planned = r.number;
    r.tasks.push_back(&t);
    r.planned.push_back(&pt);
  }
  const uint64_t round = r.number;
  std::erase_if(plan_tasks_, [round](const auto& kv) { return kv.second.seen != round; });
}

planner::Config PlanningLoop::config_for(const Round& r) const {
  planner::Config config = options_.planner;
  config.node_not_ready_grace = options_.disruption.node_not_ready_grace;
  if (r.pricing) config = cost::planner_config(*r.pricing, r.nodes, r.now, config);
  for (const auto& t : r.tenancy.tenants)
    config.tenants[t.spec.name] = tenancy::planner_tenant(t, r.pricing.get(), r.now, options_.usage_half_life);
  config.usage_mean_life_hours = static_cast<double>(options_.usage_half_life.count()) / 3600.0 / std::log(2.0);
  return config;
}

void PlanningLoop::refresh_rates(const Round& r) {
  // Where a task may run, for its estimate: NVIDIA nodes, and AMD ones too when it allows them.
  // Two lists for every task rather than one per task, each rate once (in the order of the first
  // node that has it: the estimate takes the first of equally cheap ones), so a thousand waiting
  // tasks look at the cluster's few pools rather than at a thousand nodes each.
  if (!r.rates_changed) return;
  nvidia_rates_.clear();
  any_rates_.clear();
  std::set<std::tuple<std::string, std::string, std::string, decltype(cost::NodeRate::gpu_per_hour), int>> seen_rates;
  for (const planner::Node* n : r.nodes) {
    if (!r.pricing || n->vendor.empty()) continue;
    const cost::NodeRate& rate = plan_nodes_.at(n->name).rate;
    if (!seen_rates.emplace(rate.vendor, rate.product, rate.capacity_class, rate.gpu_per_hour, rate.watts).second) continue;
    if (rate.vendor == "nvidia") nvidia_rates_.push_back(rate);
    if (rate.vendor == "nvidia" || rate.vendor == "amd") any_rates_.push_back(rate);
  }
}

void PlanningLoop::publish(const Round& r, const std::vector<planner::Decision>& decisions, const planner::Config& config) {
  const std::map<std::string, lifecycle::Admission>& published = board_.published();
  auto rate_of = [this](const std::string& node) -> const cost::NodeRate* {
    auto it = plan_nodes_.find(node);
    return it == plan_nodes_.end() || it->second.node.vendor.empty() ? nullptr : &it->second.rate;
  };
  auto vendor_of = [this](const std::string& node) {
    auto it = plan_nodes_.find(node);
    return it == plan_nodes_.end() ? std::string() : it->second.node.vendor;
  };
  // What changed is published; a placed task whose decision, entry and nodes are as in the last
  // plan keeps its admission as it is (its estimate basis starts when it was placed, not at every
  // plan), so a plan of a thousand running tasks rebuilds none of them.
  std::vector<std::pair<const std::string*, lifecycle::Admission>> updates;
  std::vector<std::string> changed;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    const planner::Task& task = *r.tasks[i];
    PlanTask& pt = *r.planned[i];
    auto old = published.find(d.key);
    bool same = old != published.end() && old->second.admitted == (d.workers > 0) && old->second.workers == d.workers &&
                old->second.reason == d.reason && old->second.queue_position == d.queue_position &&
                old->second.expected_start == d.expected_start && old->second.placement.size() == d.placement.size();
    for (size_t k = 0; k < d.placement.size() && same; ++k) same = old->second.placement[k].node == d.placement[k].node;
    if (same && old->second.admitted && !pt.fresh && !r.rates_changed && pt.published_priority == task.priority) continue;
    pt.published_priority = task.priority;  // (the estimate's size follows it)
    lifecycle::Admission a;
    a.admitted = d.workers > 0;
    a.workers = d.workers;
    a.reason = d.reason;
    a.queue_position = d.queue_position;
    a.expected_start = d.expected_start;
    a.cheap_until = task.cheap_until;
    if (r.pricing) {
      const api::TaskSpec& spec = *pt.entry->parsed->spec;
      a.estimate_basis = cost::estimate_basis(spec, task, d, config, rate_of, spec.amd_support ? any_rates_ : nvidia_rates_, r.now);
    }
    for (const auto& w : d.placement) a.placement.push_back({vendor_of(w.node), w.gpu_resource, static_cast<int>(w.count), w.node});
    if (!same) changed.push_back(d.key);
    updates.emplace_back(&d.key, std::move(a));
    pt.overlay_stale = true;  // laid over its input anew at the next plan
  }
  const uint64_t round = r.number;
  board_.publish(updates, [&](const std::string& key) {
    auto pt = plan_tasks_.find(key);
    return pt != plan_tasks_.end() && pt->second.planned == round;
  });
  for (const auto& key : changed) on_changed_(key);
}

void PlanningLoop::plan_once() {
  // The cluster as the informers last showed it, kept up to date event by event (ClusterSnapshot).
  const planner::SnapshotView view = cache_.snapshot_view();
  Round r;
  r.pricing = cache_.policy();
  r.number = ++plans_;
  r.now = std::chrono::system_clock::now();
  take_nodes(view, r);
  r.tenancy = cache_.tenancy();
  for (const auto& t : r.tenancy.tenants) r.tenant_spec[t.spec.name] = &t.spec;
  take_tasks(view, r);
  // The current workers of the tasks planned here hold nothing for the plan: it places them itself.
  const uint64_t round = r.number;
  const planner::HeldByPlanned held = planner::held_by_planned(
      view,
      [&](const std::string& key) -> std::optional<planner::PlannedTask> {
        auto pt = plan_tasks_.find(key);
        if (pt == plan_tasks_.end() || pt->second.planned != round) return std::nullopt;
        return planner::PlannedTask{&pt->second.epoch, &pt->second.task.workers};
      },
      [&](const std::string& node) { return plan_nodes_.count(node) > 0; });
  const planner::Config config = config_for(r);
  auto decisions = planner::plan(r.nodes, held, r.tasks, r.now, config);
  if (options_.verify_plan_inputs) verify_plan_inputs(r, view, config, decisions);
  refresh_rates(r);
  publish(r, decisions, config);
}

}  // namespace valley::task
