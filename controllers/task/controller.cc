#include "controllers/task/controller.h"

#include "controllers/api/task_status.h"
#include "operator/kube/json_fields.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <thread>
#include <tuple>

#include "controllers/cost/candidates.h"
#include "controllers/cost/planner_config.h"
#include "controllers/planner/scaling.h"
#include "controllers/gpu/resources.h"
#include "controllers/planner/snapshot.h"
#include "controllers/task/cache_fields.h"
#include "controllers/task/checkpoint_watcher.h"
#include "controllers/render/render.h"
#include "controllers/render/ssh_keys.h"
#include "controllers/task/lifecycle.h"
#include "operator/kube/error.h"
#include "operator/kube/this_thread.h"
#include "operator/logging.h"
#include "operator/metrics/registry.h"

namespace valley::task {

namespace res = kube::resources;

namespace {
// Workqueue keys of PricingPolicies; a namespace never starts with '@', so no task key collides.
constexpr const char* kPolicyKeyPrefix = "@pricingpolicy/";
constexpr const char* kTenantKeyPrefix = "@tenant/";
constexpr const char* kOwnershipKey = "@ownership";

// The controller's metric families (registered once, process-wide).
struct Metrics {
  metrics::Family& reconciles = metrics::registry().counter("valley_reconcile_total", "Reconciles by controller and result (success, error).",
                                                          {"controller", "result"});
  metrics::Family& reconcile_seconds = metrics::registry().histogram("valley_reconcile_duration_seconds",
                                                                    "Time one reconcile takes.", {"controller"});
  // Against reconcile_seconds: what is left is waiting (on the API server, the create limit, locks).
  metrics::Family& reconcile_cpu_seconds = metrics::registry().histogram(
      "valley_reconcile_cpu_seconds", "CPU time one reconcile uses on its own thread.", {"controller"});
  metrics::Family& depth = metrics::registry().gauge("valley_workqueue_depth", "Keys ready to be reconciled.", {"queue"});
  metrics::Family& delayed = metrics::registry().gauge("valley_workqueue_delayed", "Keys waiting for a delay or backoff.", {"queue"});
  metrics::Family& queue_seconds = metrics::registry().histogram("valley_workqueue_queue_duration_seconds",
                                                                "Time a key waits in the queue before a worker takes it.", {"queue"});
  metrics::Family& watch_restarts = metrics::registry().counter("valley_watch_restarts_total",
                                                               "Watches restarted (after an error, a timeout or a relist) by resource.", {"resource"});
  metrics::Family& relists = metrics::registry().counter("valley_watch_relists_total", "Full relists after an expired resourceVersion.",
                                                        {"resource"});
  metrics::Family& tasks = metrics::registry().gauge("valley_tasks", "TrainingTasks by phase.", {"phase"});
  metrics::Family& workers = metrics::registry().gauge("valley_task_workers", "Running workers of each task.", {"namespace", "task"});
  metrics::Family& gpus = metrics::registry().gauge("valley_gpus_allocated", "GPUs (fractions summed) held by Valley's running pods.",
                                                   {"vendor", "capacity_class"});
  metrics::Family& restarts = metrics::registry().counter("valley_task_restarts_total",
                                                         "Epoch restarts by cause (failure, resize, preemption, disruption).", {"cause"});
  metrics::Family& disruptions = metrics::registry().counter(
      "valley_task_disruptions_total", "Tasks moved off capacity taken away from them, by cause (GpuFault, NodeNotice, NodeLost, ...).",
      {"cause"});
  metrics::Family& gpu_hours_lost = metrics::registry().counter(
      "valley_gpu_hours_lost_total", "GPU-hours of work redone after disruptions (work since the last checkpoint x GPUs), by cause.",
      {"cause"});
  metrics::Family& task_gpu_percent = metrics::registry().gauge(
      "valley_task_gpu_utilization_percent", "Mean utilization of a task's GPUs at the latest DCGM reading.", {"namespace", "task"});
  metrics::Family& task_idle_hours = metrics::registry().gauge(
      "valley_task_idle_gpu_hours", "GPU-hours a task's GPUs have spent below its idle threshold.", {"namespace", "task"});
  metrics::Family& faulty_nodes = metrics::registry().gauge(
      "valley_gpu_faulty_nodes", "Nodes whose health tooling reports a GPU fault now (Valley places nothing there), by signal.",
      {"signal"});
  metrics::Family& cost = metrics::registry().gauge("valley_cost_accrued", "Accrued cost of the tasks that exist, by namespace.",
                                                   {"namespace", "currency"});
  metrics::Family& status_conflicts = metrics::registry().counter(
      "valley_status_conflicts_total", "TrainingTask status writes the API server refused as based on an old version (409).", {});
  metrics::Family& plan_seconds = metrics::registry().histogram("valley_plan_duration_seconds", "Time one capacity plan takes.", {});
  metrics::Family& plan_input_mismatches = metrics::registry().counter(
      "valley_plan_input_mismatches_total", "--debug-verify-plan-inputs: decisions the kept plan inputs made that a rebuild did not.", {});
  // Tenants, from the status Valley keeps on each.
  metrics::Family& tenant_gpus = metrics::registry().gauge(
      "valley_tenant_gpus", "A tenant's GPUs per pool: used, nominal (guaranteed), borrowed (beyond nominal), lent (of its idle nominal).",
      {"tenant", "pool", "kind"});
  metrics::Family& tenant_share = metrics::registry().gauge("valley_tenant_fair_share",
                                                           "A tenant's decayed GPU-hours per unit of weight (lower goes first).", {"tenant"});
  metrics::Family& tenant_spend = metrics::registry().gauge("valley_tenant_spend", "What a tenant spent in its current budget period.",
                                                           {"tenant", "currency"});
  metrics::Family& tenant_budget = metrics::registry().gauge("valley_tenant_budget", "A tenant's budget per period (absent: none).",
                                                            {"tenant", "currency"});
  metrics::Family& tenant_exhausted = metrics::registry().gauge("valley_tenant_budget_exhausted",
                                                               "1 while a tenant's budget for the period is spent.", {"tenant"});
  metrics::Family& tenant_waiting = metrics::registry().gauge("valley_tenant_waiting_tasks", "A tenant's tasks not admitted.", {"tenant"});
};
Metrics& m() {
  static Metrics instance;
  return instance;
}
}  // namespace

namespace {
bool holds_accounting(const api::Pod& pod) {
  return std::find(pod.finalizers.begin(), pod.finalizers.end(), render::kAccountingFinalizer) != pod.finalizers.end();
}

// The pod cache's index of Valley's pods by the task their label names (namespace/task).
constexpr const char* kByTask = "task";

// How expectations name an object Valley creates.
std::string expectation_id(const std::string& kind, const std::string& ns, const std::string& name) { return kind + " " + ns + "/" + name; }

kube::WorkQueueOptions queue_options() {
  kube::WorkQueueOptions o;
  o.on_dequeue = [](kube::Clock::duration waited) {
    m().queue_seconds.observe({"trainingtask"}, std::chrono::duration<double>(waited).count());
  };
  return o;
}
}  // namespace

TaskController::TaskController(kube::Client& client, kube::EventRecorder& events, ControllerOptions options)
    : client_(client),
      events_(events),
      options_(std::move(options)),
      queue_(queue_options()),
      requests_(std::make_unique<kube::RequestPool>(options_.max_concurrent_creates)),
      checkpoints_(client_, options_.checkpoint_poll, [this](const std::string& key, const std::string& error) {
        {
          std::lock_guard lock(plan_mu_);
          checkpoint_errors_[key] = error;
        }
        queue_.add(key);
      }),
      gpu_(options_.prometheus_url, options_.gpu_health, options_.gpu_health_interval, [this] {
        // Faults came or went: re-plan, and every task looks at its nodes again.
        mark_dirty();
        for (const auto& t : tasks_->store().list()) queue_.add(kube::object_key(*t));
      }) {
  kube::InformerOptions task_informer;
  task_informer.event_delay = options_.task_watch_delay;
  tasks_ = std::make_unique<kube::Informer>(client_, res::kTrainingTasks, task_informer);
  kube::InformerOptions owned;
  owned.label_selector = std::string(render::label::kManagedBy) + "=valley";
  // All pods, not only Valley's: the planner must know what everything else holds on each node.
  // Pods and nodes are cached lean: only the fields Valley reads (cache_fields.h).
  kube::InformerOptions lean_pods, lean_nodes;
  lean_pods.fields = pod_fields();
  lean_pods.transform = nullptr;  // the mask drops managedFields too
  lean_nodes.fields = node_fields();
  lean_nodes.transform = nullptr;
  pods_ = std::make_unique<kube::BasicInformer<api::Pod>>(client_, res::kPods, lean_pods);
  pods_->store().add_index(kByTask, [](const api::Pod& p) {
    const std::string& task = p.label(render::label::kTask);
    return task.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.ns + "/" + task};
  });
  nodes_ = std::make_unique<kube::Informer>(client_, res::kNodes, lean_nodes);
  services_ = std::make_unique<kube::Informer>(client_, res::kServices, owned);
  // Of ConfigMaps, only the namespace ownership Valley publishes (a task has none: its launcher
  // carries its hostfile).
  kube::InformerOptions ownership = owned;
  if (!options_.ownership_name.empty()) {
    ownership.ns = options_.ownership_namespace;
    ownership.field_selector = "metadata.name=" + options_.ownership_name;
  }
  configs_ = std::make_unique<kube::Informer>(client_, res::kConfigMaps, ownership);
  pricing_ = std::make_unique<kube::Informer>(client_, res::kPricingPolicies);
  tenants_ = std::make_unique<kube::Informer>(client_, res::kTenants);
  namespaces_ = std::make_unique<kube::Informer>(client_, res::kNamespaces);
  // The planning snapshot follows the caches event by event (first, so that whatever these events
  // wake finds it up to date).
  auto snapshot_handlers = [this]<class T>(void (planner::ClusterSnapshot::*upsert)(const std::shared_ptr<const T>&),
                                           void (planner::ClusterSnapshot::*remove)(const std::string&)) {
    using Ptr = std::shared_ptr<const T>;
    auto changed = [this, upsert](const Ptr& o) {
      std::lock_guard lock(snapshot_mu_);
      (snapshot_.*upsert)(o);
    };
    return kube::BasicInformerHandlers<T>{changed, [changed](const Ptr&, const Ptr& o) { changed(o); },
                                          [this, remove](const Ptr& o) {
                                            std::lock_guard lock(snapshot_mu_);
                                            (snapshot_.*remove)(kube::ObjectTraits<T>::key(*o));
                                          }};
  };
  tasks_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_task, &planner::ClusterSnapshot::remove_task));
  pods_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_pod, &planner::ClusterSnapshot::remove_pod));
  nodes_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_node, &planner::ClusterSnapshot::remove_node));
  auto tenant_changed = [this](const kube::ObjectPtr& o) {
    queue_.add(kTenantKeyPrefix + (*o)["metadata"].value("name", ""));
    queue_.add(kOwnershipKey);
    mark_dirty();
  };
  tenants_->add_handlers({tenant_changed, [tenant_changed](const kube::ObjectPtr&, const kube::ObjectPtr& o) { tenant_changed(o); },
                          tenant_changed});
  auto namespace_changed = [this](const kube::ObjectPtr& o) {
    for (const auto& t : tenants_->store().list()) queue_.add(kTenantKeyPrefix + (*t)["metadata"].value("name", ""));
    {
      // Tasks whose pods the namespace refused: its new labels may admit them.
      const std::string prefix = (*o)["metadata"].value("name", "") + "/";
      std::lock_guard lock(plan_mu_);
      for (const auto& [key, r] : refusals_)
        if (key.rfind(prefix, 0) == 0) queue_.add(key);
    }
    queue_.add(kOwnershipKey);
    mark_dirty();
  };
  namespaces_->add_handlers({namespace_changed, [namespace_changed](const kube::ObjectPtr&, const kube::ObjectPtr& o) { namespace_changed(o); },
                             namespace_changed});
  auto policy_changed = [this](const kube::ObjectPtr& o) { queue_.add(kPolicyKeyPrefix + (*o)["metadata"].value("name", "")); };
  pricing_->add_handlers({policy_changed, [policy_changed](const kube::ObjectPtr&, const kube::ObjectPtr& o) { policy_changed(o); },
                          policy_changed});

  // An update wakes the planner only when it can change a plan (planner::replan_needed).
  auto replan_if_needed = [this](const auto& before, const auto& o) {
    if (planner::replan_needed(*before, *o)) mark_dirty();
  };
  auto enqueue_task = [this](const kube::ObjectPtr& o) {
    queue_.add(kube::object_key(*o));
    enqueue_tenant_of(*o);
  };
  auto task_came_or_went = [this, enqueue_task](const kube::ObjectPtr& o) {
    enqueue_task(o);
    mark_dirty();
  };
  tasks_->add_handlers({task_came_or_went,
                        [enqueue_task, replan_if_needed](const kube::ObjectPtr& before, const kube::ObjectPtr& o) {
                          enqueue_task(o);
                          replan_if_needed(before, o);
                        },
                        task_came_or_went});
  // What the informer shows meets the expectation of its creation (before the owner is reconciled),
  // and the owner is reconciled.
  struct OwnedFacts {
    std::string ns, name, uid, task;
  };
  auto owned_handlers = [this]<class T>(const std::string& kind, OwnedFacts (*facts)(const T&)) {
    using Ptr = std::shared_ptr<const T>;
    auto seen = [this, kind, facts](const Ptr& o) {
      const OwnedFacts f = facts(*o);
      expectations_.observed(expectation_id(kind, f.ns, f.name), f.uid);
      enqueue_owner(f.ns, f.name, f.task);
    };
    return kube::BasicInformerHandlers<T>{seen, [seen](const Ptr&, const Ptr& o) { seen(o); }, seen};
  };
  pods_->add_handlers(owned_handlers(res::kPods.kind, +[](const api::Pod& p) { return OwnedFacts{p.ns, p.name, p.uid, p.label(render::label::kTask)}; }));
  services_->add_handlers(owned_handlers(res::kServices.kind, +[](const nlohmann::json& o) {
    const auto& meta = kube::object_at(o, "metadata");
    return OwnedFacts{kube::string_at(meta, "namespace"), kube::string_at(meta, "name"), kube::string_at(meta, "uid"),
                      kube::string_at(kube::object_at(meta, "labels"), render::label::kTask)};
  }));
  auto dirty = [this](const auto&) { mark_dirty(); };
  pods_->add_handlers({dirty, replan_if_needed, dirty});
  nodes_->add_handlers({dirty, replan_if_needed, dirty});
}

