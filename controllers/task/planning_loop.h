// The planning loop: one thread that turns the cluster cache's snapshot into a capacity plan
// (controllers/planner) whenever something that can change a plan changed (replan()), and at least
// every two seconds (time alone matters: aging, resize intervals, unschedulable timeouts), and
// publishes each task's admission on the AdmissionBoard; the tasks whose admission changed are
// handed to on_changed (the TrainingTask reconciler's queue).
//
// The plan counts the placements it published as taken until the pods show them (as kube-scheduler
// assumes its bindings), so two rounds never hand the same GPUs to two tasks. Plans start at most
// every plan_interval and take at most a tenth of the time: under a stream of changes (a burst of
// binds) the planning thread's CPU is bounded by time rather than by what a plan costs.
//
// Each node and each task is turned into planner input only when it (its object, one of its pods,
// its GPU fault or the pricing policy) changed; a task's tenant, priority, the nodes it avoids and
// its published admission are laid over that at every plan.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "controllers/cost/engine.h"
#include "controllers/planner/cluster_snapshot.h"
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
  // Each node as the last plan saw it: the snapshot's, with its GPU fault and priced, made anew
  // only when one of those changed.
  struct PlanNode {
    std::shared_ptr<const planner::Node> source;  // the snapshot's
    std::shared_ptr<const cost::Policy> pricing;
    std::string fault;
    planner::Node node;
    cost::NodeRate rate;  // under `pricing`, for a GPU node
    uint64_t seen = 0;    // the last plan that saw it
  };
  // Each task as the last plan saw it: what the plan derives from its snapshot entry alone, made
  // anew only when the entry (the task or one of its pods) or the pricing policy changed.
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
  // One plan's inputs.
  struct Round {
    uint64_t number = 0;
    kube::SystemTime now;
    std::shared_ptr<const cost::Policy> pricing;
    Tenancy tenancy;
    std::map<std::string, const api::TenantSpec*> tenant_spec;  // of tenancy's tenants, by name
    std::vector<const planner::Node*> nodes;
    std::vector<const planner::Task*> tasks;
    std::vector<PlanTask*> planned;  // beside tasks
    bool rates_changed = false;
  };

  // Brings plan_nodes_ up to the view's nodes; fills r.nodes and r.rates_changed.
  void take_nodes(const planner::SnapshotView& view, Round& r);
  // Brings plan_tasks_ up to the view's tasks; fills r.tasks and r.planned with those that hold capacity.
  void take_tasks(const planner::SnapshotView& view, Round& r);
  // The task's tenant and priority under its namespace's Tenant (an Event when the priority is capped).
  void lay_tenancy(planner::Task& t, const planner::SnapshotView::TaskEntry& entry, const Round& r);
  // The nodes the task avoids: its own, and those kube-scheduler would not bind its workers to.
  void lay_avoided(planner::Task& t, const planner::SnapshotView::TaskEntry& entry, kube::SystemTime now);
  planner::Config config_for(const Round& r) const;
  void refresh_rates(const Round& r);
  // Publishes what changed; hands the tasks whose decision changed to on_changed.
  void publish(const Round& r, const std::vector<planner::Decision>& decisions, const planner::Config& config);
  // A task's plan input from its snapshot entry alone (PlanTask: holds, epoch, task).
  void make_plan_task(PlanTask& pt, const std::shared_ptr<const planner::SnapshotView::TaskEntry>& entry,
                      const std::shared_ptr<const cost::Policy>& pricing) const;
  // ControllerOptions::verify_plan_inputs: each plan is made again from inputs rebuilt from the
  // snapshot; any decision that differs is logged and counted.
  void verify_plan_inputs(const Round& r, const planner::SnapshotView& view, const planner::Config& config,
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
  // The planning thread's only, below.
  uint64_t plans_ = 0;
  std::map<std::string, PlanNode> plan_nodes_;
  std::unordered_map<std::string, PlanTask> plan_tasks_;
  std::map<std::string, std::map<std::string, kube::SystemTime>> avoid_;  // task -> node -> until
  std::set<std::string> priority_capped_;  // uid@generation told (an Event) that its priority was capped
  // The distinct rates of the nodes (NVIDIA ones; NVIDIA and AMD), each once, in the order of the
  // first node that has it: where a task may run, for its estimate. Recomputed when a node changes.
  std::vector<cost::NodeRate> nvidia_rates_, any_rates_;
};

// What the task runs as observed, or as published when an admission was published for it (taken
// until the pods show it).
void overlay_admission(planner::Task& t, const planner::Task& observed, const std::map<std::string, lifecycle::Admission>& published);

}  // namespace valley::task
