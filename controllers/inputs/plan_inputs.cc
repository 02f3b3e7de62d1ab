#include "controllers/inputs/plan_inputs.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <tuple>

#include "controllers/inputs/planner_config.h"
#include "controllers/inputs/task_inputs.h"
#include "controllers/lifecycle/lifecycle.h"
#include "controllers/lifecycle/start_failure.h"
#include "controllers/render/render.h"
#include "controllers/tenancy/usage.h"
#include "operator/kube/json_fields.h"

namespace valley::inputs {

namespace {

// Going away (deletionTimestamp), ended, suspended, over its budget or idle: holds nothing, and
// its pods are on their way out.
bool holds_capacity(const nlohmann::json& task, const api::TaskSpec& spec) {
  const nlohmann::json& status = kube::object_at(task, "status");
  return !(kube::object_at(task, "metadata").contains("deletionTimestamp") || lifecycle::finished(kube::string_at(status, "phase")) ||
           spec.run_policy.suspend || lifecycle::over_budget(spec, status) || lifecycle::idle_suspended(spec, status));
}

// status.epoch as its pods' epoch label says it.
std::string pods_epoch(const nlohmann::json& status) { return std::to_string(status.value("epoch", 0)); }

}  // namespace

void overlay_admission(planner::Task& t, const planner::Task& observed, const std::vector<render::WorkerPlacement>* published) {
  t.admitted = observed.admitted;
  t.workers = observed.workers;
  if (!published) return;
  t.admitted = true;
  std::vector<planner::Task::Worker> placed;
  for (const auto& w : *published) placed.push_back({w.node, w.gpu_resource, w.gpu_count});
  t.workers = planner::planned_workers(placed, t.workers);
}

void lay_shared_devices(planner::Task& t, const planner::SnapshotView& view) {
  if (auto held = view.shared_devices.find(t.key); held != view.shared_devices.end())
    t.shared_devices = held->second;
  else
    t.shared_devices.clear();
}

PlanInputs::TaskState PlanInputs::task_state(const std::shared_ptr<const TaskEntry>& entry, const std::shared_ptr<const api::Policy>& pricing) {
  TaskState s;
  const nlohmann::json& obj = *entry->object;
  const api::TaskSpec& spec = *entry->parsed->spec;
  const nlohmann::json& status = kube::object_at(obj, "status");
  s.entry = entry;
  s.pricing = pricing;
  s.holds = holds_capacity(obj, spec);
  s.start_backoff_until = lifecycle::start_backoff_until(spec, status);
  s.waits_for_data = lifecycle::waits_for_data(spec, status);
  s.epoch = pods_epoch(status);
  s.kind = spec.worker.image;
  s.task = *entry->task;
  status_inputs(s.task, spec, status, pricing.get());
  s.overlay_stale = true;
  return s;
}

const PlanInputs::Round& PlanInputs::take(const planner::SnapshotView& view, std::shared_ptr<const api::Policy> pricing, const Tenancy& tenancy,
                                          kube::SystemTime now, const ClusterFacts& facts) {
  round_.number += 1;
  round_.now = now;
  round_.pricing = std::move(pricing);
  round_.nodes.clear();
  round_.tasks.clear();
  round_.planned.clear();
  round_.rates_changed = false;
  round_.vacated.reset();
  take_nodes(view, facts);
  take_tasks(view, tenancy, facts);
  take_held(view);
  take_config(tenancy);
  refresh_rates();
  return round_;
}

void PlanInputs::take_nodes(const planner::SnapshotView& view, const ClusterFacts& facts) {
  Round& r = round_;
  r.nodes.reserve(view.nodes.size());
  // The view's nodes come by name, as nodes_ keeps them: walked side by side.
  auto next = nodes_.begin();
  for (const auto& source : view.nodes) {
    const std::string fault = source->fault.empty() && facts.gpu_fault ? facts.gpu_fault(*source) : std::string();
    while (next != nodes_.end() && next->first < source->name) ++next;
    const bool added = next == nodes_.end() || next->first != source->name;
    if (added) next = nodes_.emplace_hint(next, source->name, NodeState{});
    NodeState& ns = (next++)->second;
    if (added || ns.source != source || ns.pricing != r.pricing || ns.fault != fault) {
      ns.source = source;
      ns.pricing = r.pricing;
      ns.fault = fault;
      ns.node = planner::with_gpu_fault(*source, fault);
      cost::NodeRate rate;
      if (r.pricing && !ns.node.vendor.empty()) rate = cost::price_node(*r.pricing, ns.node);
      if (added || !(rate == ns.rate)) r.rates_changed = true;
      ns.rate = std::move(rate);
    }
    ns.seen = r.number;
    r.nodes.push_back(&ns.node);
  }
  if (nodes_.size() != r.nodes.size()) {
    const uint64_t round = r.number;
    std::erase_if(nodes_, [round](const auto& entry) { return entry.second.seen != round; });
    r.rates_changed = true;
  }
}

void PlanInputs::lay_tenancy(planner::Task& t, const TaskEntry& entry, const Tenancy& tenancy, const TenantSpecs& specs,
                             const ClusterFacts& facts) {
  const api::TaskSpec& spec = *entry.parsed->spec;
  t.tenant = entry.task->tenant;
  t.priority = entry.task->priority;
  auto owner = tenancy.ownership.owner.find(spec.ns);
  if (owner == tenancy.ownership.owner.end()) return;
  t.tenant = owner->second;
  auto found = specs.find(t.tenant);
  const api::TenantSpec* tenant = found == specs.end() ? nullptr : found->second;
  bool capped = false;
  t.priority = tenancy::effective_priority(spec.priority_set ? std::optional<int>(spec.priority) : std::nullopt, tenant, &capped);
  // Once per generation: the user learns why the task ranks lower than it asked.
  const nlohmann::json& meta = kube::object_at(*entry.object, "metadata");
  if (capped && facts.priority_capped &&
      priority_capped_.insert(kube::string_at(meta, "uid") + "@" + std::to_string(kube::int_at(meta, "generation").value_or(0))).second)
    facts.priority_capped(entry, spec.priority, t.priority, t.tenant);
}

// Pods being deleted count until their grace is over by `patience` (one stuck there explains
// nothing); pods of an epoch their task has left and of a task that holds nothing (holds_capacity)
// count until they are gone, as Valley planned.
std::set<std::string> nodes_being_vacated(const planner::SnapshotView& view, kube::SystemTime now, std::chrono::seconds patience) {
  std::set<std::string> out;
  for (const auto& entry : view.tasks) {
    const nlohmann::json& obj = *entry->object;
    const bool task_going = entry->parsed->spec && !holds_capacity(obj, *entry->parsed->spec);
    const std::string epoch = pods_epoch(kube::object_at(obj, "status"));
    for (const auto& p : entry->owned) {
      if (p->node_name.empty() || p->phase == "Succeeded" || p->phase == "Failed") continue;
      const bool leaving = p->deleting ? !p->deletion_timestamp || now < *p->deletion_timestamp + patience
                                       : task_going || p->label(render::label::kEpoch) != epoch;
      if (leaving) out.insert(p->node_name);
    }
  }
  return out;
}

void PlanInputs::lay_avoided(planner::Task& t, const TaskEntry& entry, const planner::SnapshotView& view, const ClusterFacts& facts) {
  const kube::SystemTime now = round_.now;
  const auto timeout = options_.unschedulable_timeout;
  for (const auto& waiting : entry.waiting) {
    // Pinned, unbound and refused by kube-scheduler for longer than the timeout...
    const auto& since = waiting.refused_since;
    auto& avoid = avoid_[t.key];
    if (!since || now - *since < timeout || avoid.count(waiting.node)) continue;
    // ... counted from when no pod on its way out held the node any more: those explain the refusal.
    if (!round_.vacated) round_.vacated = nodes_being_vacated(view, now, timeout);
    auto& explained = explained_[waiting.pod->uid];
    explained.seen = round_.number;
    if (round_.vacated->count(waiting.node)) explained.last = now;
    if (explained.last && now - *explained.last < timeout) continue;
    avoid[waiting.node] = now + options_.avoid_for;
    spdlog::info("{}: node {} did not take its worker for {}s ({}); planning around it", t.key, waiting.node, timeout.count(),
                 waiting.refusal);
    if (facts.avoided) facts.avoided();
  }
  t.avoid_nodes = entry.task->avoid_nodes;
  if (auto avoiding = avoid_.find(t.key); avoiding != avoid_.end()) {
    auto& avoid = avoiding->second;
    for (auto it = avoid.begin(); it != avoid.end();) it = it->second <= now ? avoid.erase(it) : std::next(it);
    for (const auto& [node, until] : avoid) t.avoid_nodes.push_back(node);
    if (avoid.empty()) avoid_.erase(avoiding);
  }
}

void PlanInputs::take_tasks(const planner::SnapshotView& view, const Tenancy& tenancy, const ClusterFacts& facts) {
  Round& r = round_;
  TenantSpecs specs;
  for (const auto& t : tenancy.tenants) specs[t.spec.name] = &t.spec;
  std::map<std::string, bool> namespace_going;
  for (const auto& shared_entry : view.tasks) {
    const auto& entry = *shared_entry;
    const api::ParsedTask& parsed = *entry.parsed;
    if (!parsed.spec || !entry.task) continue;
    // Its namespace is being deleted: the task goes with it, and its pods hold their GPUs until
    // they are gone (the nodes' free capacity shows them).
    auto going = namespace_going.try_emplace(parsed.spec->ns, false);
    if (going.second) going.first->second = facts.namespace_going && facts.namespace_going(parsed.spec->ns);
    if (going.first->second) continue;
    auto [cached, added] = tasks_.try_emplace(entry.key);
    TaskState& ts = cached->second;
    const bool fresh = added || ts.entry != shared_entry || ts.pricing != r.pricing;
    if (fresh) {
      const uint64_t planned = ts.planned;
      const int published_priority = ts.published_priority;
      ts = task_state(shared_entry, r.pricing);
      ts.planned = planned;
      ts.published_priority = published_priority;
    }
    ts.fresh = fresh;
    // What it measured teaches its kind, whether it still runs or has ended.
    if (fresh) priors_.record(ts.kind, entry.key, ts.task.scaling);
    // Not in the last round: what was published for it then may be gone.
    if (ts.planned + 1 != r.number) ts.overlay_stale = true;
    ts.seen = r.number;
    if (!ts.holds) continue;
    // Its pods could not start: it holds nothing until its backoff is over (or its spec changes).
    if (ts.start_backoff_until && r.now < *ts.start_backoff_until) continue;
    // Its data set is not known to be readable yet: it holds nothing until it is.
    if (ts.waits_for_data) continue;
    // Its pods are refused until it or its namespace changes: it holds no capacity meanwhile.
    if (facts.creation_refused && facts.creation_refused(entry)) continue;
    planner::Task& t = ts.task;
    lay_tenancy(t, entry, tenancy, specs, facts);
    lay_avoided(t, entry, view, facts);
    lay_shared_devices(t, view);
    // What was published counts as taken until the pods show it (bound ones show where they are).
    if (ts.overlay_stale) {
      overlay_admission(t, *entry.task, facts.published ? facts.published(t.key) : nullptr);
      ts.overlay_stale = false;
    }
    ts.planned = r.number;
    r.tasks.push_back(&t);
    r.planned.push_back(&ts);
  }
  const uint64_t round = r.number;
  std::erase_if(tasks_, [round](const auto& kv) { return kv.second.seen != round; });
  std::erase_if(explained_, [round](const auto& kv) { return kv.second.seen != round; });
  // Laid after every task has taught its kind this round (the planner decides when it counts).
  for (TaskState* ts : r.planned) ts->task.prior_scaling = priors_.pooled(ts->kind);
}

void PlanInputs::take_held(const planner::SnapshotView& view) {
  // The current workers of the tasks planned here hold nothing for the plan: it places them itself.
  const uint64_t round = round_.number;
  round_.held = planner::held_by_planned(
      view,
      [&](const std::string& key) -> std::optional<planner::PlannedTask> {
        auto ts = tasks_.find(key);
        if (ts == tasks_.end() || ts->second.planned != round) return std::nullopt;
        return planner::PlannedTask{&ts->second.epoch, &ts->second.task.workers};
      },
      [&](const std::string& node) { return nodes_.count(node) > 0; });
}

void PlanInputs::take_config(const Tenancy& tenancy) {
  Round& r = round_;
  planner::Config config = options_.base;
  config.node_not_ready_grace = options_.node_not_ready_grace;
  if (r.pricing) config = cost::planner_config(*r.pricing, r.nodes, r.now, config);
  for (const auto& t : tenancy.tenants)
    config.tenants[t.spec.name] = tenancy::planner_tenant(t, r.pricing.get(), r.now, options_.usage_half_life);
  config.usage_mean_life_hours = tenancy::mean_life_hours(options_.usage_half_life);
  config.pool_budgets = pool_budgets_;
  r.config = std::move(config);
}

void PlanInputs::refresh_rates() {
  // Each rate once, in the order of the first node that has it (the estimate takes the first of
  // equally cheap ones); a task's vendors filter it (rates_for, once per vendor set and round).
  if (!round_.rates_changed) return;
  all_rates_.clear();
  rates_for_.clear();
  std::set<std::tuple<std::string, std::string, std::string, decltype(cost::NodeRate::gpu_per_hour), int>> seen;
  for (const planner::Node* n : round_.nodes) {
    if (!round_.pricing || n->vendor.empty()) continue;
    const cost::NodeRate& rate = nodes_.at(n->name).rate;
    if (!seen.emplace(rate.vendor, rate.product, rate.capacity_class, rate.gpu_per_hour, rate.watts).second) continue;
    all_rates_.push_back(rate);
  }
}

const std::vector<cost::NodeRate>& PlanInputs::rates_for(const std::vector<std::string>& vendors) {
  std::string key;
  for (const auto& v : vendors) key += v + "/";
  auto [it, fresh] = rates_for_.try_emplace(key);
  if (fresh)
    for (const auto& rate : all_rates_)
      if (std::find(vendors.begin(), vendors.end(), rate.vendor) != vendors.end()) it->second.push_back(rate);
  return it->second;
}

const cost::NodeRate* PlanInputs::rate_of(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() || it->second.node.vendor.empty() ? nullptr : &it->second.rate;
}

std::string PlanInputs::vendor_of(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? std::string() : it->second.node.vendor;
}

bool PlanInputs::planned_in_last_round(const std::string& key) const {
  auto it = tasks_.find(key);
  return it != tasks_.end() && it->second.planned == round_.number;
}

}  // namespace valley::inputs
