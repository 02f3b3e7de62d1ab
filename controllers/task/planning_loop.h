// The planning loop: one thread that turns the cluster cache's snapshot into a capacity plan
// (controllers/planner) whenever something that can change a plan changed (replan()), and at least
// every two seconds (time alone matters: aging, resize intervals, unschedulable timeouts), and
// publishes each task's admission on the AdmissionBoard; the tasks whose admission changed are
// handed to on_changed (the TrainingTask reconciler's queue). Its inputs come through
// controllers/inputs (the path the simulator replays traces through too).
//
// The plan counts the placements it published as taken until the pods show them (as kube-scheduler
// assumes its bindings), so two rounds never hand the same GPUs to two tasks. Plans start at most
// every plan_interval and take at most a tenth of the time: under a stream of changes (a burst of
// binds) the planning thread's CPU is bounded by time rather than by what a plan costs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <mutex>
#include <string>
#include <vector>

#include "controllers/inputs/nodepools.h"
#include "controllers/inputs/plan_inputs.h"
#include "controllers/planner/planner.h"
#include "controllers/task/admission_board.h"
#include "controllers/task/cluster_cache.h"
#include "controllers/task/options.h"
#include "operator/kube/events.h"

namespace valley::task {

class PlanningLoop {
 public:
  using OnChanged = std::function<void(const std::string& key)>;
  PlanningLoop(ClusterCache& cache, AdmissionBoard& board, Refusals& refusals, kube::EventRecorder& events, const ControllerOptions& options,
               OnChanged on_changed);
  // Something that can change a plan changed: plan soon.
  void replan();
  void run(const std::atomic<bool>& stop);  // until *stop; then call wake() to end the wait at once
  void wake() { cv_.notify_all(); }
  // One plan now (the loop's body; tests call it directly).
  void plan_once();

 private:
  inputs::ClusterFacts facts();
  // With --instance-types: the nodes NodePools may still buy join the view (by name), and their
  // pools' budgets the plan's config; a pool Valley cannot buy from is logged when that changes.
  void add_provisionable(planner::SnapshotView& view);
  // The metrics of what NodePools bought: nodes and GPUs up, idle and sold since the last plan.
  void count_pool_use(const std::vector<const planner::Node*>& existing);
  // Publishes what changed; hands the tasks whose decision changed to on_changed.
  void publish(const inputs::PlanInputs::Round& r, const std::vector<planner::Decision>& decisions);
  // ControllerOptions::verify_plan_inputs: each plan is made again from inputs rebuilt from the
  // snapshot; any decision that differs is logged and counted.
  void verify_plan_inputs(const inputs::PlanInputs::Round& r, const planner::SnapshotView& view,
                          const std::vector<planner::Decision>& kept);

  ClusterCache& cache_;
  AdmissionBoard& board_;
  Refusals& refusals_;
  kube::EventRecorder& events_;
  const ControllerOptions& options_;
  OnChanged on_changed_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = true;
  inputs::PlanInputs inputs_;  // the planning thread's only
  inputs::ProvisionableNodes provisionable_;
  std::map<std::string, std::string> unusable_pools_;
  std::optional<std::chrono::steady_clock::time_point> last_pool_count_;
  std::set<std::string> counted_pools_;  // NodePool -> why Valley buys nothing there, as last logged
};

}  // namespace valley::task
