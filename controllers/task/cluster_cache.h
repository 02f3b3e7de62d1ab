// The cluster as Valley's loops read it, shared by all of them: informers over TrainingTasks, all
// pods and nodes (cached lean: cache_fields.h), the Services Valley made, the namespace-ownership
// ConfigMap, PricingPolicies, Tenants and namespaces; the planning snapshot kept from their events;
// DRA ResourceSlices and ResourceClaims; the PricingPolicy in force; namespace ownership as last resolved; GPU faults and utilization from
// Prometheus (GpuWatcher). The loops register their handlers before start(); everything else is a
// read. Nodes are parsed once, in the snapshot (node() and nodes() hand out those), with the GPU
// faults Prometheus reports laid over them.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controllers/api/dra.h"
#include "controllers/api/pod.h"
#include "controllers/cost/policy.h"
#include "controllers/cost/duration_spread.h"
#include "controllers/inputs/plan_inputs.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/task/gpu_watcher.h"
#include "controllers/task/options.h"
#include "controllers/tenancy/tenants.h"
#include "operator/kube/api.h"
#include "operator/kube/informer.h"

namespace valley::task {

using Tenancy = inputs::Tenancy;

class ClusterCache {
 public:
  // on_gpu_change: GPU faults came or went (called from the GPU watcher's thread).
  ClusterCache(kube::Api& client, const ControllerOptions& options);
  ~ClusterCache();

  // Starts the informers and waits until the required ones listed (TrainingTasks, pods, nodes,
  // Services, the ConfigMap, PricingPolicies) or *stop; Tenants and namespaces are waited for a
  // few seconds only (their CRD may be missing, or namespaces unreadable). Then the GPU watcher.
  void start(const std::atomic<bool>& stop);
  void stop();
  void on_gpu_change(std::function<void()> f) { gpu_change_ = std::move(f); }

  // The informers, for handlers (before start()) and their stores.
  kube::Informer& tasks() { return *tasks_; }
  kube::BasicInformer<api::Pod>& pods() { return *pods_; }
  kube::Informer& nodes_informer() { return *nodes_; }
  kube::Informer& services() { return *services_; }
  kube::Informer& configs() { return *configs_; }
  kube::Informer& pricing() { return *pricing_; }
  kube::Informer& tenants() { return *tenants_; }
  kube::Informer& namespaces() { return *namespaces_; }
  kube::Informer& slices() { return *slices_; }
  // NodePools, when the operator plans on capacity that can be bought (ControllerOptions::instance_types); else null.
  kube::Informer* node_pools() { return node_pools_.get(); }
  kube::BasicInformer<api::DraClaim>& claims() { return *claims_; }
  const kube::Informer& tasks() const { return *tasks_; }

  kube::ObjectPtr task(const std::string& key) const;
  std::vector<kube::ObjectPtr> task_list() const;
  // The pods of namespace `ns` whose owner references name `uid` (owners are namespaced: a pod
  // elsewhere that names the uid is no task's).
  std::vector<planner::PodPtr> pods_owned_by(const std::string& ns, const std::string& uid) const;
  // Valley's pods whose task label names ns/task (whoever owns them).
  std::vector<planner::PodPtr> pods_of_task(const std::string& ns, const std::string& task) const;
  // The UID of a pod or Service the informers hold now ("" if none).
  std::string cached_uid(const kube::Resource& r, const std::string& ns, const std::string& name) const;

  // A node as the planner and the reconcilers see it: parsed with the node facts in force, its GPU
  // fault from Prometheus laid over; nullopt when not cached.
  std::shared_ptr<const planner::Node> node(const std::string& name);
  // The node, or when it is gone, the node as this process last saw it (kept a day, at most the
  // 10,000 most recently gone): a pod that ran on a node deleted since is still priced by its node.
  std::shared_ptr<const planner::Node> node_as_last_seen(const std::string& name);
  std::vector<planner::Node> nodes();
  // The NodePools the cache holds, read (api::read_node_pool); one that cannot be read is logged
  // and left out. Empty without --instance-types.
  std::vector<api::NodePool> node_pool_list() const;
  // The planning snapshot's view (node facts brought up to date first).
  planner::SnapshotView snapshot_view();
  // What Prometheus reports for the node ("" if healthy, or if its object already says so).
  std::string gpu_fault_of(const planner::Node& n) const;
  GpuWatcher& gpu() { return gpu_; }
  const GpuWatcher& gpu() const { return gpu_; }

  bool namespace_going(const std::string& ns) const;  // being deleted, as the informer shows it
  std::string namespace_labels(const std::string& ns) const;  // as JSON text ("" when not cached)

  Tenancy tenancy() const;
  // Namespace ownership as the ownership reconciler last resolved it.
  void set_ownership(std::map<std::string, std::string> owner_of_namespace);
  std::optional<std::string> owner_of_namespace(const std::string& ns) const;

  std::shared_ptr<const cost::Policy> policy() const;  // nullptr: none, or invalid
  void set_policy(std::shared_ptr<const cost::Policy> p);
  // How nodes are read: the operator's flags, except that a PricingPolicy in use decides which
  // labels mean spot, so that admission (reduceCost on spot) and pricing never disagree.
  planner::NodeFacts node_facts() const;
  // How far stated durations are off in the namespace, from its finished tasks in the cache
  // (inputs::duration_ratio_of), recomputed at most once a minute.
  cost::DurationSpread duration_spread(const std::string& ns) const;

 private:
  kube::Api& client_;
  const ControllerOptions& options_;
  std::unique_ptr<kube::Informer> tasks_, nodes_, services_, configs_, pricing_, tenants_, namespaces_;
  std::unique_ptr<kube::Informer> slices_;  // DRA (resource.k8s.io/v1)
  std::unique_ptr<kube::Informer> node_pools_;  // karpenter.sh/v1, with --instance-types
  std::unique_ptr<kube::BasicInformer<api::DraClaim>> claims_;
  // Pods typed (api::Pod): every pod of the cluster is cached, and a typed one is a tenth of its JSON.
  std::unique_ptr<kube::BasicInformer<api::Pod>> pods_;
  std::mutex snapshot_mu_;
  planner::ClusterSnapshot snapshot_;  // kept from informer events; under snapshot_mu_
  // The policy the snapshot's node facts were made under; under snapshot_mu_.
  void bring_facts_up_to_date();
  void remember_departed(const std::string& name);  // under snapshot_mu_
  struct DepartedNode {
    std::chrono::steady_clock::time_point gone;
    std::shared_ptr<const planner::Node> node;
  };
  std::map<std::string, DepartedNode> departed_nodes_;  // under snapshot_mu_
  std::shared_ptr<const cost::Policy> facts_policy_;
  bool facts_known_ = false;
  mutable std::mutex policy_mu_;
  std::shared_ptr<const cost::Policy> policy_;
  struct LearnedSpread {
    std::chrono::steady_clock::time_point at;
    cost::DurationSpread spread;
  };
  mutable std::mutex spread_mu_;
  mutable std::map<std::string, LearnedSpread> spreads_;  // by namespace; under spread_mu_
  mutable std::mutex ownership_mu_;
  std::map<std::string, std::string> owner_of_namespace_;
  std::function<void()> gpu_change_;
  GpuWatcher gpu_;
  std::unique_ptr<std::thread> gpu_thread_;
  std::atomic<bool> gpu_stop_{false};
};

}  // namespace valley::task
