// The capacity planner: a pure function from a snapshot of the cluster (GPU capacity per node, what
// other pods hold) and of every TrainingTask (priority, elastic range, GPUs per worker, where its
// workers are) to decisions: admit (with a node for each worker), keep, grow, shrink, preempt, or
// wait with a reason. No I/O, no clock: the same snapshot gives the same plan.
//
// Rules, in order:
// 1. Admitted tasks keep the workers they have (stability), on the nodes they are on.
// 2. Waiting tasks, by effective priority (priority + 1 per `aging_step` waited, so nothing starves;
//    then age, then name), are admitted only when their whole minimum gang fits at once. When it does
//    not, lower-priority tasks are first shrunk toward their minimum (reduceCost ones first), and only
//    if that is not enough preempted whole (lowest priority, reduceCost first). A gang never spans GPU
//    vendors (NCCL and RCCL do not mix); AMD nodes only for amdSupport tasks.
//    A reduceCost task waits for off-peak electricity unless it fits on spot capacity alone or the
//    cluster is idle enough (Config); it is also the first to shrink or be preempted.
// 3. Tasks then grow toward max (or their pinned size) with what is free, highest priority first; a
//    running task grows only if its last resize is `min_resize_interval` old and the gain is worth a
//    checkpoint-restart (`min_gain_workers`, `min_gain_fraction`). A task admitted in this plan grows
//    freely (it has not started yet).
// Placement bin-packs a gang onto as few nodes as possible (the node holding the most of the remaining
// workers first), preferring nodes the task already uses, then the right capacity class (spot for a
// task that checkpoints, on-demand for one that does not), then the cheapest, then the tightest fit.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/timefmt.h"

namespace valley::planner {

using kube::SystemTime;

struct Taint {
  std::string key, value, effect;  // effect: NoSchedule, PreferNoSchedule, NoExecute
};
struct Toleration {
  std::string key, op = "Equal", value, effect;  // op: Equal or Exists; empty key + Exists = all
};

struct Node {
  std::string name;
  std::string vendor;                    // "nvidia", "amd", "" (no GPUs)
  std::string capacity_class = "on-demand";  // or "spot"
  std::map<std::string, int64_t> free;   // GPU resource -> units free for Valley's workers
  std::map<std::string, int64_t> capacity;  // GPU resource -> allocatable units
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool schedulable = true;               // Ready, not cordoned, no disruption notice
  bool ready = true;
  std::optional<SystemTime> not_ready_since;  // the Ready condition's last transition, when not Ready
  std::string notice;                         // the disruption taint's key, "" if none
  int64_t price_micros = 0;                   // a GPU-hour here, from the PricingPolicy (0: unknown)
};

struct Task {
  std::string key;  // namespace/name
  int priority = 0;
  bool reduce_cost = false;
  bool amd_support = false;
  bool checkpointed = false;  // has a checkpoint store: a spot loss costs it a restart, not its work
  int min_workers = 1, max_workers = 1;
  std::optional<int> pinned_workers;  // replicas.target
  int gpu_milli = 1000;               // per worker
  SystemTime created{};
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  std::vector<std::string> avoid_nodes;  // nodes where its pods could not be bound lately
  // Current state.
  bool admitted = false;
  struct Worker {
    std::string node, gpu_resource;
    int64_t count = 0;
  };
  std::vector<Worker> workers;        // the task's live workers, by index
  std::optional<SystemTime> last_resize;
};

struct Config {
  std::chrono::seconds min_resize_interval{300};
  int min_gain_workers = 1;
  double min_gain_fraction = 0.25;
  std::chrono::seconds aging_step{600};
  // ReduceCost (from the PricingPolicy): outside off-peak electricity such a task starts only on
  // spot capacity, or when at least idle_percent of the GPUs are free.
  bool off_peak = true;
  std::string next_off_peak;  // for the waiting reason, e.g. "2026-11-22T15:00:00Z"
  int idle_percent = 50;
  // From the PricingPolicy: AMD GPUs cost less than NVIDIA ones, so reduceCost tasks that may use
  // them try AMD first (without a policy: the seed platform's premise, AMD is cheaper).
  bool amd_cheaper = true;
  // Placement weighs capacity class and price after packing: a task that checkpoints goes to spot
  // capacity first, then the cheapest; one that does not keeps off spot capacity where it can.
  bool cost_aware_placement = true;
};

enum class Action { Wait, Admit, Keep, Grow, Shrink, Preempt };
const char* to_string(Action a);

struct Decision {
  std::string key;
  Action action = Action::Wait;
  int workers = 0;                       // size after the decision
  std::vector<Task::Worker> placement;   // one per worker index
  std::string reason;
  int queue_position = 0;                // for Wait: 1 = next in line
};

// The task's worker template selects the node (its nodeSelector labels all match).
bool selects(const Task& t, const Node& n);

// Decisions for every task, in the order of `tasks`.
std::vector<Decision> plan(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now,
                           const Config& config = {});

// The GPU resource and count one worker of `gpu_milli` needs on a node of `vendor` whose free
// resources are `free` (whole GPUs as "<vendor>.com/gpu"; a fraction as the smallest free MIG slice
// that holds it, else a time-sliced replica "nvidia.com/gpu.shared", else one whole GPU). nullopt when the node cannot host such a worker at all.
std::optional<Task::Worker> worker_shape(int gpu_milli, const Node& node);

}  // namespace valley::planner
