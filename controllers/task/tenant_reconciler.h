// The Tenant reconciler: a Tenant's status (usage per pool against its nominal quota, what it
// borrows and lends, decayed usage for fair share, spend this budget period from its tasks' accrued
// cost, conditions), written when something other than time changed, or every tenant_interval.
// Budget exhaustion and recovery are Events on the Tenant; a spent budget changes what the planner
// may admit (replan).
#pragma once

#include <functional>
#include <string>

#include "controllers/task/cluster_cache.h"
#include "controllers/task/options.h"
#include "controllers/task/reconcile_loop.h"
#include "operator/kube/api.h"
#include "operator/kube/events.h"

namespace valley::task {

class TenantReconciler {
 public:
  TenantReconciler(kube::Api& client, kube::EventRecorder& events, ClusterCache& cache, const ControllerOptions& options,
                   std::function<void()> replan);
  Result reconcile(const std::string& name);
  ReconcileLoop& loop() { return loop_; }
  void enqueue(const std::string& name) { loop_.queue().add(name); }
  void enqueue_all();
  // The Tenant that owns the task's namespace, if any, is reconciled.
  void enqueue_owner_of(const nlohmann::json& task);

 private:
  // The status Valley would write now; nullopt when the Tenant is not cached or not resolved.
  std::optional<nlohmann::json> status_now(const nlohmann::json& object, const std::string& name, kube::SystemTime now);

  kube::Api& client_;
  kube::EventRecorder& events_;
  ClusterCache& cache_;
  const ControllerOptions& options_;
  std::function<void()> replan_;
  ReconcileLoop loop_;
};

}  // namespace valley::task