// What the planner needs beyond the spec: the task's measured scaling, until when a reduceCost task
// waits for cheaper capacity (deadline slack or the policy's patience), when a running one is
// expected to end (its estimatedDuration from its start, stretched at a smaller size).
void TaskController::planner_inputs(planner::Task& t, const api::TaskSpec& spec, const nlohmann::json& status) const {
  // References into the cached status, not copies (this runs for every task at every plan).
  t.scaling = planner::scaling_from(kube::array_at(status, "scaling"));
  t.idle = idle_shrink(status);
  if (auto pct = kube::int_at(kube::object_at(status, "utilization"), "gpuPercent")) t.gpu_percent = static_cast<int>(*pct);
  auto p = policy();
  const double prior = p ? static_cast<double>(p->growth_min_marginal_milli) / 1000.0 : 0.8;
  if (spec.reduce_cost) {
    // The work done so far, as GPU-time over what estimatedDuration at max workers takes.
    double done = 0;
    if (spec.estimated_duration) {
      int64_t gpu_ms = 0;
      const auto& gpu_time = kube::object_at(kube::object_at(kube::object_at(status, "cost"), "breakdown"), "gpuMilliSeconds");
      for (const auto& [k, v] : gpu_time.items())
        if (v.is_number_integer()) gpu_ms += v.get<int64_t>();  // GPU-seconds x 1000
      const double total = static_cast<double>(spec.estimated_duration->count()) * t.max_workers * spec.gpus.milli / 1000.0;
      if (total > 0) done = static_cast<double>(gpu_ms) / total;
    }
    const auto patience = p ? p->reduce_cost_patience : std::chrono::seconds(6 * 3600);
    t.has_deadline = spec.deadline(t.created).has_value();
    t.cheap_until = planner::cheap_until(t.created, patience, spec.deadline(t.created), spec.estimated_duration, done, t.scaling, t.min_workers,
                                         t.max_workers, prior);
  }
  if (t.admitted && spec.estimated_duration)
    if (auto start = kube::parse_time(status.value("startTime", "")))
      t.expected_end = planner::expected_end(*start, *spec.estimated_duration, t.scaling, static_cast<int>(t.workers.size()),
                                             t.max_workers, prior);
}


void TaskController::mark_dirty() {
  {
    std::lock_guard lock(plan_mu_);
    dirty_ = true;
  }
  plan_cv_.notify_one();
}

void TaskController::planning_loop(const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_start{};
  Clock::duration last_plan{};
  while (!stop.load()) {
    {
      std::unique_lock lock(plan_mu_);
      // Also every couple of seconds without changes: time alone matters (aging, resize intervals,
      // unschedulable timeouts).
      plan_cv_.wait_for(lock, std::chrono::seconds(2), [this, &stop] { return dirty_ || stop.load(); });
      dirty_ = false;
    }
    // Let a burst of changes (a gang of pods appearing) settle into one plan; under a long burst
    // (hundreds of tasks applied at once, each pod's binding a change) start plans at most every
    // plan_interval and spend at most a tenth of the time planning. At 1,000 tasks, planning as
    // soon as a tenth of the time allowed made cheaper plans only mean more plans: the planning
    // thread stayed a third of Valley's CPU while its plans mostly confirmed the last one.
    const auto earliest = std::max(Clock::now() + std::chrono::milliseconds(50),
                                   last_start + std::max<Clock::duration>(options_.plan_interval, 10 * last_plan));
    std::this_thread::sleep_until(earliest);
    try {
      last_start = Clock::now();
      plan_once();
      last_plan = Clock::now() - last_start;
      m().plan_seconds.observe({}, std::chrono::duration<double>(last_plan).count());
    } catch (const std::exception& e) {
      spdlog::error("planner: {}", e.what());
    }
  }
}

void TaskController::make_plan_task(PlanTask& pt, const std::shared_ptr<const planner::SnapshotView::TaskEntry>& entry,
                                    const std::shared_ptr<const cost::Policy>& pricing) const {
  const nlohmann::json& obj = *entry->object;
  const api::TaskSpec& spec = *entry->parsed->spec;
  const nlohmann::json& status = kube::object_at(obj, "status");
  const std::string phase = kube::string_at(status, "phase");
  pt.entry = entry;
  pt.pricing = pricing;
  // Going away (deletionTimestamp), ended, suspended, over its budget or idle: holds nothing.
  pt.holds = !(kube::object_at(obj, "metadata").contains("deletionTimestamp") || phase == "Succeeded" || phase == "Failed" ||
               spec.run_policy.suspend || over_budget(spec, status) || idle_suspended(spec, status));
  pt.epoch = std::to_string(status.value("epoch", 0));
  pt.task = *entry->task;
  planner_inputs(pt.task, spec, status);
  pt.overlay_stale = true;
}

void TaskController::lay_published(planner::Task& t, const planner::Task& observed, const std::map<std::string, Admission>& published) {
  t.admitted = observed.admitted;
  t.workers = observed.workers;
  if (auto it = published.find(t.key); it != published.end() && it->second.admitted) {
    t.admitted = true;
    std::vector<planner::Task::Worker> placed;
    for (const auto& w : it->second.placement) placed.push_back({w.node, w.gpu_resource, w.gpu_count});
    t.workers = planner::planned_workers(placed, t.workers);
  }
}

