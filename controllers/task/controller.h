// The TrainingTask controller: informers over TrainingTasks, all pods and nodes, PricingPolicies, and
// the Services and ConfigMaps Valley made (Secrets are checked by name, never listed); a planning
// loop that turns the cached cluster into a capacity plan (controllers/planner) whenever something
// changed and publishes each task's admission; a workqueue of task keys fed by changes and by new
// admissions; workers that observe a task from the caches (its pods, their nodes, its admission, its
// last checkpoint record), bring its cost up to date (controllers/cost: accrual from pod times, the
// estimate), call the pure lifecycle decide(), and carry the decision out: status first (conditional
// on resourceVersion, so a stale cache can never apply a transition or a charge twice), then
// deletions (forced for pods on lost nodes), then creations (deterministic names: a repeat is a
// harmless AlreadyExists), then Events.
//
// The plan counts the placements it published as taken until the pods show them (as kube-scheduler
// assumes its bindings), so two rounds never hand the same GPUs to two tasks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "controllers/cost/engine.h"
#include "controllers/planner/cluster_snapshot.h"
#include "controllers/planner/planner.h"
#include "controllers/planner/snapshot.h"
#include "controllers/task/checkpoint_watcher.h"
#include "controllers/task/gpu_watcher.h"
#include "controllers/task/lifecycle.h"
#include "operator/kube/client.h"
#include "controllers/tenancy/tenants.h"
#include "operator/kube/events.h"
#include "operator/kube/expectations.h"
#include "operator/kube/informer.h"
#include "operator/kube/request_pool.h"
#include "operator/kube/workqueue.h"

namespace valley::task {

struct ControllerOptions {
  int workers = 8;  // reconciles at once: one is ~99% waiting on the API server (BENCHMARKS.md 1b)
  // Creates in flight at once, across all tasks (a task's launcher and workers go out together).
  int max_concurrent_creates = 32;
  // A status change that only updates counts, the accrued cost or utilization (or a new task's
  // "waiting for the planner") is held this long for a change worth writing at once (longer with many
  // tasks admitted: progress_writes_per_second); 0: never held.
  std::chrono::milliseconds status_coalesce{2000};
  // Under a stream of changes (a burst of binds), plans start at most this often: a plan admits
  // every waiting task that fits, and the ones that follow while pods start mostly confirm it, so
  // their number (and the planning thread's CPU) is bounded by time, not by what a plan costs. A
  // change after a quiet spell is planned 50ms later (Volcano schedules every second, always).
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
  std::string field_manager = "valley-operator";
  planner::Config planner;
  DisruptionConfig disruption;
  planner::NodeFacts node_facts;  // spot labels (unless a PricingPolicy says), disruption taints
  std::chrono::seconds checkpoint_poll{30};  // how often latest.json is read from s3:// stores
  std::string pricing_policy = "default";    // the PricingPolicy that prices tasks
  std::chrono::seconds cost_interval{30};    // how often a running task's accrued cost is written
  // Writes that only bring progress up to date (the periodic accrued cost; counts, cost and
  // utilization held by status_coalesce) share this rate across the admitted tasks: each task's are
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
  // GPU health from DCGM-exporter's metrics in Prometheus (controllers/health); "" = not read.
  std::string prometheus_url;
  gpu::HealthConfig gpu_health;
  std::chrono::seconds gpu_health_interval{15};
  // How often a running task's status.utilization takes in a new reading (and is written).
  std::chrono::seconds utilization_interval{60};
  // The Pod Security level of tasks that set no spec.podSecurity.level.
  api::PodSecurityLevel pod_security = api::PodSecurityLevel::Baseline;
  // After a refusal that retrying cannot heal (Pod Security, an invalid pod), the task is tried
  // again when its spec or its namespace's labels change, or after this long.
  std::chrono::seconds refused_retry{600};
};

class TaskController {
 public:
  TaskController(kube::Client& client, kube::EventRecorder& events, ControllerOptions options = {});
  ~TaskController();
  // Starts informers, the planning loop and workers, runs until *stop, then shuts everything down.
  void run(const std::atomic<bool>& stop);
  // One reconcile of one task key ("ns/name"); true when done, false to retry with backoff.
  bool reconcile(const std::string& key);
  // Caches listed and workers running (for /readyz).
  bool running() const { return running_.load(); }
  // Sets the gauges that describe the cluster as cached (tasks by phase, workers, GPUs, cost).
  void collect_metrics();

