// The metric families of Valley's controllers (registered once, process-wide), and the collector
// that sets the gauges describing the cluster as cached (tasks by phase, workers, GPUs held, cost,
// tenants, informers, queues) before each scrape.
#pragma once

#include <string>
#include <vector>

#include "operator/metrics/registry.h"

namespace valley::kube {
class WorkQueue;
}

namespace valley::task {

class ClusterCache;

struct ControllerMetrics {
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
  metrics::Family& foreign_gpu_pods = metrics::registry().gauge(
      "valley_foreign_gpu_pods",
      "Running pods holding GPUs that Valley did not make, per namespace: outside its quotas, plans' priorities and bills.", {"namespace"});
  metrics::Family& gpus = metrics::registry().gauge("valley_gpus_allocated", "GPUs (fractions summed) held by Valley's running pods.",
                                                   {"vendor", "capacity_class"});
  metrics::Family& gpu_capacity = metrics::registry().gauge(
      "valley_gpus_capacity",
      "GPUs the schedulable nodes offer (fractions summed), by vendor, capacity class and how they are handed out (whole, dra, mig, mps, "
      "time-sliced).",
      {"vendor", "capacity_class", "kind"});
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
  // What the platform pays for on an autoscaled cluster: the nodes NodePools bought, by pool.
  metrics::Family& pool_nodes = metrics::registry().gauge(
      "valley_pool_nodes", "Nodes of a Karpenter NodePool that are up (state bought) and of those, the ones no pod holds a GPU of (idle).",
      {"pool", "state"});
  metrics::Family& pool_node_seconds = metrics::registry().counter(
      "valley_pool_node_seconds_total", "Node-seconds of a NodePool's nodes: bought (up), and idle (up, no pod holding a GPU).", {"pool", "kind"});
  metrics::Family& pool_gpu_seconds = metrics::registry().counter(
      "valley_pool_gpu_seconds_total", "GPU-seconds of a NodePool's nodes: bought (offered while up), and sold (held by pods).", {"pool", "kind"});
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

ControllerMetrics& controller_metrics();

// A queue whose depth is reported under its controller's label.
struct LabelledQueue {
  std::string label;
  const kube::WorkQueue* queue;
};

// Sets the gauges from the cache (on the HTTP server's thread, before a scrape).
void collect_metrics(ClusterCache& cache, const std::vector<LabelledQueue>& queues);

}  // namespace valley::task