void TaskController::verify_plan_inputs(const std::vector<PlanTask*>& planned, const std::map<std::string, Admission>& published,
                                        const std::vector<const planner::Node*>& nodes, const planner::SnapshotView& view,
                                        const planner::Config& config, kube::SystemTime now, const std::vector<planner::Decision>& kept) {
  // Every input made anew from its entry, the per-plan parts (tenant, priority, nodes avoided)
  // taken as this plan laid them, the published admission laid over afresh.
  std::vector<PlanTask> scratch(planned.size());
  std::vector<const planner::Task*> tasks;
  size_t differ = 0;
  std::map<std::string, planner::PlannedTask> planned_by_key;
  for (size_t i = 0; i < planned.size(); ++i) {
    const PlanTask& pt = *planned[i];
    PlanTask& s = scratch[i];
    make_plan_task(s, pt.entry, pt.pricing);
    s.task.tenant = pt.task.tenant;
    s.task.priority = pt.task.priority;
    s.task.avoid_nodes = pt.task.avoid_nodes;
    lay_published(s.task, *pt.entry->task, published);
    tasks.push_back(&s.task);
    planned_by_key[s.task.key] = planner::PlannedTask{&s.epoch, &s.task.workers};
    if (!s.holds) {
      ++differ;
      spdlog::error("plan inputs differ from a rebuild: {} holds capacity only in the kept input", s.task.key);
    }
  }
  std::set<std::string> node_names;
  for (const planner::Node* n : nodes) node_names.insert(n->name);
  const planner::Returned returned = planner::returned_by_planned(
      view,
      [&](const std::string& key) -> std::optional<planner::PlannedTask> {
        auto e = planned_by_key.find(key);
        return e == planned_by_key.end() ? std::nullopt : std::optional(e->second);
      },
      [&](const std::string& node) { return node_names.count(node) > 0; });
  const auto rebuilt = planner::plan(nodes, returned, tasks, now, config);
  auto describe = [](const planner::Decision& d) {
    std::string out = d.key + " action=" + std::to_string(static_cast<int>(d.action)) + " workers=" + std::to_string(d.workers) +
                      " reason=" + d.reason + " queue=" + std::to_string(d.queue_position) + " node=" + d.expected_node +
                      " price=" + std::to_string(d.price_micros) + " placement=";
    for (const auto& w : d.placement) out += w.node + ":" + w.gpu_resource + "x" + std::to_string(w.count) + ",";
    return out;
  };
  if (rebuilt.size() != kept.size()) ++differ;
  for (size_t i = 0; i < std::min(rebuilt.size(), kept.size()); ++i) {
    const std::string a = describe(kept[i]), b = describe(rebuilt[i]);
    if (a == b && kept[i].expected_start == rebuilt[i].expected_start) continue;
    ++differ;
    spdlog::error("plan inputs differ from a rebuild: kept [{}] rebuilt [{}]", a, b);
  }
  if (differ) m().plan_input_mismatches.inc({}, static_cast<double>(differ));
}

void TaskController::plan_once() {
  // Read without the lock and without a copy: this thread is the only one that writes admissions_
  // (under the lock, at the end of this function; reconcilers only read it).
  const std::map<std::string, Admission>& published = admissions_;
  // The cluster as the informers last showed it, kept up to date event by event (ClusterSnapshot).
  planner::SnapshotView view;
  {
    std::lock_guard lock(snapshot_mu_);
    snapshot_.set_facts(node_facts());
    view = snapshot_.view();
  }
  const auto pricing = policy();
  const uint64_t round = ++plans_;
  // A node's price changed, or one came or went: the rates waiting tasks' estimates look at, and
  // the estimates of placed tasks, are made anew (a node that only changed what its pods hold keeps them).
  bool rates_changed = false;
  std::vector<const planner::Node*> nodes;
  nodes.reserve(view.nodes.size());
  // The view's nodes come by name, as plan_nodes_ keeps them: walked side by side (a compare a
  // node rather than a search).
  auto next = plan_nodes_.begin();
  for (const auto& source : view.nodes) {
    const std::string fault = gpu_fault_of(*source);
    while (next != plan_nodes_.end() && next->first < source->name) ++next;
    const bool added = next == plan_nodes_.end() || next->first != source->name;
    if (added) next = plan_nodes_.emplace_hint(next, source->name, PlanNode{});
    auto it = next++;
    PlanNode& pn = it->second;
    if (added || pn.source != source || pn.pricing != pricing || pn.fault != fault) {
      pn.source = source;
      pn.pricing = pricing;
      pn.fault = fault;
      pn.node = with_gpu_fault(*source, fault);
      cost::NodeRate rate;
      if (pricing && !pn.node.vendor.empty()) rate = cost::price_node(*pricing, pn.node);
      if (added || !(rate == pn.rate)) rates_changed = true;
      pn.rate = std::move(rate);
    }
    pn.seen = round;
    nodes.push_back(&pn.node);
  }
  if (plan_nodes_.size() != nodes.size()) {
    std::erase_if(plan_nodes_, [round](const auto& entry) { return entry.second.seen != round; });
    rates_changed = true;
  }
  const Tenancy tenancy = tenancy_now();
  std::map<std::string, const api::TenantSpec*> tenant_spec;
  for (const auto& t : tenancy.tenants) tenant_spec[t.spec.name] = &t.spec;
  // The plan's tasks, kept from plan to plan (plan_tasks_), and each one's entry there.
  std::vector<const planner::Task*> tasks;
  std::vector<PlanTask*> planned;
  std::map<std::string, bool> namespace_going_now;
  const auto now = std::chrono::system_clock::now();
  for (const auto& shared_entry : view.tasks) {
    const auto& entry = *shared_entry;
    const auto& obj = entry.object;
    const api::ParsedTask& parsed = *entry.parsed;
    if (!parsed.spec || !entry.task) continue;
    // Its namespace is being deleted: the task goes with it, and its pods hold their GPUs until
    // they are gone (the nodes' free capacity shows them).
    auto going = namespace_going_now.try_emplace(parsed.spec->ns, false);
    if (going.second) going.first->second = namespace_going(parsed.spec->ns);
    if (going.first->second) continue;
    auto [cached, added] = plan_tasks_.try_emplace(entry.key);
    PlanTask& pt = cached->second;
    pt.fresh = added || pt.entry != shared_entry || pt.pricing != pricing;
    if (pt.fresh) make_plan_task(pt, shared_entry, pricing);
    // Not in the last plan: what was published for it then may be gone.
    if (pt.planned + 1 != round) pt.overlay_stale = true;
    pt.seen = round;
    if (!pt.holds) continue;
    // Its pods are refused until it or its namespace changes: it holds no capacity meanwhile.
    if (auto r = refusal_of(entry.key, *obj); r && r->blocking) continue;
    planner::Task& t = pt.task;
    t.tenant = entry.task->tenant;
    t.priority = entry.task->priority;
    if (auto owner = tenancy.ownership.owner.find(parsed.spec->ns); owner != tenancy.ownership.owner.end()) {
      t.tenant = owner->second;
      bool capped = false;
      t.priority = tenancy::effective_priority(parsed.spec->priority_set ? std::optional<int>(parsed.spec->priority) : std::nullopt,
                                               tenant_spec[t.tenant], &capped);
      // Once per generation: the API server's policy (deploy/policies) refuses this up front where
      // installed; without it, the user learns here why the task ranks lower than it asked.
      if (capped &&
          priority_capped_.insert((*obj)["metadata"].value("uid", "") + "@" + std::to_string((*obj)["metadata"].value("generation", int64_t{0})))
              .second)
        events_.record(*obj, "Warning", "PriorityCapped", "Plan",
                       "spec.priority " + std::to_string(parsed.spec->priority) + " is above tenant " + t.tenant + "'s maxPriority; planned at " +
                           std::to_string(t.priority));
    }
    for (const auto& waiting : entry.waiting) {
      // Pinned, unbound and refused by kube-scheduler for longer than the timeout.
      const auto& since = waiting.refused_since;
      auto& avoid = avoid_[t.key];
      if (since && now - *since >= options_.unschedulable_timeout && !avoid.count(waiting.node)) {
        avoid[waiting.node] = now + options_.avoid_for;
        spdlog::info("{}: node {} did not take its worker for {}s ({}); planning around it", t.key, waiting.node,
                     options_.unschedulable_timeout.count(), waiting.refusal);
        mark_dirty();
      }
    }
    t.avoid_nodes = entry.task->avoid_nodes;
    if (auto avoiding = avoid_.find(t.key); avoiding != avoid_.end()) {
      auto& avoid = avoiding->second;
      for (auto it = avoid.begin(); it != avoid.end();) it = it->second <= now ? avoid.erase(it) : std::next(it);
      for (const auto& [node, until] : avoid) t.avoid_nodes.push_back(node);
      if (avoid.empty()) avoid_.erase(avoiding);
    }
    // What we published counts as taken until the pods show it (bound ones show where they are).
    if (pt.overlay_stale) {
      lay_published(t, *entry.task, published);
      pt.overlay_stale = false;
    }
    pt.planned = round;
    tasks.push_back(&t);
    planned.push_back(&pt);
  }
  std::erase_if(plan_tasks_, [round](const auto& kv) { return kv.second.seen != round; });
  // The current workers of the tasks planned here hold nothing for the plan: it places them itself.
  const planner::Returned returned = planner::returned_by_planned(
      view,
      [&](const std::string& key) -> std::optional<planner::PlannedTask> {
        auto pt = plan_tasks_.find(key);
        if (pt == plan_tasks_.end() || pt->second.planned != round) return std::nullopt;
        return planner::PlannedTask{&pt->second.epoch, &pt->second.task.workers};
      },
      [&](const std::string& node) { return plan_nodes_.count(node) > 0; });
  planner::Config config = options_.planner;
  config.node_not_ready_grace = options_.disruption.node_not_ready_grace;
  if (pricing) config = cost::planner_config(*pricing, nodes, now, config);
  for (const auto& t : tenancy.tenants)
    config.tenants[t.spec.name] = tenancy::planner_tenant(t, pricing.get(), now, options_.usage_half_life);
  config.usage_mean_life_hours = static_cast<double>(options_.usage_half_life.count()) / 3600.0 / std::log(2.0);
  auto decisions = planner::plan(nodes, returned, tasks, now, config);
  if (options_.verify_plan_inputs) verify_plan_inputs(planned, published, nodes, view, config, now, decisions);
  // Where a task may run, for its estimate: NVIDIA nodes, and AMD ones too when it allows them.
  // Two lists for every task rather than one per task, each rate once (in the order of the first
  // node that has it: the estimate takes the first of equally cheap ones), so a thousand waiting
  // tasks look at the cluster's few pools rather than at a thousand nodes each.
  if (rates_changed) {
    nvidia_rates_.clear();
    any_rates_.clear();
    std::set<std::tuple<std::string, std::string, std::string, decltype(cost::NodeRate::gpu_per_hour), int>> seen_rates;
    for (const planner::Node* n : nodes) {
      if (!pricing || n->vendor.empty()) continue;
      const cost::NodeRate& r = plan_nodes_.at(n->name).rate;
      if (!seen_rates.emplace(r.vendor, r.product, r.capacity_class, r.gpu_per_hour, r.watts).second) continue;
      if (r.vendor == "nvidia") nvidia_rates_.push_back(r);
      if (r.vendor == "nvidia" || r.vendor == "amd") any_rates_.push_back(r);
    }
  }
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
  std::vector<std::pair<const std::string*, Admission>> updates;
  std::vector<std::string> changed;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    const planner::Task& task = *tasks[i];
    PlanTask& pt = *planned[i];
    auto old = published.find(d.key);
    bool same = old != published.end() && old->second.admitted == (d.workers > 0) && old->second.workers == d.workers &&
                old->second.reason == d.reason && old->second.queue_position == d.queue_position &&
                old->second.expected_start == d.expected_start && old->second.placement.size() == d.placement.size();
    for (size_t k = 0; k < d.placement.size() && same; ++k) same = old->second.placement[k].node == d.placement[k].node;
    if (same && old->second.admitted && !pt.fresh && !rates_changed && pt.published_priority == task.priority) continue;
    pt.published_priority = task.priority;  // (the estimate's size follows it)
    Admission a;
    a.admitted = d.workers > 0;
    a.workers = d.workers;
    a.reason = d.reason;
    a.queue_position = d.queue_position;
    a.expected_start = d.expected_start;
    a.cheap_until = task.cheap_until;
    if (pricing) {
      const api::TaskSpec& spec = *pt.entry->parsed->spec;
      a.estimate_basis = cost::estimate_basis(spec, task, d, config, rate_of, spec.amd_support ? any_rates_ : nvidia_rates_, now);
    }
    for (const auto& w : d.placement) a.placement.push_back({vendor_of(w.node), w.gpu_resource, static_cast<int>(w.count), w.node});
    if (!same) changed.push_back(d.key);
    updates.emplace_back(&d.key, std::move(a));
    pt.overlay_stale = true;  // laid over its input anew at the next plan
  }
  size_t admitted = 0;
  {
    std::lock_guard lock(plan_mu_);
    for (auto& [key, a] : updates) admissions_.insert_or_assign(*key, std::move(a));
    std::erase_if(admissions_, [&](const auto& kv) {
      auto pt = plan_tasks_.find(kv.first);
      return pt == plan_tasks_.end() || pt->second.planned != round;
    });
    for (const auto& [key, a] : admissions_) admitted += a.admitted ? 1 : 0;
  }
  admitted_tasks_ = admitted;
  for (const auto& key : changed) queue_.add(key);
}