 private:
  // The task an owned object (pod, Service, ConfigMap) belongs to, by its labels, is reconciled.
  void enqueue_owner(const std::string& ns, const std::string& name, const std::string& task_label);
  void mark_dirty();
  void planner_inputs(planner::Task& t, const api::TaskSpec& spec, const nlohmann::json& status) const;
  void planning_loop(const std::atomic<bool>& stop);
  void plan_once();
  bool reconcile_policy(const std::string& name);
  // The Tenants (valid ones), which namespace belongs to which, and each one's conflicts.
  struct Tenancy {
    std::vector<tenancy::TenantObject> tenants;
    tenancy::Ownership ownership;
    std::map<std::string, std::string> invalid;  // tenant -> its spec's errors
  };
  Tenancy tenancy_now() const;
  bool reconcile_tenant(const std::string& name);
  bool publish_ownership();
  void collect_tenant_metrics();
  void enqueue_tenant_of(const nlohmann::json& task);
  std::shared_ptr<const cost::Policy> policy() const;
  planner::NodeFacts node_facts() const;
  // A node as the planner and reconciler see it: its object (conditions, taints) plus the GPU
  // faults Prometheus reports for it.
  planner::Node node_of(const nlohmann::json& node, const planner::NodeFacts& facts) const;
  planner::Node with_gpu_faults(planner::Node n) const;
  std::string gpu_fault_of(const planner::Node& n) const;  // what Prometheus reports for it, "" if healthy or known
  static planner::Node with_gpu_fault(planner::Node n, const std::string& fault);
  // status.cost brought up to date (accrual, estimate); `cost` is the stored one.
  // `ended_now`: pods whose end no one will report (their node is lost), closed at o.now.
  nlohmann::json price(const Observed& o, const std::vector<planner::PodPtr>& pods, bool finished, bool force,
                       const std::set<std::string>& ended_now = {});
  // Removes render::kAccountingFinalizer from the pod (a no-op if it is gone); false to retry.
  bool release_accounting(const api::Pod& pod);
  // Releases the pods of namespace/task that no live task owns (the task was deleted, or replaced
  // by a new one of the same name): their cost has no status to go to.
  bool release_foreign_pods(const std::string& ns, const std::string& task, const std::string& owner_uid);

  kube::Client& client_;
  kube::EventRecorder& events_;
  ControllerOptions options_;
  kube::WorkQueue queue_;
  std::unique_ptr<kube::RequestPool> requests_;
  // Creations the informers have not shown yet. They lapse after 30 s rather than client-go's 5
  // minutes: a creation whose event a relist swallowed (created and deleted while the watch was
  // down) would otherwise keep a disrupted task from re-creating that pod, on idle GPUs, that long.
  kube::CreationExpectations expectations_{std::chrono::seconds(30)};
  kube::WrittenObjects written_;  // task statuses written, until the informer shows them
  // Expects the object just created (`made`: the API server's answer), unless its informer shows it already.
  void expect(const std::string& id, const kube::Resource& r, const std::string& ns, const nlohmann::json& made);
  // The UID of a pod or Service the informers hold now ("" if none).
  std::string cached_uid(const kube::Resource& r, const std::string& ns, const std::string& name) const;
  std::mutex coalesce_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> coalescing_;  // task -> first held change
  // How much longer the task's held status change may wait (0: write it now).
  std::chrono::milliseconds coalesce_wait(const std::string& key);
  std::chrono::seconds accrual_interval() const {
    return cost::accrual_interval(options_.cost_interval, admitted_tasks_.load(), options_.progress_writes_per_second);
  }
  // How long a progress-only status change may be held: status_coalesce, or the tasks' share of the
  // progress write rate when that is longer (at 1,000 tasks starting at once, most reach Running
  // before their counts would be written: one write from admission to Running instead of two).
  std::chrono::milliseconds coalesce_window() const {
    return status_hold(options_.status_coalesce, admitted_tasks_.load(), options_.progress_writes_per_second);
  }
  std::atomic<bool> running_{false};
  std::atomic<size_t> admitted_tasks_{0};  // in the last plan: the tasks whose cost accrues
  bool ssh_secret_exists(const std::string& ns, const std::string& task, const std::string& uid);
  void secret_created(const std::string& ns, const std::string& task, const std::string& uid);

  std::unique_ptr<kube::Informer> tasks_, nodes_, services_, configs_, pricing_, tenants_, namespaces_;
  // Pods typed (api::Pod): every pod of the cluster is cached, and a typed one is a tenth of its JSON.
  std::unique_ptr<kube::BasicInformer<api::Pod>> pods_;
  std::mutex secrets_mu_;
  std::set<std::string> known_secrets_;  // ns/task@uid whose SSH key Secret exists
  mutable std::mutex policy_mu_;
  std::shared_ptr<const cost::Policy> policy_;  // nullptr: none, or invalid (see its status)
  CheckpointWatcher checkpoints_;
  GpuWatcher gpu_;
  std::map<std::string, std::string> checkpoint_errors_;  // task -> last store error reported

