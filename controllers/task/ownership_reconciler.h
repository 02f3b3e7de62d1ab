// Namespace ownership: which Tenant owns which namespace, resolved from the Tenants and the
// namespaces' labels, kept in the cluster cache (a task event then costs one lookup, not a parse of
// every Tenant) and published in a ConfigMap for the admission policies of deploy/policies
// (applied when it differs from what the cache shows). One key; published only once Tenants and
// namespaces were listed: before, every namespace would look unowned and a policy requiring a
// tenant would refuse every task.
#pragma once

#include <string>

#include "controllers/task/cluster_cache.h"
#include "controllers/task/options.h"
#include "controllers/task/reconcile_loop.h"
#include "operator/kube/api.h"

namespace valley::task {

class OwnershipReconciler {
 public:
  OwnershipReconciler(kube::Api& client, ClusterCache& cache, const ControllerOptions& options);
  Result reconcile();
  ReconcileLoop& loop() { return loop_; }
  void enqueue() { loop_.queue().add(kKey); }
  // The published ConfigMap (by namespace and name) changed or went.
  bool is_published_object(const std::string& ns, const std::string& name) const;

 private:
  static constexpr const char* kKey = "namespaces";
  kube::Api& client_;
  ClusterCache& cache_;
  const ControllerOptions& options_;
  ReconcileLoop loop_;
};

}  // namespace valley::task