TaskController::~TaskController() { queue_.shut_down(); }

void TaskController::enqueue_owner(const std::string& ns, const std::string& name, const std::string& task_label) {
  // The published ownership changed or went (someone edited or deleted it): published again.
  if (name == options_.ownership_name && ns == options_.ownership_namespace) queue_.add(kOwnershipKey);
  if (!task_label.empty()) queue_.add(ns + "/" + task_label);
}

void TaskController::run(const std::atomic<bool>& stop) {
  kube::InformerBase* informers[] = {tasks_.get(), pods_.get(), nodes_.get(), services_.get(), configs_.get(), pricing_.get()};
  for (auto* inf : informers) inf->start();
  for (auto* inf : informers) {
    while (!stop.load() && !inf->wait_for_sync(std::chrono::seconds(1))) {
    }
  }
  // Tenants are optional (their CRD may not be installed, or namespaces not readable): without them
  // in a few seconds, tasks are planned without tenants until they come.
  for (auto* inf : {tenants_.get(), namespaces_.get()}) inf->start();
  for (auto* inf : {tenants_.get(), namespaces_.get()})
    if (!stop.load() && !inf->wait_for_sync(std::chrono::seconds(5)))
      spdlog::warn("tenants: {} not listed yet (is the Tenant CRD installed, may Valley list namespaces?): planning without tenants meanwhile",
                   inf == tenants_.get() ? "tenants" : "namespaces");
  queue_.add(kOwnershipKey);  // published even with no tenant at all (the policies need it to exist)
  if (!stop.load()) spdlog::info("trainingtask controller: caches synced, {} workers", options_.workers);
  // The PricingPolicy in force before any task is reconciled: a task that finished or lost pods
  // in a reconcile without it would never be charged for them (the chaos campaign found new
  // leaders pricing nothing until the policy's own turn in the queue came).
  if (!stop.load()) reconcile_policy(options_.pricing_policy);
  std::thread planner([this, &stop] {
    kube::name_this_thread("planner");
    planning_loop(stop);
  });
  std::thread checkpoint_reader([this, &stop] {
    kube::name_this_thread("checkpoints");
    checkpoints_.run(stop);
  });
  std::thread gpu_reader([this, &stop] {
    kube::name_this_thread("gpu-metrics");
    gpu_.run(stop);
  });
  auto threads = kube::run_workers(queue_, options_.workers, [this](const std::string& key) {
    LogContext context(key.rfind('@', 0) == 0 ? key.substr(1) : key);
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = kube::thread_cpu_seconds();
    bool ok = false;
    try {
      ok = reconcile(key);
    } catch (...) {
      m().reconciles.inc({"trainingtask", "error"});
      throw;
    }
    m().reconciles.inc({"trainingtask", ok ? "success" : "error"});
    m().reconcile_seconds.observe({"trainingtask"}, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    m().reconcile_cpu_seconds.observe({"trainingtask"}, kube::thread_cpu_seconds() - cpu_start);
    return ok;
  });
  running_ = true;
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  running_ = false;
  queue_.shut_down();
  for (auto& t : threads) t.join();
  plan_cv_.notify_all();
  planner.join();
  checkpoint_reader.join();
  gpu_reader.join();
  for (auto* inf : informers) inf->stop();
}

// Secrets are neither listed nor watched (RBAC grants get and create only): whether a task's SSH
// key Secret exists is asked once and remembered per task incarnation (UID).
bool TaskController::ssh_secret_exists(const std::string& ns, const std::string& task, const std::string& uid) {
  const std::string key = ns + "/" + task + "@" + uid;
  {
    std::lock_guard lock(secrets_mu_);
    if (known_secrets_.count(key)) return true;
  }
  try {
    auto secret = client_.get(res::kSecrets, ns, render::ssh_secret_name(task));
    for (const auto& ref : secret["metadata"].value("ownerReferences", nlohmann::json::array()))
      if (ref.value("uid", "") == uid) {
        std::lock_guard lock(secrets_mu_);
        known_secrets_.insert(key);
        return true;
      }
    return false;  // an older task's, about to be garbage-collected
  } catch (const kube::KubeError&) {
    return false;  // 404, or unknown: creating it answers (409 = there)
  }
}

void TaskController::secret_created(const std::string& ns, const std::string& task, const std::string& uid) {
  std::lock_guard lock(secrets_mu_);
  known_secrets_.insert(ns + "/" + task + "@" + uid);
}

// How nodes are read: the operator's flags, except that a PricingPolicy in use decides which
// labels mean spot, so that admission (reduceCost on spot) and pricing never disagree.
planner::Node TaskController::node_of(const nlohmann::json& node, const planner::NodeFacts& facts) const {
  return with_gpu_faults(planner::node_from(node, facts));
}

std::string TaskController::gpu_fault_of(const planner::Node& n) const {
  return n.fault.empty() && gpu_.enabled() ? gpu_.fault_of(n.name) : std::string();
}

planner::Node TaskController::with_gpu_fault(planner::Node n, const std::string& fault) {
  if (!fault.empty()) {
    n.fault = fault;
    n.schedulable = false;
  }
  return n;
}

planner::Node TaskController::with_gpu_faults(planner::Node n) const {
  const std::string fault = gpu_fault_of(n);
  return with_gpu_fault(std::move(n), fault);
}

planner::NodeFacts TaskController::node_facts() const {
  planner::NodeFacts facts = options_.node_facts;
  if (auto p = policy()) facts.spot_labels = p->spot_labels;
  return facts;
}

std::shared_ptr<const cost::Policy> TaskController::policy() const {
  std::lock_guard lock(policy_mu_);
  return policy_;
}

// Parses a PricingPolicy and reports in its status whether it is valid and whether it prices tasks;
// the one --pricing-policy names becomes current.
bool TaskController::reconcile_policy(const std::string& name) {
  kube::ObjectPtr object = pricing_->store().get(name);
  std::shared_ptr<const cost::Policy> parsed;
  std::vector<std::string> errors;
  if (object) {
    if (auto p = cost::parse_policy(*object, &errors)) parsed = std::make_shared<const cost::Policy>(std::move(*p));
    if (!parsed && errors.empty()) errors.push_back("invalid");
  }
  if (name == options_.pricing_policy) {
    {
      std::lock_guard lock(policy_mu_);
      policy_ = parsed;
    }
    spdlog::info("pricing policy {}: {}", name, !object ? "absent: tasks are not priced" : parsed ? "in use" : "invalid: " + errors.front());
    mark_dirty();
    for (const auto& t : tasks_->store().list()) queue_.add(kube::object_key(*t));
  }
  if (!object) return true;
  const nlohmann::json current = object->value("status", nlohmann::json::object());
  nlohmann::json status = api::policy_status(*object, errors, parsed ? parsed->currency : "", options_.pricing_policy,
                                             kube::format_time(std::chrono::system_clock::now()));
  // Written only when it changes: the transition times are kept, so an unchanged status compares equal.
  if (current.is_object() && current.value("conditions", nlohmann::json()) == status["conditions"] &&
      current.value("observedGeneration", int64_t{-1}) == status["observedGeneration"])
    return true;
  nlohmann::json updated = *object;
  updated["status"] = status;
  try {
    client_.update_status(res::kPricingPolicies, updated);
  } catch (const kube::KubeError& e) {
    if (e.http_status() == 404) return true;
    return false;  // 409: a newer version is coming
  }
  if (!parsed) {
    std::string message;
    for (const auto& e : errors) message += (message.empty() ? "" : "; ") + e;
    events_.warning(*object, "InvalidPolicy", "Validate", message.substr(0, 1000));
  }
  return true;
}

nlohmann::json TaskController::price(const Observed& o, const std::vector<planner::PodPtr>& pods, bool finished, bool force,
                                     const std::set<std::string>& ended_now) {
  // status.cost is not declared in the CRD: read tolerantly.
  const nlohmann::json stored = kube::object_at(o.task["status"], "cost");
  auto p = policy();
  if (!p || !o.parsed.spec) return stored;
  const api::TaskSpec& spec = *o.parsed.spec;
  std::vector<cost::PodUse> uses;
  std::map<std::string, cost::NodeRate> rates;
  auto rate_of = [&](const std::string& node) -> std::optional<cost::NodeRate> {
    auto n = nodes_->store().get(node);
    if (!n) return std::nullopt;
    planner::Node facts = node_of(*n, node_facts());
    return cost::rate_for(*p, facts.vendor, facts.labels);
  };
  bool pod_ended = false;
  std::map<std::string, int64_t> until;
  for (const auto& e : kube::array_at(stored, "ledger")) until[kube::string_at(e, "uid")] = kube::int_at(e, "untilMs").value_or(0);
  for (const auto& pod : pods) {
    cost::PodUse u = cost::pod_use(*pod);
    if (!u.end && ended_now.count(u.uid)) u.end = o.now;
    if (!u.node.empty() && !rates.count(u.node))
      if (auto r = rate_of(u.node)) rates[u.node] = *r;
    if (u.end && until.count(u.uid) &&
        until[u.uid] < std::chrono::duration_cast<std::chrono::milliseconds>(u.end->time_since_epoch()).count())
      pod_ended = true;
    uses.push_back(std::move(u));
  }
  nlohmann::json fresh = cost::accrue(*p, stored, uses, rates, spec.priority, o.now, finished, options_.cost_settle);
  const auto updated = kube::time_at(stored, "updated");
  const bool due = force || finished || pod_ended || !updated || o.now - *updated >= accrual_interval() ||
                   fresh["ledger"].size() != kube::array_at(stored, "ledger").size() ||
                   kube::string_at(stored, "policy") != p->name;
  nlohmann::json out = due ? fresh : stored;
  if (due) out["updated"] = kube::format_time(o.now);
  // The estimate: from the planner's decision (the pool it gets or waits for, when, at what size),
  // refreshed when that changes.
  if (spec.estimated_duration && !finished && o.admission && o.admission->estimate_basis) {
    if (auto e = cost::estimate(*p, spec, *o.admission->estimate_basis)) {
      nlohmann::json j = cost::estimate_json(*p, *e);
      j["placed"] = o.admission->admitted;
      j["generation"] = spec.generation;
      const nlohmann::json old = stored.value("estimate", nlohmann::json::object());
      // Time moves the start of a waiting task's estimate: only a new pool, size, price or a start
      // moved by more than a minute is news.
      auto start_of = [](const nlohmann::json& x) { return kube::parse_time(x.value("start", "")); };
      auto s_old = start_of(old), s_new = start_of(j);
      const bool moved = !s_old || !s_new || std::chrono::abs(*s_new - *s_old) > std::chrono::minutes(1);
      if (old.empty() || old.value("basis", "") != j.value("basis", "") || old.value("placed", false) != j.value("placed", false) ||
          old.value("generation", int64_t{-1}) != spec.generation || moved) {
        out["estimate"] = j;
        out["estimated"] = j["expected"];
        out["policy"] = p->name;
        out["currency"] = p->currency;
      }
    }
  }
  return out;
}

void TaskController::collect_metrics() {
  m().depth.set({"trainingtask"}, static_cast<double>(queue_.length()));
  m().delayed.set({"trainingtask"}, static_cast<double>(queue_.delayed()));
  const std::pair<const char*, kube::InformerBase*> informers[] = {{"trainingtasks", tasks_.get()}, {"pods", pods_.get()},
                                                               {"nodes", nodes_.get()}, {"services", services_.get()},
                                                               {"configmaps", configs_.get()},
                                                               {"pricingpolicies", pricing_.get()}};
  for (const auto& [name, inf] : informers) {
    const auto& st = inf->stats();
    m().watch_restarts.set({name}, static_cast<double>(st.watches.load() > 0 ? st.watches.load() - 1 : 0));
    m().relists.set({name}, static_cast<double>(st.expired.load()));
  }
  m().tasks.reset();
  m().workers.reset();
  m().task_gpu_percent.reset();
  m().task_idle_hours.reset();
  m().cost.reset();
  for (const char* phase : {"Pending", "Admitted", "Running", "Restarting", "Suspended", "Succeeded", "Failed"}) m().tasks.set({phase}, 0);
  std::map<std::pair<std::string, std::string>, int64_t> cost_micros;
  for (const auto& t : tasks_->store().list()) {
    const auto status = t->value("status", nlohmann::json::object());
    std::string phase = status.value("phase", "Pending");
    m().tasks.inc({phase.empty() ? "Pending" : phase});
    const std::string ns = (*t)["metadata"].value("namespace", "");
    if (phase == "Running" || phase == "Restarting" || phase == "Admitted")
      m().workers.set({ns, (*t)["metadata"].value("name", "")}, status.value("replicas", 0));
    if (const auto use = kube::object_at(status, "utilization"); !use.empty() && phase != "Succeeded" && phase != "Failed") {
      const std::string name = (*t)["metadata"].value("name", "");
      m().task_gpu_percent.set({ns, name}, static_cast<double>(kube::int_at(use, "gpuPercent").value_or(0)));
      m().task_idle_hours.set({ns, name}, static_cast<double>(kube::int_at(use, "idleGpuSeconds").value_or(0)) / 3600.0);
    }
    const auto cost = status.value("cost", nlohmann::json::object());
    if (cost.contains("accruedMicros")) cost_micros[{ns, cost.value("currency", "")}] += cost.value("accruedMicros", int64_t{0});
  }
  for (const auto& [k, v] : cost_micros) m().cost.set({k.first, k.second}, static_cast<double>(v) / 1e6);
  m().gpus.reset();
  std::map<std::pair<std::string, std::string>, int64_t> held;
  const planner::NodeFacts facts = node_facts();
  m().faulty_nodes.reset();
  for (const auto& n : nodes_->store().list()) {
    const planner::Node node = node_of(*n, facts);
    if (node.fault.empty()) continue;
    // "condition SysLogsXIDError: ..." / "taint nvidia.com/gpu-xid-error=true": the signal's name.
    const std::string signal = node.fault.substr(node.fault.find(' ') + 1);
    m().faulty_nodes.inc({signal.substr(0, signal.find_first_of(":="))});
  }
  std::map<std::string, planner::Node> nodes_seen;
  for (const auto& p : pods_->store().list()) {
    if (p->label(render::label::kManagedBy) != "valley" || p->phase != "Running") continue;
    const std::string& node = p->node_name;
    auto it = nodes_seen.find(node);
    if (it == nodes_seen.end()) {
      auto n = nodes_->store().get(node);
      if (!n) continue;
      it = nodes_seen.emplace(node, node_of(*n, facts)).first;
    }
    for (const auto& [resource, count] : planner::gpu_usage(*p))
      held[{it->second.vendor, it->second.capacity_class}] += gpu::share_milli(resource, count);
  }
  for (const auto& [k, v] : held) m().gpus.set({k.first, k.second}, static_cast<double>(v) / 1000);
  collect_tenant_metrics();
}

void TaskController::collect_tenant_metrics() {
  for (auto* f : {&m().tenant_gpus, &m().tenant_share, &m().tenant_spend, &m().tenant_budget, &m().tenant_exhausted, &m().tenant_waiting})
    f->reset();
  if (!tenants_->has_synced()) return;
  const auto p = policy();
  const std::string currency = p ? p->currency : "USD";
  for (const auto& obj : tenants_->store().list()) {
    const std::string name = kube::string_at(kube::object_at(*obj, "metadata"), "name");
    const auto& st = kube::object_at(*obj, "status");
    const auto& usage = kube::object_at(st, "usage");
    for (const auto& [pool, u] : usage.items())
      for (const auto& [field, kind] : {std::pair{"usedMilli", "used"}, {"nominalMilli", "nominal"}, {"borrowedMilli", "borrowed"}, {"lentMilli", "lent"}})
        if (auto v = kube::int_at(u, field)) m().tenant_gpus.set({name, pool, kind}, static_cast<double>(*v) / 1000);
    try {
      m().tenant_share.set({name}, std::stod(kube::string_at(st, "share")));
    } catch (const std::exception&) {  // not written yet
    }
    if (auto spent = kube::int_at(kube::object_at(st, "spend"), "spentMicros")) m().tenant_spend.set({name, currency}, static_cast<double>(*spent) / 1e6);
    auto parsed = api::parse_tenant(*obj);
    if (parsed.spec && parsed.spec->budget) m().tenant_budget.set({name, currency}, static_cast<double>(parsed.spec->budget->amount) / 1e6);
    bool exhausted = false;
    for (const auto& c : kube::array_at(st, "conditions"))
      if (kube::string_at(c, "type") == "BudgetExhausted" && kube::string_at(c, "status") == "True") exhausted = true;
    m().tenant_exhausted.set({name}, exhausted ? 1 : 0);
    m().tenant_waiting.set({name}, static_cast<double>(kube::int_at(st, "waitingTasks").value_or(0)));
  }
}

bool TaskController::reconcile(const std::string& key) {
  if (key.rfind(kPolicyKeyPrefix, 0) == 0) return reconcile_policy(key.substr(std::string(kPolicyKeyPrefix).size()));
  if (key.rfind(kTenantKeyPrefix, 0) == 0) return reconcile_tenant(key.substr(std::string(kTenantKeyPrefix).size()));
  if (key == kOwnershipKey) return publish_ownership();
  kube::ObjectPtr task = tasks_->store().get(key);
  if (!task) {
    checkpoints_.forget(key);
    written_.forget(key);
    {
      std::lock_guard lock(coalesce_mu_);
      coalescing_.erase(key);
    }
    // Deleted: owner references let the garbage collector remove the rest, once the pods it
    // deletes are released.
    const auto slash = key.find('/');
    return release_foreign_pods(key.substr(0, slash), key.substr(slash + 1), "");
  }
  const std::string task_ns = kube::string_at(kube::object_at(*task, "metadata"), "namespace");
  if (namespace_going(task_ns)) {
    // Its namespace's deletion takes the task too, and the namespace controller deletes the pods
    // first: that is no disruption to recover from. Restarting (status writes, creates the namespace
    // refuses) took minutes a namespace at 200 tasks; only the pods' accounting is let go. (The cost
    // in its status goes with the task.)
    return release_foreign_pods(task_ns, kube::string_at(kube::object_at(*task, "metadata"), "name"), "");
  }
  Observed o;
  // The status this process wrote last, while the informer still shows the task from before it.
  o.task = written_.latest(key, *task);
  if (kube::string_at(kube::object_at(o.task, "metadata"), "resourceVersion") != kube::string_at(kube::object_at(*task, "metadata"), "resourceVersion"))
    spdlog::debug("{}: the cache shows the task from before our last status write: deciding on that write", key);
  // Every read of the status below (cost, phase, restarts) and in the lifecycle sees it as the CRD
  // declares it: fields of another type read as absent (controllers/api/task_status.h).
  o.task["status"] = api::readable_status(o.task.value("status", nlohmann::json::object()));
  o.parsed = api::parse_task(o.task);
  if (o.parsed.spec && !o.parsed.spec->pod_security.level) o.parsed.spec->pod_security.level = options_.pod_security;
  o.now = std::chrono::system_clock::now();
  o.refusal = refusal_of(key, o.task);
  const std::string ns = o.task["metadata"].value("namespace", "");
  const std::string name = o.task["metadata"].value("name", "");
  const std::string uid = o.task["metadata"].value("uid", "");
  const auto owned_pods = pods_->store().by_index(kube::index::kOwnerUid, uid);
  for (const auto& pod : owned_pods) o.pods.push_back(view_pod(*pod));
  if (gpu_.enabled() && o.parsed.spec) {
    // Its GPUs' utilization as of the latest poll, and the idlePolicy in force (its own, else its tenant's).
    std::vector<std::string> running;
    for (const auto& p : o.pods)
      if (p.phase == "Running") running.push_back(ns + "/" + p.name);
    // A new reading once per utilization interval: the status is not rewritten at every poll.
    const auto last = kube::time_at(kube::object_at(o.task["status"], "utilization"), "updated");
    if (auto r = gpu_.reading(running); r && (!last || r->at - *last >= options_.utilization_interval)) o.gpu_reading = std::move(r);
    o.idle_policy = o.parsed.spec->idle_policy;
    if (!o.idle_policy) {
      std::string owner;
      {
        std::lock_guard lock(ownership_mu_);
        if (auto it = owner_of_namespace_.find(ns); it != owner_of_namespace_.end()) owner = it->second;
      }
      if (auto t = owner.empty() ? nullptr : tenants_->store().get(owner))
        if (auto parsed = api::parse_tenant(*t); parsed.spec) o.idle_policy = parsed.spec->idle_policy;
    }
  }
  o.nodes_known = true;
  o.disruption = options_.disruption;
  for (const auto& p : o.pods) {
    if (p.node.empty() || o.nodes.count(p.node)) continue;
    if (auto n = nodes_->store().get(p.node)) {
      planner::Node facts = node_of(*n, node_facts());
      o.nodes[p.node] = NodeView{facts.ready, facts.not_ready_since, facts.notice, facts.fault};
    }
  }
  std::string checkpoint_error;
  if (o.parsed.spec) {
    checkpoints_.watch(*o.parsed.spec);
    o.checkpoint = checkpoints_.latest(key);
    std::lock_guard lock(plan_mu_);
    if (auto it = checkpoint_errors_.find(key); it != checkpoint_errors_.end()) {
      checkpoint_error = it->second;
      checkpoint_errors_.erase(it);
    }
  }
  if (!checkpoint_error.empty()) events_.warning(o.task, "CheckpointUnreadable", "ReadCheckpoint", checkpoint_error);
  o.service_exists = services_->store().get(ns + "/" + render::service_name(name)) != nullptr;
  // Asked only once the task was admitted at some point: the status records an epoch before anything
  // is created, so a task without one owns no Secret yet (a stale cache fails its status write first).
  o.secret_exists = kube::int_at(kube::object_at(o.task, "status"), "epoch").value_or(0) > 0 && ssh_secret_exists(ns, name, uid);
  {
    std::lock_guard lock(plan_mu_);
    if (auto it = admissions_.find(key); it != admissions_.end()) o.admission = it->second;
  }

  // Pods that hold the accounting finalizer and are done (ended, or being deleted): their cost is
  // brought up to date in this reconcile's status write, and then they are released. A pod being
  // deleted whose end no one will report (its node is lost, or its deletion is stuck) is charged
  // until now.
  std::vector<std::pair<planner::PodPtr, bool>> accounted;  // pod, its end will never be reported
  std::set<std::string> ended_now;                          // the uids of those
  for (size_t k = 0; k < owned_pods.size(); ++k) {
    if (!holds_accounting(*owned_pods[k])) continue;
    const PodView& p = o.pods[k];
    auto n = o.nodes.find(p.node);
    const bool node_gone = !p.node.empty() && (n == o.nodes.end() || planner::not_ready_past(n->second.ready, n->second.not_ready_since, o.now,
                                                                                              o.disruption.node_not_ready_grace));
    const bool stuck = p.deleting && p.deletion_deadline && o.now - *p.deletion_deadline >= o.disruption.stuck_termination;
    const bool unreported = p.deleting && (p.node.empty() || node_gone || stuck);
    if (p.deleting || cost::pod_use(*owned_pods[k]).end) accounted.emplace_back(owned_pods[k], unreported);
    if (unreported) ended_now.insert(p.uid);
  }

  const nlohmann::json stored_status = o.task["status"];
  // Cost first: the lifecycle decides on the budget with what has accrued until now.
  const std::string phase_before = o.task.value("status", nlohmann::json::object()).value("phase", "");
  const bool ended_before = phase_before == "Succeeded" || phase_before == "Failed";
  nlohmann::json stored_cost = kube::object_at(o.task["status"], "cost");
  // The final cost is written once the task has ended and none of its pods holds a GPU any more:
  // workers still running after the end (until the cleanup below deletes them) are still paid for.
  const bool pods_hold_gpus = std::any_of(owned_pods.begin(), owned_pods.end(), [&](const planner::PodPtr& pod) {
    const cost::PodUse use = cost::pod_use(*pod);
    return use.share_milli > 0 && !use.end && !ended_now.count(use.uid);
  });
  if (!ended_before || !stored_cost.contains("final")) {
    nlohmann::json cost = price(o, owned_pods, ended_before && !pods_hold_gpus, !accounted.empty(), ended_now);
    if (!cost.empty()) o.task["status"]["cost"] = cost;
  }
  Decision d = decide(o);
  const std::string phase_after = d.status.value("phase", "");
  if ((phase_after == "Succeeded" || phase_after == "Failed") && !ended_before && policy()) {
    Observed final_view = o;
    final_view.task["status"] = d.status;
    d.status["cost"] = price(final_view, owned_pods, !pods_hold_gpus, true, ended_now);
  } else if (!d.delete_pods.empty() && policy() && !stored_cost.contains("final")) {
    // Pods about to be deleted are charged up to now, in the status written before they go: once
    // gone, the time since the last accrual could no longer be charged.
    Observed now_view = o;
    now_view.task["status"] = d.status;
    // (Pods without the accounting finalizer, from before it, vanish unpriced: closed now.)
    std::set<std::string> closing = ended_now;
    for (const auto& del : d.delete_pods)
      if (auto pod = std::find_if(owned_pods.begin(), owned_pods.end(), [&](const planner::PodPtr& x) { return x->uid == del.uid; });
          pod != owned_pods.end() && !holds_accounting(**pod))
        closing.insert(del.uid);
    d.status["cost"] = price(now_view, owned_pods, false, true, closing);
  }
  if (d.status.value("cost", nlohmann::json::object()) != stored_cost) d.status_changed = true;
  const bool ended_after = phase_after == "Succeeded" || phase_after == "Failed";
  if (((!ended_before && !ended_after) || pods_hold_gpus) && !owned_pods.empty() && policy()) {
    if (const auto every = accrual_interval(); !d.requeue_after || *d.requeue_after > every) d.requeue_after = every;
  }
  // Utilization is read while its pods run.
  if (gpu_.enabled() && !ended_after && !owned_pods.empty() && (!d.requeue_after || *d.requeue_after > options_.utilization_interval))
    d.requeue_after = options_.utilization_interval;

  // Coalescing: a change that only brings counts, the accrued cost or utilization up to date waits
  // (up to status_coalesce after the first such change) for the next change worth writing at once (a
  // phase, a condition, an epoch) and goes out with it; so does a new task's "waiting for the
  // capacity planner" until the plan's first word on it. Not when pods are deleted or released:
  // their cost must be in the status before they go. What else the decision says is carried out.
  if (d.status_changed && options_.status_coalesce.count() > 0 && accounted.empty() && status_may_wait(stored_status, d, o.admission.has_value())) {
    if (const auto wait = coalesce_wait(key); wait.count() > 0) {
      d.status_changed = false;
      const auto again = std::chrono::duration_cast<std::chrono::seconds>(wait + std::chrono::milliseconds(999));
      if (!d.requeue_after || *d.requeue_after > again) d.requeue_after = again;
    }
  }
  if (d.status_changed) {
    {
      std::lock_guard lock(coalesce_mu_);
      coalescing_.erase(key);
    }
    nlohmann::json updated = o.task;
    updated["status"] = d.status;
    try {
      written_.wrote(key, o.task, client_.update_status(res::kTrainingTasks, updated));
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 404) return true;
      // 409: our cache was behind; the informer brings the fresh object and we decide again.
      if (e.http_status() == 409) m().status_conflicts.inc({});
      spdlog::debug("{}: status update: {}", key, e.what());
      return false;
    }
    if (phase_after != phase_before)
      spdlog::info("{} -> {}: {}", phase_before.empty() ? "new" : phase_before, phase_after, d.status.value("message", ""));
    // Restarts this process decided (the write succeeded, so each is counted once).
    const auto before = o.task.value("status", nlohmann::json::object()).value("restarts", nlohmann::json::object());
    const auto after = d.status.value("restarts", nlohmann::json::object());
    // Disruptions this process handled, and the work they cost once the task runs again.
    const auto last_before = kube::object_at(o.task.value("status", nlohmann::json::object()), "lastDisruption");
    const auto last_after = kube::object_at(d.status, "lastDisruption");
    const std::string disruption = kube::string_at(last_after, "cause");
    if (!disruption.empty() && kube::string_at(last_after, "time") != kube::string_at(last_before, "time"))
      m().disruptions.inc({disruption});
    if (!disruption.empty() && last_after.contains("workLostSeconds") && !last_before.contains("workLostSeconds") && o.parsed.spec) {
      const double gpus = static_cast<double>(kube::int_at(last_after, "workers").value_or(0)) * (o.parsed.spec->gpus.milli / 1000.0);
      m().gpu_hours_lost.inc({disruption}, static_cast<double>(kube::int_at(last_after, "workLostSeconds").value_or(0)) * gpus / 3600.0);
    }
    for (const char* cause : {"failures", "resizes", "preemptions", "disruptions"}) {
      int64_t delta = after.value(cause, int64_t{0}) - before.value(cause, int64_t{0});
      if (delta > 0) m().restarts.inc({std::string(cause).substr(0, std::string(cause).size() - 1)}, static_cast<double>(delta));
    }
  }
  // The status now holds every accounted pod's cost (or nothing is priced): release them.
  bool released = true;
  {
    const nlohmann::json written = d.status.value("cost", nlohmann::json::object());
    const bool priced = policy() && o.parsed.spec && !written.contains("final");
    for (const auto& [pod, unreported] : accounted)
      if (!priced || unreported || cost::charged_to_end(cost::pod_use(*pod), written)) released &= release_accounting(*pod);
    released &= release_foreign_pods(ns, name, uid);
  }
  for (const auto& ev : d.events) events_.record(o.task, ev.type, ev.reason, ev.action, ev.note);
  if (d.delete_task) {
    kube::DeleteOptions opts;
    opts.precondition_uid = uid;
    client_.remove(res::kTrainingTasks, ns, name, opts);
    spdlog::info("{}: deleted {}s after finishing (ttlSecondsAfterFinished)", key,
                 o.parsed.spec ? o.parsed.spec->run_policy.ttl_seconds_after_finished.value_or(0) : 0);
    return true;
  }

  bool ok = true;
  for (const auto& del : d.delete_pods) {
    kube::DeleteOptions opts;
    opts.precondition_uid = del.uid;  // never delete a newer pod that took the name meanwhile
    opts.precondition_resource_version = del.resource_version;
    if (del.force) opts.grace_period_seconds = 0;
    try {
      client_.remove(res::kPods, ns, del.name, opts);
      spdlog::debug("{}: deleted pod {} (uid {}, status epoch {})", key, del.name, del.uid, d.status.value("epoch", 0));
      if (del.force) spdlog::info("{}: force-deleted pod {} (its node is lost or it outlived its grace period)", key, del.name);
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 409 && e.http_status() != 404) {
        spdlog::warn("{}: delete pod {}: {}", key, del.name, e.what());
        ok = false;
      }
    }
  }
  if (d.status.value("phase", "") == "Restarting" && o.task.value("status", nlohmann::json::object()).value("phase", "") != "Restarting")
    checkpoints_.poke(key);
  // What this decision creates, less what an earlier reconcile created and the informers have not
  // shown yet (expectations): all sent at once through the request pool.
  struct Creation {
    const kube::Resource* resource;
    nlohmann::json object;
    std::string id;  // for expectations: "<Kind> <ns>/<name>"
    bool created = false;
    std::optional<kube::KubeError> error;
  };
  std::vector<Creation> creations;
  if (d.create_ssh_secret && o.parsed.spec)
    creations.push_back({&res::kSecrets, render::ssh_secret(*o.parsed.spec, render::generate_ssh_key_pair(name)), "", false, {}});
  for (const auto& object : d.create) {
    const std::string kind = object.value("kind", "");
    const kube::Resource* r = kind == "Pod" ? &res::kPods : &res::kServices;
    const std::string object_name = object["metadata"].value("name", "");
    std::string id = expectation_id(kind, ns, object_name);
    // Created a moment ago and on its way to the cache, or come into the cache since this reconcile
    // read it (the watch met the expectation meanwhile). In that order: the informer stores an
    // object before it meets its expectation.
    if (expectations_.pending(id) || !cached_uid(*r, ns, object_name).empty()) continue;
    creations.push_back({r, object, std::move(id), false, {}});
  }
  requests_->run_all(creations.size(), [&](size_t k) {
    Creation& c = creations[k];
    try {
      // Of the answer, only the identity the expectations need is built (a pod's is ~5 KB of JSON).
      static const kube::FieldMask kIdentity = kube::FieldMask::only({{"metadata", kube::FieldMask::only({{"name", kube::FieldMask::all()},
                                                                                                          {"namespace", kube::FieldMask::all()},
                                                                                                          {"uid", kube::FieldMask::all()},
                                                                                                          {"resourceVersion", kube::FieldMask::all()}})}});
      const nlohmann::json made = client_.create(*c.resource, ns, c.object, &kIdentity);
      c.created = true;
      if (!c.id.empty()) expect(c.id, *c.resource, ns, made);
    } catch (const kube::KubeError& e) {
      c.error = e;
    }
  });
  // The outcomes, in the decision's order. After a refusal that retrying will not heal, later
  // refusals are not reported again: the first says it all, and a task that keeps failing is
  // retried with backoff.
  bool refused = false, namespace_going = false, pod_created = false;
  for (const Creation& c : creations) {
    if (c.created) {
      if (c.resource == &res::kSecrets) secret_created(ns, name, uid);
      if (c.resource == &res::kPods) pod_created = true;
      continue;
    }
    if (!c.error || refused || namespace_going) continue;
    const kube::KubeError& e = *c.error;
    if (e.http_status() == 409) continue;  // made already (by us, before a restart or a stale cache)
    ok = false;
    if (kube::namespace_terminating(e)) {
      // The namespace's deletion removes the task too: nothing to create, no one to tell.
      namespace_going = true;
      continue;
    }
    refused = e.http_status() == 400 || e.http_status() == 403 || e.http_status() == 422;
    const std::string object_name = c.object["metadata"].value("name", "");
    spdlog::warn("{}: create {} {}: {}", key, c.resource->kind, object_name, e.what());
    if (!refused) continue;
    // Refusals that will not heal by retrying are the user's to see (bad resources in the spec, a
    // quota, an admission policy), in an Event and the PodsCreated condition.
    const std::string what = c.resource->kind + " " + object_name + ": " + e.what();
    events_.warning(o.task, "CreateFailed", "Create", what);
    CreateRefusal refusal;
    const bool pod_security = std::string(e.what()).find("violates PodSecurity") != std::string::npos;
    refusal.reason = pod_security ? "PodSecurity" : e.http_status() == 403 ? "Forbidden" : "Invalid";
    refusal.blocking = pod_security || e.http_status() != 403;
    refusal.message = what;
    if (pod_security)
      refusal.message += " (the namespace's Pod Security level refuses the pods: set spec.podSecurity.level: Restricted, or run"
                         " Valley with --pod-security=Restricted; MPI images must then run sshd as the pod's user on port 2222)";
    const std::string labels = namespace_labels(ns);
    {
      std::lock_guard lock(plan_mu_);
      refusals_[key] = {uid, o.parsed.spec ? o.parsed.spec->generation : 0, labels, std::chrono::system_clock::now(), refusal};
    }
    if (refusal.blocking) mark_dirty();  // it holds no capacity now
  }
  if (pod_created && o.refusal) {
    std::lock_guard lock(plan_mu_);
    refusals_.erase(key);  // accepted now: PodsCreated turns True in the next reconcile
    queue_.add_after(key, std::chrono::seconds(1));
  }
  if (refused && !ok) {
    // A blocking refusal is not retried with backoff: the next reconcile reports it and waits for a change.
    std::lock_guard lock(plan_mu_);
    if (auto it = refusals_.find(key); it != refusals_.end() && it->second.what.blocking) {
      queue_.add(key);
      ok = true;
    }
  }
  if (d.launcher_hostfile) {
    try {
      client_.patch(res::kPods, ns, render::launcher_name(name), kube::PatchType::Merge,
                    {{"metadata", {{"annotations", {{api::kHostfileAnnotation, *d.launcher_hostfile}}}}}});
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 404) {  // gone meanwhile: the next reconcile makes another
        spdlog::warn("{}: update the launcher's hostfile: {}", key, e.what());
        ok = false;
      }
    }
  }
  if (namespace_going) {
    spdlog::info("{}: namespace {} is being deleted; not creating anything more", key, ns);
    return true;
  }
  if (d.requeue_after) queue_.add_after(key, *d.requeue_after);
  return ok && released;
}

