// The PricingPolicy reconciler: parses a PricingPolicy and reports in its status whether it is valid
// and whether it prices tasks (an Event when invalid); the one --pricing-policy names becomes the
// policy in force in the cluster cache (absent or invalid: tasks are not priced), after which the
// planner plans again and every task is reconciled (its prices and estimate may change).
#pragma once

#include <functional>
#include <string>

#include "controllers/task/cluster_cache.h"
#include "controllers/task/options.h"
#include "controllers/task/reconcile_loop.h"
#include "operator/kube/api.h"
#include "operator/kube/events.h"

namespace valley::task {

class PolicyReconciler {
 public:
  // in_force_changed: the policy in force was set anew.
  PolicyReconciler(kube::Api& client, kube::EventRecorder& events, ClusterCache& cache, const ControllerOptions& options,
                   std::function<void()> in_force_changed);
  Result reconcile(const std::string& name);
  ReconcileLoop& loop() { return loop_; }
  void enqueue(const std::string& name) { loop_.queue().add(name); }

 private:
  kube::Api& client_;
  kube::EventRecorder& events_;
  ClusterCache& cache_;
  const ControllerOptions& options_;
  std::function<void()> in_force_changed_;
  ReconcileLoop loop_;
};

}  // namespace valley::task
