// Valley's controllers, wired: one cluster cache (informers, the planning snapshot, the policy in
// force, namespace ownership, GPU health) shared by
// - the planning loop (snapshot -> plan -> AdmissionBoard),
// - one reconciler per kind, each with its own queue, workers and metrics label: TrainingTask,
//   Tenant, PricingPolicy, and the namespace-ownership ConfigMap,
// - the checkpoint reader (each task's latest.json).
// This file only routes informer events to the queues that care and starts and stops the loops;
// every decision is in the pieces.
#pragma once

#include <atomic>
#include <memory>

#include "controllers/task/accounting.h"
#include "controllers/task/admission_board.h"
#include "controllers/task/cluster_cache.h"
#include "controllers/task/options.h"
#include "controllers/task/ownership_reconciler.h"
#include "controllers/task/planning_loop.h"
#include <mutex>
#include <set>
#include <string>

#include "controllers/task/policy_reconciler.h"
#include "controllers/task/task_reconciler.h"
#include "controllers/task/tenant_reconciler.h"
#include "operator/kube/api.h"
#include "operator/kube/events.h"

namespace valley::task {

class Controllers {
 public:
  Controllers(kube::Api& client, kube::EventRecorder& events, ControllerOptions options = {});
  ~Controllers();
  // Starts the cache, the planning loop, the checkpoint reader and the reconcilers; runs until
  // *stop, then shuts everything down.
  void run(const std::atomic<bool>& stop);
  // Caches listed and workers running (for /readyz).
  bool running() const { return running_.load(); }
  // Sets the gauges that describe the cluster as cached (before a scrape).
  void collect_metrics();

 private:
  void route_events();
  void enqueue_all_tasks();
  // A running pod holding GPUs that Valley did not make: an Event on it, once per pod.
  void tell_if_foreign(const planner::PodPtr& pod);

  ControllerOptions options_;
  kube::EventRecorder& events_;
  std::mutex foreign_mu_;
  std::set<std::string> foreign_told_;  // pod uids, forgotten when the pod goes
  ClusterCache cache_;
  AdmissionBoard board_;
  Refusals refusals_;
  std::unique_ptr<PlanningLoop> planning_;
  std::unique_ptr<Accounting> accounting_;
  std::unique_ptr<TaskReconciler> tasks_;
  std::unique_ptr<TenantReconciler> tenants_;
  std::unique_ptr<PolicyReconciler> policies_;
  std::unique_ptr<OwnershipReconciler> ownership_;
  std::atomic<bool> running_{false};
};

}  // namespace valley::task
