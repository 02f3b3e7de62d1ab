// The planner's inputs from what the cluster shows: the ONE path from TrainingTasks, pods, nodes,
// Tenants and the PricingPolicy to planner::plan()'s arguments, used by the operator's planning loop
// and by the trace-replay simulator (bench/sim), so the simulator decides with what the operator
// would know. Pure: what only the operator's cluster knows (GPU faults from Prometheus, creations
// the API server refused, namespaces being deleted) comes in through ClusterFacts.
//
// Incremental: each node and each task is turned into planner input only when it (its object, one
// of its pods, its GPU fault) or the pricing policy changed since the last round; a task's tenant,
// priority, the nodes it avoids, its kind's scaling prior (planner::ScalingPriors: what tasks of the
// same worker image measured, those that ended included) and its published admission are laid over
// that every round.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "controllers/api/pricing_policy.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/planner/planner.h"
#include "controllers/render/render.h"
#include "controllers/tenancy/tenants.h"

namespace valley::inputs {

using TaskEntry = planner::SnapshotView::TaskEntry;

// The Tenants (valid ones), which namespace belongs to which, and each one's conflicts.
struct Tenancy {
  std::vector<tenancy::TenantObject> tenants;
  tenancy::Ownership ownership;
  std::map<std::string, std::string> invalid;  // tenant -> its spec's errors
};

// What the cluster adds beyond its objects (each may be left empty: nothing of the kind).
struct ClusterFacts {
  std::function<std::string(const planner::Node&)> gpu_fault;           // "" when healthy
  std::function<bool(const std::string& ns)> namespace_going;            // being deleted
  std::function<bool(const TaskEntry&)> creation_refused;                // blocked until it changes
  // The admission last published for the task (its placement), nullptr when none: it counts as
  // taken until the pods show it.
  std::function<const std::vector<render::WorkerPlacement>*(const std::string& key)> published;
  std::function<void(const TaskEntry&, int asked, int planned, const std::string& tenant)> priority_capped;
  std::function<void()> avoided;  // a node was added to a task's avoided ones (plan again soon)
};

struct InputOptions {
  planner::Config base;                         // the operator's flags
  std::chrono::seconds node_not_ready_grace{30};
  // A worker its node will not bind (counted once no pod on its way out holds the node): avoid the
  // node...
  std::chrono::seconds unschedulable_timeout{60};
  std::chrono::seconds avoid_for{600};             // ... this long
  std::chrono::seconds usage_half_life{7 * 24 * 3600};
};

class PlanInputs {
 public:
  // One task as the last round saw it.
  struct TaskState {
    std::shared_ptr<const TaskEntry> entry;
    std::shared_ptr<const api::Policy> pricing;
    bool holds = false;         // not ended, suspended, over its budget or suspended while idle
    std::optional<kube::SystemTime> start_backoff_until;  // its pods could not start: not planned before then
    bool waits_for_data = false;  // spec.data not yet confirmed readable (lifecycle/transfers.h)
    std::string epoch;          // status.epoch, as its pods' labels say it
    std::string kind;           // its worker image: what it measured teaches tasks of the same image
    planner::Task task;         // the plan's input
    bool fresh = true;          // made anew in this round
    bool overlay_stale = true;  // the published admission changed since it was laid over `task`
    uint64_t seen = 0, planned = 0;
    int published_priority = 0;  // task.priority when its admission was last published (the caller's)
  };
  // One round's inputs: valid until the next round.
  struct Round {
    uint64_t number = 0;
    kube::SystemTime now;
    std::shared_ptr<const api::Policy> pricing;
    std::vector<const planner::Node*> nodes;
    std::vector<const planner::Task*> tasks;
    std::vector<TaskState*> planned;  // beside tasks
    planner::HeldByPlanned held;
    planner::Config config;
    bool rates_changed = false;  // a node came, went or changed price
    std::optional<std::set<std::string>> vacated;  // nodes_being_vacated, once a refusal asks
  };