void TaskController::expect(const std::string& id, const kube::Resource& r, const std::string& ns, const nlohmann::json& made) {
  const auto& meta = kube::object_at(made, "metadata");
  const std::string uid = kube::string_at(meta, "uid");
  expectations_.expect(id, uid);
  // The watch may have shown it before the create's answer came back: then it is met already.
  if (!uid.empty() && cached_uid(r, ns, kube::string_at(meta, "name")) == uid) expectations_.observed(id, uid);
}

std::string TaskController::cached_uid(const kube::Resource& r, const std::string& ns, const std::string& name) const {
  const std::string key = ns + "/" + name;
  if (&r == &res::kPods) {
    auto cached = pods_->store().get(key);
    return cached ? cached->uid : "";
  }
  auto cached = services_->store().get(key);
  return cached ? kube::string_at(kube::object_at(*cached, "metadata"), "uid") : "";
}

std::chrono::milliseconds TaskController::coalesce_wait(const std::string& key) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(coalesce_mu_);
  const auto first = coalescing_.try_emplace(key, now).first->second;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(first + coalesce_window() - now);
  return std::max(left, std::chrono::milliseconds(0));
}

bool TaskController::namespace_going(const std::string& ns) const {
  auto space = namespaces_->store().get(ns);
  return space && kube::object_at(*space, "metadata").contains("deletionTimestamp");
}

