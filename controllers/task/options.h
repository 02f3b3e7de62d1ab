// The options of Valley's controllers (cmd/valley-operator turns flags into these): the cluster
// cache, the planning loop, the TrainingTask, Tenant and PricingPolicy reconcilers, accounting.
#pragma once

#include <chrono>
#include <string>

#include "controllers/api/spec.h"
#include "controllers/gpu/health.h"
#include "controllers/planner/planner.h"
#include "controllers/api/nodepool.h"
#include "controllers/inputs/nodepools.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/lifecycle/lifecycle.h"

namespace valley::task {

struct ControllerOptions {
  int workers = 8;  // TrainingTask reconciles at once (each mostly waits on the API server)
  // Creates in flight at once, across all tasks (a task's launcher and workers go out together).
  int max_concurrent_creates = 32;
  // A status change that only updates counts, the accrued cost or utilization (or a new task's
  // "waiting for the planner") is held this long for a change worth writing at once (longer with many
  // tasks admitted: progress_writes_per_second); 0: never held.
  std::chrono::milliseconds status_hold_window{2000};
  // Under a stream of changes (a burst of binds), plans start at most this often: a plan admits
  // every waiting task that fits, and the ones that follow while pods start mostly confirm it, so
  // their number (and the planning thread's CPU) is bounded by time, not by what a plan costs. A
  // change after a quiet spell is planned 50ms later.
  std::chrono::milliseconds plan_interval{1000};
  // Tests: each plan also rebuilds every task's plan input from its snapshot entry, plans again and
  // logs ("plan inputs differ from a rebuild") and counts any decision that differs.
  bool verify_plan_inputs = false;
  // Tests only: TrainingTask watch events reach the cache this much later than pods' (the window in
  // which a reconcile sees a task from before its own status write).
  std::chrono::milliseconds task_watch_delay{0};
  // A worker pinned to a node that kube-scheduler still cannot bind it to after this long (CPU,
  // memory or a constraint the planner does not model) makes the planner avoid that node for the
  // task for `avoid_for`, and re-plan.
  std::chrono::seconds unschedulable_timeout{60};
  std::chrono::seconds avoid_for{600};
  // Capacity that can be bought: the instance types Karpenter NodePools buy (--instance-types).
  // Empty: Valley plans only on nodes that exist and does not watch NodePools.
  api::Catalogue instance_types;
  inputs::ProvisioningOptions provisioning;
  std::string field_manager = "valley-operator";
  planner::Config planner;
  lifecycle::DisruptionConfig disruption;
  planner::NodeFacts node_facts;  // spot labels (unless a PricingPolicy says), disruption taints
  std::chrono::seconds checkpoint_poll{30};  // how often latest.json is read from s3:// stores
  // Whether tasks get the outputs finalizer, and how long a deleted one is held for its outputs
  // and report (lifecycle/transfers.h).
  bool outputs_finalizer = false;
  std::chrono::seconds outputs_on_delete{600};
  std::string pricing_policy = "default";    // the PricingPolicy that prices tasks
  // The one namespace whose TrainingTasks this operator runs ("" = every namespace), as the MPI
  // Operator's --namespace: pods of every namespace still count as capacity taken, and another
  // instance's pods are never touched.
  std::string watch_namespace;
  bool in_scope(const std::string& ns) const { return watch_namespace.empty() || ns == watch_namespace; }
  // A label selector of the nodes this operator plans on ("" = every node), as KAI Scheduler's node
  // pools: the others are not in its cache at all, so it neither places on them nor counts them.
  std::string node_selector;
  std::vector<kube::LabelRequirement> node_requirements;  // the same, parsed (launchers are kept to them)
  // Node labels (key=value) of the launcher pool: where MPI launchers must run (render::LauncherPlacement).
  std::vector<std::pair<std::string, std::string>> launcher_pool;
  std::chrono::seconds cost_interval{30};    // how often a running task's accrued cost is written
  // Writes that only bring progress up to date (the periodic accrued cost; counts, cost and
  // utilization held by status_hold_window) share this rate across the admitted tasks: each task's are
  // spaced by admitted / rate seconds at least (cost::accrual_interval); 0: no limit.
  double progress_writes_per_second = 5;
  // A running pod is charged up to this long ago (its end may reach us late: cost::accrue).
  std::chrono::seconds cost_settle{15};
  // Tenants: how fast past usage stops counting against a tenant's fair share, and how often a
  // Tenant's status (usage, share, spend) is brought up to date at least.
  std::chrono::seconds usage_half_life{7 * 24 * 3600};
  std::chrono::seconds tenant_interval{10};
  // Where namespace ownership is published for the admission policies (deploy/policies/): a
  // ConfigMap; an empty name publishes nothing.
  std::string ownership_namespace = "valley-system";
  std::string ownership_name = "valley-tenancy";
  // GPU health from DCGM-exporter's metrics in Prometheus (controllers/gpu/health.h); "" = not read.
  std::string prometheus_url;
  gpu::HealthConfig gpu_health;
  std::chrono::seconds gpu_health_interval{15};
  // How often a running task's status.utilization takes in a new reading (and is written).
  std::chrono::seconds utilization_interval{60};
  // The Pod Security level of tasks that set no spec.podSecurity.level.
  api::PodSecurityLevel pod_security = api::PodSecurityLevel::Baseline;
  // An MPI task's pods get a NetworkPolicy admitting only the task's own pods (and the ports its
  // templates declare): render/network_policy.h. Made before its pods; a refusal holds them back.
  bool task_network_policies = true;
  std::vector<std::string> task_egress_except;  // CIDRs a task's pods may not reach (empty: egress open)
  // The image whose valley-io copies data in and outputs out inside task pods (the operator's own).
  std::string io_image;
  // A StorageClass that binds where the pod goes (WaitForFirstConsumer): each node's copy of a
  // task's data set is kept in a claim of it for the task's later pods there; "": a copy per pod.
  std::string data_cache_class;
  // After a refusal that retrying cannot heal (Pod Security, an invalid pod), the task is tried
  // again when its spec or its namespace's labels change, or after this long.
  std::chrono::seconds refused_retry{600};
};

}  // namespace valley::task