  explicit PlanInputs(InputOptions options) : options_(std::move(options)) {}
  const Round& take(const planner::SnapshotView& view, std::shared_ptr<const api::Policy> pricing, const Tenancy& tenancy,
                    kube::SystemTime now, const ClusterFacts& facts);
  // The task's input rebuilt from its entry alone (what an incremental round must equal).
  static TaskState task_state(const std::shared_ptr<const TaskEntry>& entry, const std::shared_ptr<const api::Policy>& pricing);
  // Of the last round: a node's rate (nullptr for a node without GPUs), its vendor.
  const cost::NodeRate* rate_of(const std::string& node) const;
  std::string vendor_of(const std::string& node) const;
  // The distinct rates of the nodes of these vendors, each once (cached for the round's vendor sets).
  const std::vector<cost::NodeRate>& rates_for(const std::vector<std::string>& vendors);
  bool planned_in_last_round(const std::string& key) const;
  const InputOptions& options() const { return options_; }
  // What the NodePools' limits leave to buy (Config::pool_budgets), for the rounds from now on.
  void set_pool_budgets(std::map<std::string, std::map<std::string, int64_t>> budgets) { pool_budgets_ = std::move(budgets); }

 private:
  struct NodeState {
    std::shared_ptr<const planner::Node> source;  // the snapshot's
    std::shared_ptr<const api::Policy> pricing;
    std::string fault;
    planner::Node node;
    cost::NodeRate rate;  // under `pricing`, for a GPU node
    uint64_t seen = 0;
  };
  void take_nodes(const planner::SnapshotView& view, const ClusterFacts& facts);
  void take_tasks(const planner::SnapshotView& view, const Tenancy& tenancy, const ClusterFacts& facts);
  using TenantSpecs = std::map<std::string, const api::TenantSpec*>;
  void lay_tenancy(planner::Task& t, const TaskEntry& entry, const Tenancy& tenancy, const TenantSpecs& specs, const ClusterFacts& facts);
  void lay_avoided(planner::Task& t, const TaskEntry& entry, const planner::SnapshotView& view, const ClusterFacts& facts);
  void take_held(const planner::SnapshotView& view);
  void take_config(const Tenancy& tenancy);
  void refresh_rates();

  InputOptions options_;
  Round round_;
  std::map<std::string, NodeState> nodes_;
  std::unordered_map<std::string, TaskState> tasks_;
  std::map<std::string, std::map<std::string, kube::SystemTime>> avoid_;  // task -> node -> until
  // By refused pod (uid): the last round's time its node still held pods on their way out.
  struct Explained {
    std::optional<kube::SystemTime> last;
    uint64_t seen = 0;
  };
  std::map<std::string, Explained> explained_;
  std::set<std::string> priority_capped_;  // uid@generation told once
  std::vector<cost::NodeRate> all_rates_;  // distinct, in the order of the first node that has each
  std::map<std::string, std::vector<cost::NodeRate>> rates_for_;  // by "vendor/vendor/": all_rates_ of those
  planner::ScalingPriors priors_;
  std::map<std::string, std::map<std::string, int64_t>> pool_budgets_;  // what each kind's tasks measured, kept after they end
};

// The nodes that still hold pods on their way out (being deleted, of an epoch their task left, of a
// task that holds nothing: going away, ended, suspended, over its budget): kube-scheduler refuses
// what is pinned there until they are gone. A pod stuck in deletion counts for `patience` only.
std::set<std::string> nodes_being_vacated(const planner::SnapshotView& view, kube::SystemTime now, std::chrono::seconds patience);

// What the task runs as observed, or as published when an admission was published for it.
void overlay_admission(planner::Task& t, const planner::Task& observed, const std::vector<render::WorkerPlacement>* published);
// The devices the task's seats claims hold, from the view (Task::shared_devices): the claims, not
// its pods, hold them, so they change without the task or its pods changing.
void lay_shared_devices(planner::Task& t, const planner::SnapshotView& view);

}  // namespace valley::inputs