std::string TaskController::namespace_labels(const std::string& ns) const {
  auto object = namespaces_->store().get(ns);
  return object ? nlohmann::json(kube::labels_of(*object)).dump() : "";
}

std::optional<CreateRefusal> TaskController::refusal_of(const std::string& key, const nlohmann::json& task) {
  {
    std::lock_guard lock(plan_mu_);
    if (!refusals_.count(key)) return std::nullopt;  // the common case, asked for every task in every plan
  }
  const std::string labels = namespace_labels(kube::string_at(kube::object_at(task, "metadata"), "namespace"));
  std::lock_guard lock(plan_mu_);
  auto it = refusals_.find(key);
  if (it == refusals_.end()) return std::nullopt;
  const Refusal& r = it->second;
  const auto meta = kube::object_at(task, "metadata");
  const auto since = std::chrono::system_clock::now() - r.at;
  if (r.uid != kube::string_at(meta, "uid") || r.generation != kube::int_at(meta, "generation").value_or(0) ||
      r.namespace_labels != labels || (r.what.blocking && since >= options_.refused_retry)) {
    refusals_.erase(it);  // something changed: try again
    return std::nullopt;
  }
  CreateRefusal out = r.what;
  if (out.blocking)
    out.retry_in = std::chrono::duration_cast<std::chrono::seconds>(options_.refused_retry - since) + std::chrono::seconds(1);
  return out;
}