  std::mutex snapshot_mu_;
  planner::ClusterSnapshot snapshot_;  // the planner's inputs, kept from informer events; under snapshot_mu_
  std::mutex plan_mu_;
  std::condition_variable plan_cv_;
  bool dirty_ = true;
  std::map<std::string, Admission> admissions_;  // published, by task key
  std::map<std::string, std::map<std::string, kube::SystemTime>> avoid_;  // task -> node -> until
  // Each node as the last plan saw it: the snapshot's, with its GPU fault and priced, made anew
  // only when one of those changed (at 1,000 nodes, copying and pricing every node each plan was a
  // third of the planning thread). The planning thread's only.
  struct PlanNode {
    std::shared_ptr<const planner::Node> source;  // the snapshot's
    std::shared_ptr<const cost::Policy> pricing;
    std::string fault;
    planner::Node node;
    cost::NodeRate rate;  // under `pricing`, for a GPU node
    uint64_t seen = 0;    // the last plan that saw it
  };
  std::map<std::string, PlanNode> plan_nodes_;
  // Each task as the last plan saw it: what the plan derives from its snapshot entry alone (whether
  // it holds capacity, its planner input with planner_inputs applied), made anew only when the
  // entry (the task or one of its pods) or the pricing policy changed; its tenant and priority, the
  // nodes it avoids and the admission published for it are laid over that at each plan. At 1,000
  // running tasks, re-reading every status and copying every planner input each plan was most of
  // the planning thread's allocations. The planning thread's only.
  struct PlanTask {
    std::shared_ptr<const planner::SnapshotView::TaskEntry> entry;
    std::shared_ptr<const cost::Policy> pricing;
    bool holds = false;         // not ended, suspended, over its budget or suspended while idle
    std::string epoch;          // status.epoch, as its pods' labels say it
    planner::Task task;         // the plan's input
    bool fresh = true;          // made anew in this plan
    bool overlay_stale = true;  // the published admission changed since it was laid over `task`
    uint64_t seen = 0;          // the last plan that saw the task
    uint64_t planned = 0;       // the last plan it was part of (it holds capacity)
    int published_priority = 0; // task.priority when its admission was last made
  };
  std::unordered_map<std::string, PlanTask> plan_tasks_;
  // A task's plan input from its snapshot entry alone (PlanTask: holds, epoch, task).
  void make_plan_task(PlanTask& pt, const std::shared_ptr<const planner::SnapshotView::TaskEntry>& entry,
                      const std::shared_ptr<const cost::Policy>& pricing) const;
  // What the task runs as observed, or as published when an admission was published for it (taken
  // until the pods show it).
  static void lay_published(planner::Task& t, const planner::Task& observed, const std::map<std::string, Admission>& published);
  // ControllerOptions::verify_plan_inputs.
  void verify_plan_inputs(const std::vector<PlanTask*>& planned, const std::map<std::string, Admission>& published,
                          const std::vector<const planner::Node*>& nodes, const planner::SnapshotView& view, const planner::Config& config,
                          kube::SystemTime now, const std::vector<planner::Decision>& kept);
  uint64_t plans_ = 0;
  // The distinct rates of the nodes (NVIDIA ones; NVIDIA and AMD), each once, in the order of the
  // first node that has it: where a task may run, for its estimate. Recomputed when a node changes.
  std::vector<cost::NodeRate> nvidia_rates_, any_rates_;
  mutable std::mutex ownership_mu_;
  std::map<std::string, std::string> owner_of_namespace_;  // as of the last @ownership reconcile
  // The last refusal of each task's creates (CreateRefusal), until the task or its namespace changes.
  struct Refusal {
    std::string uid;
    int64_t generation = 0;
    std::string namespace_labels;  // as they were: a relabelled namespace may admit the pods now
    kube::SystemTime at;
    CreateRefusal what;
  };
  std::map<std::string, Refusal> refusals_;  // by task key; under plan_mu_
  // The refusal that still applies to this task now, if any (drops the ones that no longer do).
  std::optional<CreateRefusal> refusal_of(const std::string& key, const nlohmann::json& task);
  std::string namespace_labels(const std::string& ns) const;
  bool namespace_going(const std::string& ns) const;  // being deleted, as the informer shows it
  std::set<std::string> priority_capped_;  // uid@generation told (an Event) that its priority was capped; planning loop only
};

}  // namespace valley::task
