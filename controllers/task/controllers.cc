#include "controllers/task/controllers.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "controllers/api/dra.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"
#include "controllers/task/metrics.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/this_thread.h"

namespace valley::task {

namespace res = kube::resources;

Controllers::Controllers(kube::Api& client, kube::EventRecorder& events, ControllerOptions options)
    : options_(std::move(options)), events_(events), cache_(client, options_), refusals_(options_.refused_retry) {
  planning_ = std::make_unique<PlanningLoop>(cache_, board_, refusals_, events, options_, [this](const std::string& key) { tasks_->enqueue(key); });
  auto replan = [this] { planning_->replan(); };
  accounting_ = std::make_unique<Accounting>(client, cache_, options_, [this] { return board_.admitted_count(); });
  tasks_ = std::make_unique<TaskReconciler>(client, events, cache_, board_, refusals_, *accounting_, options_, replan);
  tenants_ = std::make_unique<TenantReconciler>(client, events, cache_, options_, replan);
  policies_ = std::make_unique<PolicyReconciler>(client, events, cache_, options_, [this] {
    planning_->replan();
    enqueue_all_tasks();
  });
  ownership_ = std::make_unique<OwnershipReconciler>(client, cache_, options_);
  route_events();
}

Controllers::~Controllers() {
  for (ReconcileLoop* loop : {&tasks_->loop(), &tenants_->loop(), &policies_->loop(), &ownership_->loop()}) loop->queue().shut_down();
}

void Controllers::enqueue_all_tasks() {
  for (const auto& t : cache_.task_list()) tasks_->enqueue(kube::object_key(*t));
}

// Which queue each informer event reaches (the snapshot follows them in the cache itself).
void Controllers::route_events() {
  auto replan = [this] { planning_->replan(); };
  // Faults came or went: re-plan, and every task looks at its nodes again.
  cache_.on_gpu_change([this] {
    planning_->replan();
    enqueue_all_tasks();
  });
  auto tenant_changed = [this](const kube::ObjectPtr& o) {
    tenants_->enqueue((*o)["metadata"].value("name", ""));
    ownership_->enqueue();
    planning_->replan();
  };
  cache_.tenants().add_handlers({tenant_changed, [tenant_changed](const kube::ObjectPtr&, const kube::ObjectPtr& o) { tenant_changed(o); },
                                 tenant_changed});
  auto namespace_changed = [this](const kube::ObjectPtr& o) {
    tenants_->enqueue_all();
    // Tasks whose pods the namespace refused: its new labels may admit them.
    for (const auto& key : refusals_.keys_in((*o)["metadata"].value("name", ""))) tasks_->enqueue(key);
    ownership_->enqueue();
    planning_->replan();
  };
  cache_.namespaces().add_handlers({namespace_changed, [namespace_changed](const kube::ObjectPtr&, const kube::ObjectPtr& o) { namespace_changed(o); },
                                    namespace_changed});
  auto policy_changed = [this](const kube::ObjectPtr& o) { policies_->enqueue((*o)["metadata"].value("name", "")); };
  cache_.pricing().add_handlers({policy_changed, [policy_changed](const kube::ObjectPtr&, const kube::ObjectPtr& o) { policy_changed(o); },
                                 policy_changed});
  // The published ownership changed or went (someone edited or deleted it): published again.
  auto config_changed = [this](const kube::ObjectPtr& o) {
    const auto& meta = kube::object_at(*o, "metadata");
    if (ownership_->is_published_object(kube::string_at(meta, "namespace"), kube::string_at(meta, "name"))) ownership_->enqueue();
  };
  cache_.configs().add_handlers({config_changed, [config_changed](const kube::ObjectPtr&, const kube::ObjectPtr& o) { config_changed(o); },
                                 config_changed});
  // An update wakes the planner only when it can change a plan (planner::replan_needed).
  auto replan_if_needed = [this](const auto& before, const auto& o) {
    if (planner::replan_needed(*before, *o)) planning_->replan();
  };
  auto enqueue_task = [this](const kube::ObjectPtr& o) {
    tasks_->enqueue(kube::object_key(*o));
    tenants_->enqueue_owner_of(*o);
  };
  auto task_came_or_went = [this, enqueue_task](const kube::ObjectPtr& o) {
    enqueue_task(o);
    planning_->replan();
  };
  cache_.tasks().add_handlers({task_came_or_went,
                               [enqueue_task, replan_if_needed](const kube::ObjectPtr& before, const kube::ObjectPtr& o) {
                                 enqueue_task(o);
                                 replan_if_needed(before, o);
                               },
                               [this, task_came_or_went](const kube::ObjectPtr& o) {
                                 tasks_->task_deleted(o);
                                 task_came_or_went(o);
                               }});
  // What the informer shows of an owned object meets the expectation of its creation (before the
  // owner is reconciled), and its task is reconciled.
  auto owned = [this](const std::string& kind, const std::string& ns, const std::string& name, const std::string& uid, const std::string& task) {
    // Another instance's (a namespace out of scope): its task is not ours to reconcile, nor its pods to release.
    if (!options_.in_scope(ns)) return;
    tasks_->observed_owned(kind, ns, name, uid);
    if (!task.empty()) tasks_->enqueue(ns + "/" + task);
  };
  auto pod_seen = [owned](const planner::PodPtr& p) { owned(res::kPods.kind, p->ns, p->name, p->uid, p->label(render::label::kTask)); };
  cache_.pods().add_handlers({pod_seen, [pod_seen](const planner::PodPtr&, const planner::PodPtr& p) { pod_seen(p); }, pod_seen});
  cache_.pods().add_handlers({[this](const planner::PodPtr& p) { tell_if_foreign(p); },
                              [this](const planner::PodPtr&, const planner::PodPtr& p) { tell_if_foreign(p); },
                              [this](const planner::PodPtr& p) {
                                std::lock_guard lock(foreign_mu_);
                                foreign_told_.erase(p->uid);
                              }});
  auto service_seen = [owned](const kube::ObjectPtr& o) {
    const auto& meta = kube::object_at(*o, "metadata");
    owned(res::kServices.kind, kube::string_at(meta, "namespace"), kube::string_at(meta, "name"), kube::string_at(meta, "uid"),
          kube::string_at(kube::object_at(meta, "labels"), render::label::kTask));
  };
  cache_.services().add_handlers({service_seen, [service_seen](const kube::ObjectPtr&, const kube::ObjectPtr& o) { service_seen(o); },
                                  service_seen});
  auto dirty = [replan](const auto&) { replan(); };
  cache_.pods().add_handlers({dirty, replan_if_needed, dirty});
  cache_.nodes_informer().add_handlers({dirty, replan_if_needed, dirty});
  cache_.slices().add_handlers({dirty, [replan](const auto&, const auto&) { replan(); }, dirty});
  if (auto* pools = cache_.node_pools()) {
    pools->add_handlers({dirty, [replan](const auto&, const auto&) { replan(); }, dirty});
    // The policy in force says which NodePools Valley can buy from.
    auto tell = [this](const auto&) { policies_->enqueue(options_.pricing_policy); };
    pools->add_handlers({tell, [tell](const auto&, const auto& o) { tell(o); }, tell});
  }
  // The claims cache calls an update only when what the planner counts of a claim changed.
  cache_.claims().add_handlers({dirty, [replan](const auto&, const auto&) { replan(); }, dirty});
}

void Controllers::run(const std::atomic<bool>& stop) {
  cache_.start(stop);
  ownership_->enqueue();  // published even with no tenant at all (the policies need it to exist)
  if (!stop.load()) spdlog::info("controllers: caches synced, {} TrainingTask workers", options_.workers);
  // The PricingPolicy in force before any task is reconciled: a task that finished or lost pods
  // in a reconcile without it would never be charged for them.
  if (!stop.load()) policies_->reconcile(options_.pricing_policy);
  std::thread planner([this, &stop] {
    kube::name_this_thread("planner");
    planning_->run(stop);
  });
  std::thread checkpoint_reader([this, &stop] {
    kube::name_this_thread("checkpoints");
    tasks_->run_checkpoints(stop);
  });
  std::thread transfers([this, &stop] {
    kube::name_this_thread("transfers");
    tasks_->run_transfers(stop);
  });
  ReconcileLoop* loops[] = {&tasks_->loop(), &tenants_->loop(), &policies_->loop(), &ownership_->loop()};
  for (ReconcileLoop* loop : loops) loop->start();
  running_ = true;
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  running_ = false;
  for (ReconcileLoop* loop : loops) loop->stop();
  planning_->wake();
  planner.join();
  checkpoint_reader.join();
  transfers.join();
  cache_.stop();
}

void Controllers::tell_if_foreign(const planner::PodPtr& pod) {
  if (pod->made_by_valley() || pod->phase != "Running" || !options_.in_scope(pod->ns)) return;
  const auto held = gpu::gpu_usage(*pod);
  if (held.empty()) return;
  {
    std::lock_guard lock(foreign_mu_);
    if (!foreign_told_.insert(pod->uid).second) return;
  }
  std::string what;
  for (const auto& [resource, count] : held) what += (what.empty() ? "" : ", ") + std::to_string(count) + " " + resource;
  events_.warning({{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", pod->name}, {"namespace", pod->ns}, {"uid", pod->uid}}}},
                  "OutsideValley", "Observe",
                  "holds " + what + " that Valley did not hand out: counted in no tenant's quota and no task's bill; a TrainingTask gets GPUs through Valley");
}

void Controllers::collect_metrics() {
  std::vector<LabelledQueue> queues;
  for (ReconcileLoop* loop : {&tasks_->loop(), &tenants_->loop(), &policies_->loop(), &ownership_->loop()})
    queues.push_back({loop->label(), &loop->queue()});
  task::collect_metrics(cache_, queues);
}

}  // namespace valley::task
