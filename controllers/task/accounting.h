// Accounting: a task's cost from its pods' run times (controllers/cost), and the accounting
// finalizer that keeps a pod until its cost is in its task's status. I/O only to release pods.
// - cost_status(): status.cost brought up to date (the accrual since the last write, the estimate from the
//   planner's decision), written by the TrainingTask reconciler with the rest of the status.
// - A pod's finalizer is released once its cost is written (or nothing prices it), and kept in the
//   task's durable record (api/cost_record.h) first; pods of a task that no longer exists (deleted, or
//   replaced by one of the same name) are deleted should they still run, charged until they stop,
//   the record made final, and then released.
#pragma once

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/api/cost_record.h"
#include "controllers/cost/engine.h"
#include "controllers/task/cluster_cache.h"
#include "controllers/lifecycle/lifecycle.h"
#include "controllers/task/options.h"
#include "operator/kube/api.h"

namespace valley::task {

bool holds_accounting(const api::Pod& pod);

class Accounting {
 public:
  Accounting(kube::Api& client, ClusterCache& cache, const ControllerOptions& options, std::function<size_t()> admitted_tasks);
  // status.cost brought up to date (accrual, estimate); the stored one when nothing prices the task.
  // `ended_now`: pods whose end no one will report (their node is lost), closed at o.now; `force`:
  // the accrual is written now (pods are about to go or be released), not only when due.
  nlohmann::json cost_status(const lifecycle::Observed& o, const std::vector<planner::PodPtr>& pods, bool finished, bool force,
                       const std::set<std::string>& ended_now = {});
  // How often a running task's accrued cost is written: the admitted tasks share the progress rate.
  std::chrono::seconds accrual_interval() const;
  // Removes the accounting finalizer from the pod (a no-op if it is gone); false to retry.
  bool release(const api::Pod& pod);
  // The pods of namespace/task that no live task owns (owner_uid "": none does): released, and those
  // Valley made deleted (a task deleted with --cascade=orphan, owner references edited away): a pod
  // of no task would hold its GPUs outside every quota and bill. False to retry.
  bool release_foreign_pods(const std::string& ns, const std::string& task, const std::string& owner_uid, bool release_them = true);
  // The task's cost as `status` has it (just written), kept in its durable record; false to retry.
  bool keep_record(const nlohmann::json& task, const nlohmann::json& status);
  // namespace/name no longer exists (`last`: its last object, when this process saw it go): each
  // incarnation with pods still held for their cost is charged until they stop and its record made
  // final. False while pods still run (come back), or a record could not be written.
  // `live_uid`: a new task of the same name, which is not settled.
  bool settle_deleted(const std::string& ns, const std::string& name, const kube::ObjectPtr& last, const std::string& live_uid = "");

 private:
  bool delete_detached(const api::Pod& pod, bool task_live);
  // The pods' uses, their GPUs counted by their nodes, and their nodes' rates; true when a pod ended
  // after what `stored`'s ledger charged it to.
  bool priced_uses(const cost::Policy& p, const std::string& task_key, const nlohmann::json& stored, const std::vector<planner::PodPtr>& pods,
                   const std::set<std::string>& ended_now, kube::SystemTime now, std::vector<cost::PodUse>& uses,
                   std::map<std::string, cost::NodeRate>& rates) const;
  nlohmann::json with_estimate(nlohmann::json out, const nlohmann::json& stored, const lifecycle::Observed& o, const cost::Policy& p) const;
  kube::Api& client_;
  ClusterCache& cache_;
  const ControllerOptions& options_;
  std::function<size_t()> admitted_tasks_;
  api::CostRecords records_;
};

}  // namespace valley::task