void TaskController::enqueue_tenant_of(const nlohmann::json& task) {
  const std::string ns = kube::string_at(kube::object_at(task, "metadata"), "namespace");
  std::lock_guard lock(ownership_mu_);
  if (auto owner = owner_of_namespace_.find(ns); owner != owner_of_namespace_.end()) queue_.add(kTenantKeyPrefix + owner->second);
}

TaskController::Tenancy TaskController::tenancy_now() const {
  Tenancy out;
  for (const auto& obj : tenants_->store().list()) {
    auto parsed = api::parse_tenant(*obj);
    if (!parsed.spec) {
      std::string errors;
      for (const auto& e : parsed.errors) errors += (errors.empty() ? "" : "; ") + e;
      out.invalid[kube::string_at(kube::object_at(*obj, "metadata"), "name")] = errors;
      continue;
    }
    tenancy::TenantObject t;
    t.spec = std::move(*parsed.spec);
    t.created = kube::time_at(kube::object_at(*obj, "metadata"), "creationTimestamp").value_or(kube::SystemTime{});
    t.status = kube::object_at(*obj, "status");
    out.tenants.push_back(std::move(t));
  }
  std::map<std::string, std::map<std::string, std::string>> namespaces;
  for (const auto& n : namespaces_->store().list())
    namespaces[kube::string_at(kube::object_at(*n, "metadata"), "name")] = kube::labels_of(*n);
  out.ownership = tenancy::assign_namespaces(out.tenants, namespaces);
  return out;
}

