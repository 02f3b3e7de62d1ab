#include "controllers/task/tenant_reconciler.h"

#include "controllers/api/spec.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/task/status_writer.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/remote_clock.h"

namespace valley::task {

TenantReconciler::TenantReconciler(kube::Api& client, kube::EventRecorder& events, ClusterCache& cache, const ControllerOptions& options,
                                   std::function<void()> replan)
    : client_(client),
      events_(events),
      cache_(cache),
      options_(options),
      replan_(std::move(replan)),
      loop_("tenant", "tenant/", 1, [this](const std::string& name) { return reconcile(name); }) {}

void TenantReconciler::enqueue_all() {
  for (const auto& t : cache_.tenants().store().list()) enqueue((*t)["metadata"].value("name", ""));
}

void TenantReconciler::enqueue_owner_of(const nlohmann::json& task) {
  if (auto owner = cache_.owner_of_namespace(kube::string_at(kube::object_at(task, "metadata"), "namespace"))) enqueue(*owner);
}

std::optional<nlohmann::json> TenantReconciler::status_now(const nlohmann::json& object, const std::string& name, kube::SystemTime now) {
  const Tenancy tenancy = cache_.tenancy();
  if (auto bad = tenancy.invalid.find(name); bad != tenancy.invalid.end())
    return tenancy::invalid_tenant_status(object.value("status", nlohmann::json::object()), bad->second,
                                          object["metadata"].value("generation", int64_t{0}), now);
  const tenancy::TenantObject* tenant = nullptr;
  for (const auto& t : tenancy.tenants)
    if (t.spec.name == name) tenant = &t;
  if (!tenant) return std::nullopt;
  // Every tenant's use (what this one lends depends on what the others borrow); its own tasks' uses.
  std::vector<tenancy::TaskPods> tasks;
  for (const auto& task : cache_.task_list()) {
    const auto& meta = kube::object_at(*task, "metadata");
    const auto& st = kube::object_at(*task, "status");
    tenancy::TaskPods t;
    t.ns = kube::string_at(meta, "namespace");
    t.use.uid = kube::string_at(meta, "uid");
    t.use.accrued = cost::accrued_micros(kube::object_at(st, "cost"));
    t.use.waiting = kube::string_at(st, "phase") == "Pending";
    if (t.use.waiting) t.use.wants_milli = api::gpu_milli_at_max(*task);
    for (const auto& pod : cache_.pods_owned_by(t.ns, t.use.uid)) {
      cost::PodUse use = cost::pod_use(*pod);
      if (auto n = use.node.empty() ? nullptr : cache_.node_as_last_seen(use.node)) use.share_milli = planner::share_on_node(*pod, *n);
      if (use.share_milli > 0 && use.start && !use.end) t.running.emplace_back(use.node, use.share_milli);
    }
    tasks.push_back(std::move(t));
  }
  tenancy::PoolUse use = tenancy::pool_use(cache_.nodes(), std::move(tasks), tenancy.ownership);
  auto conflicts = tenancy.ownership.conflicts.find(name);
  const auto p = cache_.policy();
  const auto fair = tenancy::fair_shares_now(tenancy.tenants, use);
  return tenancy::tenant_status(*tenant, use.tasks[name], tenancy::lent_milli(name, tenancy.tenants, use.used, use.capacity),
                                conflicts == tenancy.ownership.conflicts.end() ? std::vector<std::string>{} : conflicts->second, p.get(), now,
                                options_.usage_half_life, fair.count(name) ? fair.at(name) : 0);
}

Result TenantReconciler::reconcile(const std::string& name) {
  kube::ObjectPtr object = cache_.tenants().store().get(name);
  if (!object) return Result::done();
  // An operator of one namespace sees only that namespace's tasks: it writes the status of the
  // Tenant owning it and of no other (whose use it would read as none).
  if (!options_.watch_namespace.empty() && cache_.owner_of_namespace(options_.watch_namespace) != name) return Result::done();
  const auto now = kube::cluster_clock().now();
  const auto status = status_now(*object, name, now);
  if (!status) return Result::done();
  // Time alone moves the fair share: that is written every tenant_interval, anything else at once.
  const nlohmann::json current = object->value("status", nlohmann::json::object());
  auto without_time = [](nlohmann::json s) {
    if (s.contains("fairShare")) s.erase("fairShare");
    if (s.contains("share")) s.erase("share");
    return s;
  };
  auto updated = kube::time_at(kube::object_at(current, "fairShare"), "updated");
  const bool due = !updated || now - *updated >= options_.tenant_interval;
  if (without_time(*status) == without_time(current) && !due)
    return Result::after(std::chrono::duration_cast<std::chrono::milliseconds>(
        options_.tenant_interval - std::chrono::duration_cast<std::chrono::seconds>(now - *updated)));
  nlohmann::json updated_object = *object;
  updated_object["status"] = *status;
  if (const StatusWrite w = write_status(client_, kube::resources::kTenants, updated_object); w.outcome != StatusWrite::Written)
    return w.done() ? Result::done() : Result::retry();
  // The budget running out (or a new period starting) is news: an Event on the Tenant, once per change.
  auto exhausted = [](const nlohmann::json& st) -> const nlohmann::json* {
    for (const auto& c : kube::array_at(st, "conditions"))
      if (kube::string_at(c, "type") == "BudgetExhausted") return &c;
    return nullptr;
  };
  const nlohmann::json *before = exhausted(current), *after = exhausted(*status);
  const bool was = before && kube::string_at(*before, "status") == "True", is = after && kube::string_at(*after, "status") == "True";
  if (is && !was) events_.record(*object, "Warning", "BudgetExhausted", "Hold", kube::string_at(*after, "message"));
  if (was && after && !is) events_.record(*object, "Normal", "WithinBudget", "Resume", kube::string_at(*after, "message"));
  // A spent budget changes what the planner may admit.
  replan_();
  return Result::after(options_.tenant_interval);
}

}  // namespace valley::task