// A Tenant's status: usage per pool, fair share, spend this period (from its tasks' accrued cost),
// conditions. Written when something other than time changed, or every tenant_interval.
bool TaskController::reconcile_tenant(const std::string& name) {
  kube::ObjectPtr object = tenants_->store().get(name);
  if (!object) return true;
  const Tenancy tenancy = tenancy_now();
  const auto now = std::chrono::system_clock::now();
  nlohmann::json status;
  if (auto bad = tenancy.invalid.find(name); bad != tenancy.invalid.end()) {
    status = tenancy::invalid_tenant_status(object->value("status", nlohmann::json::object()), bad->second,
                                            (*object)["metadata"].value("generation", int64_t{0}), now);
  } else {
    const tenancy::TenantObject* tenant = nullptr;
    for (const auto& t : tenancy.tenants)
      if (t.spec.name == name) tenant = &t;
    if (!tenant) return true;
    std::vector<tenancy::TaskUse> uses;
    std::map<std::string, std::string> pool_of;  // node -> pool
    std::map<std::string, int64_t> capacity;     // pool -> thousandths
    for (const auto& n : nodes_->store().list()) {
      planner::Node facts = node_of(*n, node_facts());
      if (facts.vendor.empty()) continue;
      pool_of[facts.name] = planner::pool_of(facts);
      for (const auto& [resource, units] : facts.capacity) capacity[pool_of[facts.name]] += gpu::share_milli(resource, units);
    }
    // Every tenant's use (what this one lends depends on what the others borrow); its own tasks' uses.
    std::map<std::string, std::map<std::string, int64_t>> used;  // tenant ("" for none) -> pool -> thousandths
    for (const auto& task : tasks_->store().list()) {
      const auto& meta = kube::object_at(*task, "metadata");
      auto owner = tenancy.ownership.owner.find(kube::string_at(meta, "namespace"));
      const std::string owner_name = owner == tenancy.ownership.owner.end() ? "" : owner->second;
      tenancy::TaskUse u;
      u.uid = kube::string_at(meta, "uid");
      const auto& st = kube::object_at(*task, "status");
      u.accrued = cost::accrued_micros(kube::object_at(st, "cost"));
      u.waiting = kube::string_at(st, "phase") == "Pending";
      for (const auto& pod : pods_->store().by_index(kube::index::kOwnerUid, u.uid)) {
        const cost::PodUse use = cost::pod_use(*pod);
        if (use.share_milli <= 0 || !use.start || use.end) continue;
        if (auto pool = pool_of.find(use.node); pool != pool_of.end()) {
          u.held_milli[pool->second] += use.share_milli;
          used[owner_name][pool->second] += use.share_milli;
        }
      }
      if (owner_name == name) uses.push_back(std::move(u));
    }
    auto conflicts = tenancy.ownership.conflicts.find(name);
    const auto p = policy();
    status = tenancy::tenant_status(*tenant, uses, tenancy::lent_milli(name, tenancy.tenants, used, capacity),
                                    conflicts == tenancy.ownership.conflicts.end() ? std::vector<std::string>{} : conflicts->second, p.get(),
                                    now, options_.usage_half_life);
  }
  // Time alone moves the fair share: that is written every tenant_interval, anything else at once.
  nlohmann::json current = object->value("status", nlohmann::json::object());
  auto without_time = [](nlohmann::json s) {
    if (s.contains("fairShare")) s.erase("fairShare");
    if (s.contains("share")) s.erase("share");
    return s;
  };
  auto updated = kube::time_at(kube::object_at(current, "fairShare"), "updated");
  const bool due = !updated || now - *updated >= options_.tenant_interval;
  if (without_time(status) == without_time(current) && !due) {
    queue_.add_after(kTenantKeyPrefix + name, options_.tenant_interval - std::chrono::duration_cast<std::chrono::seconds>(now - *updated));
    return true;
  }
  nlohmann::json updated_object = *object;
  updated_object["status"] = status;
  try {
    client_.update_status(res::kTenants, updated_object);
  } catch (const kube::KubeError& e) {
    if (e.http_status() == 404) return true;
    return false;  // 409: a newer version is coming
  }
  // The budget running out (or a new period starting) is news: an Event on the Tenant, once per change.
  auto exhausted = [](const nlohmann::json& st) -> const nlohmann::json* {
    for (const auto& c : kube::array_at(st, "conditions"))
      if (kube::string_at(c, "type") == "BudgetExhausted") return &c;
    return nullptr;
  };
  const nlohmann::json *before = exhausted(current), *after = exhausted(status);
  const bool was = before && kube::string_at(*before, "status") == "True", is = after && kube::string_at(*after, "status") == "True";
  if (is && !was) events_.record(*object, "Warning", "BudgetExhausted", "Hold", kube::string_at(*after, "message"));
  if (was && after && !is) events_.record(*object, "Normal", "WithinBudget", "Resume", kube::string_at(*after, "message"));
  // A spent budget changes what the planner may admit.
  mark_dirty();
  queue_.add_after(kTenantKeyPrefix + name, options_.tenant_interval);
  return true;
}

// Namespace ownership, kept for enqueue_tenant_of (a task event then costs one lookup, not a parse of
// every Tenant) and published for the admission policies (tenancy::published_ownership), applied when
// it differs from what the cache shows. Only once tenants were listed: before, every namespace would
// look unowned and a policy requiring a tenant would refuse every task.
bool TaskController::publish_ownership() {
  if (!tenants_->has_synced() || !namespaces_->has_synced()) return true;
  const Tenancy tenancy = tenancy_now();
  {
    std::lock_guard lock(ownership_mu_);
    owner_of_namespace_ = tenancy.ownership.owner;
  }
  if (options_.ownership_name.empty()) return true;
  nlohmann::json data = tenancy::published_ownership(tenancy.tenants, tenancy.ownership);
  if (auto current = configs_->store().get(options_.ownership_namespace + "/" + options_.ownership_name);
      current && current->value("data", nlohmann::json::object()) == data)
    return true;
  nlohmann::json object = {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata",
                            {{"name", options_.ownership_name},
                             {"namespace", options_.ownership_namespace},
                             {"labels", {{render::label::kManagedBy, "valley"}}},
                             {"annotations", {{"valley.dev/description", "namespace -> tenant, for the admission policies of deploy/policies (written by Valley)"}}}}},
                           {"data", data}};
  try {
    client_.apply(res::kConfigMaps, object, options_.field_manager);
  } catch (const kube::KubeError& e) {
    spdlog::warn("tenants: publishing namespace ownership in {}/{}: {}", options_.ownership_namespace, options_.ownership_name, e.what());
    return false;
  }
  return true;
}

bool TaskController::release_accounting(const api::Pod& pod) {
  const auto& finalizers = pod.finalizers;
  for (size_t k = 0; k < finalizers.size(); ++k) {
    if (finalizers[k] != render::kAccountingFinalizer) continue;
    const std::string path = "/metadata/finalizers/" + std::to_string(k);
    try {  // test first: the list may have changed since our cache saw it
      client_.patch(res::kPods, pod.ns, pod.name, kube::PatchType::JSON,
                    nlohmann::json::array({{{"op", "test"}, {"path", path}, {"value", render::kAccountingFinalizer}},
                                           {{"op", "remove"}, {"path", path}}}));
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 404) return true;
      spdlog::debug("{}/{}: release: {}", pod.ns, pod.name, e.what());
      return false;  // 422 (the test failed) or 409: the informer brings the fresh pod
    }
    return true;
  }
  return true;
}

bool TaskController::release_foreign_pods(const std::string& ns, const std::string& task, const std::string& owner_uid) {
  bool ok = true;
  // By the task label's index: every reconcile asks, and walking every pod in the cluster each time
  // made reconciles grow with the cluster (two thirds of the operator's CPU at 500 tasks).
  for (const auto& pod : pods_->store().by_index(kByTask, ns + "/" + task)) {
    if (!holds_accounting(*pod)) continue;
    const bool owned = !owner_uid.empty() && std::count(pod->owner_uids.begin(), pod->owner_uids.end(), owner_uid) > 0;
    if (!owned) ok &= release_accounting(*pod);
  }
  return ok;
}

}  // namespace valley::task
