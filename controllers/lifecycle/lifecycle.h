// The TrainingTask lifecycle as one pure function: given what is observed (the task, its parsed
// spec, the pods and objects it owns, the time), decide the task's status and what to create,
// update or delete. Level-triggered and idempotent: deciding again on the same observation gives
// the same answer, and an answer carried out halfway is finished by the next decision.
//
// Phases: Pending (waiting for the planner to admit the minimum gang) -> Admitted -> Running ->
// Succeeded | Failed, with Restarting (a new epoch after a retryable failure, a resize or a
// disruption) and Suspended; a preempted task goes back to Pending and resumes in a new epoch when
// re-admitted. The launcher's exit decides the task (the only pod of a Single task decides it):
// 0 = Succeeded; 1-127 = permanent failure; 128-255 (signals) or no exit code = retried in a new
// epoch up to runPolicy.backoffLimit.
//
// Disruptions are not failures: a pod of the epoch on a node with a termination notice, on a node
// deleted or NotReady too long, with the DisruptionTarget condition (eviction, taint manager,
// scheduler preemption, node shutdown), or deleted by someone else ends the epoch; the task
// restarts from its checkpoint in a new epoch on what the planner finds, counted under
// restarts.disruptions, never against backoffLimit. A permanent-looking launcher failure waits
// `failure_settle` for such a signal (a lost rank makes mpirun exit 1).
//
// Stopping an epoch gives the workload its checkpoint window: the launcher is deleted first (its
// SIGTERM reaches every rank through mpirun), workers once it is gone or its grace period is over;
// pods on lost nodes are force-deleted (no kubelet will confirm). No pod of a new epoch is created
// while a pod of an older one exists (names are reused, and the new epoch must resume from the
// checkpoint the old one writes while stopping).
#pragma once

#include "controllers/cost/engine.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controllers/render/render.h"
#include "controllers/api/spec.h"
#include "controllers/gpu/utilization.h"
#include "controllers/lifecycle/transfers.h"
#include "operator/kube/timefmt.h"
#include "operator/storage/checkpoint_record.h"

namespace valley::lifecycle {

using json = nlohmann::json;

struct PodView {
  std::string name, uid, role;  // role: launcher | worker
  std::string resource_version;
  int epoch = 0;
  int worker_index = -1;
  std::string phase;  // Pending, Running, Succeeded, Failed
  bool ready = false;
  bool deleting = false;
  std::optional<int> exit_code;
  std::string exit_reason;  // the kubelet's word for that exit when it says more than "Error" (OOMKilled)
  std::string node;    // spec.nodeName once bound
  std::string pinned;  // the node its affinity requires ("" if none)
  std::string hostfile;  // a launcher's: the hostfile its annotation holds
  // Why Kubernetes is taking the pod away: the DisruptionTarget condition's reason when it is True
  // (EvictionByEvictionAPI, DeletionByTaintManager, PreemptionByScheduler, TerminationByKubelet),
  // else an eviction-like status.reason (Evicted, Shutdown, NodeShutdown, Terminated, NodeLost).
  std::string disruption;
  std::optional<kube::SystemTime> deletion_deadline;  // metadata.deletionTimestamp
  std::optional<kube::SystemTime> finished_at;        // the last container's terminated.finishedAt
  std::string termination_message;                    // the workload may report its checkpoint here
  // An init container that failed (the launcher's wait for its workers, or the user's own): its
  // name and termination message; exit_code is then its exit code.
  std::string failed_init, failed_init_message;
  // Why it cannot start (start_failure.h), "" when nothing says so.
  std::string start_failure, start_failure_message;
  // Its outputs sidecar (render::kOutputsContainer), when it has one: running (uploading), or ended
  // with the exit code and termination message valley-io left.
  bool outputs_running = false;
  std::optional<int> outputs_exit;
  std::string outputs_message;
};
PodView view_pod(const api::Pod& pod);

// A node the task's pods are bound to. A node absent from Observed::nodes has been deleted.
struct NodeView {
  bool ready = true;
  std::optional<kube::SystemTime> not_ready_since;
  std::string notice;  // the disruption taint it carries (spot termination notice), "" if none
  std::string fault;   // a GPU fault its health tooling reports (planner::Node::fault), "" if none
  std::vector<std::string> domains;  // its domain at each of Observed::topology's levels ("" unlabelled)
};

struct DisruptionConfig {
  std::chrono::seconds node_not_ready_grace{30};  // NotReady/Unknown this long = the node is lost
  std::chrono::seconds failure_settle{10};        // see the header comment
  std::chrono::seconds stuck_termination{60};     // past its grace period, a pod is force-deleted
  std::chrono::seconds start_grace{180};          // pods that cannot start this long give the GPUs back
  // Workers waiting this long for nodes their NodePool is to buy give the gang's capacity back (no
  // half-bought gang holds nodes).
  std::chrono::seconds provisioning_timeout{600};
};

// What the capacity planner decided for this task (controllers/planner): admitted with `workers`
// placed as `placement` (one entry per worker index), or waiting with a reason.
struct Admission {
  bool admitted = false;
  int workers = 0;
  std::vector<render::WorkerPlacement> placement;
  std::string reason;
  int queue_position = 0;
  std::optional<kube::SystemTime> expected_start;  // waiting: when it is expected to start
  std::optional<kube::SystemTime> cheap_until;     // reduceCost: waits for cheaper capacity at most until then
  // What the estimate assumes (pool, start, size), from the same decision.
  std::optional<cost::EstimateBasis> estimate_basis;
  // The plan moves the running task, at its size, to the cheaper nodes of `placement`: its running
  // epoch ends (checkpoint) and the next starts there. Kept while the placement stays.
  bool moving = false;
  // The priority it was planned at: spec.priority, else its tenant's defaultPriority, capped at the
  // tenant's maxPriority (-1: not known). What its priority multiplier bills.
  int priority = -1;
  // Its launcher goes to spot although the task writes no checkpoint: its master template allows
  // only spot nodes (planner::Decision::launcher_on_spot).
  bool launcher_on_spot = false;
};

// The API server refused to create one of the task's objects (recorded by the reconciler when it
// happened). Blocking refusals cannot heal by retrying the same objects (Pod Security, an invalid
// pod template): until the spec or the namespace changes, nothing more is created and the task
// holds no capacity. Others (a ResourceQuota, a webhook) are retried with backoff.
struct CreateRefusal {
  std::string reason;   // PodSecurity, Invalid, Forbidden, ...
  std::string message;  // the API server's, with a hint
  bool blocking = false;
  std::optional<std::chrono::seconds> retry_in;  // blocking: when it is tried again regardless
};

struct Observed {
  // The TrainingTask as cached (metadata, spec, status), its status as the CRD declares it
  // (api::readable_status: a field of another type is absent), which the Decider relies on.
  json task;
  api::ParsedTask parsed;
  std::vector<PodView> pods;  // owned by the task
  bool service_exists = false;
  bool secret_exists = false;
  // The task is to be walled off by a NetworkPolicy (the operator's choice), and whether it is;
  // the address ranges its pods may not reach (render/network_policy.h; empty: egress open).
  bool isolate = false;
  std::vector<std::string> egress_except;
  bool network_policy_exists = false;
  // nullopt: no plan yet (the planner has not run). A waiting task then stays Pending and an
  // admitted one keeps its size.
  std::optional<Admission> admission;
  kube::SystemTime now;
  // Nodes of the task's pods; node checks are skipped when !nodes_known (no node informer).
  std::map<std::string, NodeView> nodes;
  bool nodes_known = false;
  DisruptionConfig disruption;
  // The workload's latest.json as last read from the checkpoint store, if any.
  std::optional<storage::CheckpointRecord> checkpoint;
  // spec.data: whether the store lists the data set (nullopt: not asked yet). See transfers.h.
  std::optional<DataCheck> data;
  // Outputs listed and the report written, once asked for (status.outputs as it is to read).
  std::optional<json> outputs;
  std::optional<CreateRefusal> refusal;
  // The latest reading of its GPUs' utilization (DCGM through Prometheus), when Valley reads one,
  // and the idlePolicy in force (its own, else its tenant's; absent: the defaults).
  std::optional<gpu::TaskReading> gpu_reading;
  std::optional<api::IdlePolicy> idle_policy;
  // Node labels (key, value) that mark spot capacity: a task that does not checkpoint keeps its
  // launcher off such nodes (its loss would restart the gang from the beginning).
  std::vector<std::pair<std::string, std::string>> spot_labels;
  // The launcher pool the operator names (render::LauncherPlacement); empty: beside worker 0.
  std::vector<std::pair<std::string, std::string>> launcher_pool;
  // The nodes the operator plans on (its --node-selector): the launcher is kept to them too.
  std::vector<kube::LabelRequirement> planned_nodes;
  // Uids of the task's pods this process deleted itself: their deletion is never a disruption.
  // Empty after an operator restart; Valley's own deletions are then told from the plan.
  std::set<std::string> deleted_by_valley;
  // The operator's topology levels (names, narrowest first): status.topology reports the workers'
  // domains at each.
  std::vector<std::string> topology;
};

struct EventSpec {
  std::string type, reason, action, note;
};

struct Decision {
  json status;  // the whole desired status
  bool status_changed = false;
  std::vector<json> create;               // pods, Service, NetworkPolicy
  bool create_ssh_secret = false;          // keys are made by the caller (randomness is not pure)
  // The hostfile for the launcher of this epoch, when its own lists other workers (a resize in
  // place): written to its api::kHostfileAnnotation.
  std::optional<std::string> launcher_hostfile;
  struct PodDeletion {
    std::string name, uid;
    bool force = false;  // gracePeriodSeconds 0: its node is gone, or it is stuck past its grace
    // Set when the pod was unbound as seen: deleted only if it still is (a pod kube-scheduler bound
    // meanwhile is not re-placed, and its deletion is not mistaken for someone else's).
    std::string resource_version;
  };
  std::vector<PodDeletion> delete_pods;
  std::vector<EventSpec> events;
  std::optional<std::chrono::seconds> requeue_after;
  bool delete_task = false;  // ttlSecondsAfterFinished has passed
  bool collect_outputs = false;  // ended and its pods are done: list the outputs, write the report
};

Decision decide(const Observed& observed);

// A task in this phase has ended (Succeeded or Failed).
bool finished(const std::string& phase);

// spec.maxCost is set and status.cost.accrued has reached it: the task is suspended until raised.
bool over_budget(const api::TaskSpec& spec, const json& status);

// Suspended by its idlePolicy (Suspend) in this generation of its spec: stays so until it changes.
bool idle_suspended(const api::TaskSpec& spec, const json& status);
// Idle under an idlePolicy of Shrink: why (the planner then sizes it at replicas.min); else "".
std::string idle_shrink(const json& status);

// Whether the status change `d` makes from `stored` may wait to be written with a later one (status
// coalescing): it only brings replica counts, the accrued cost (not its final figure) or
// utilization up to date, or it is a new task's "waiting for the capacity planner" before the plan
// has a word on it (`planned` false); and the decision deletes nothing (the cost of pods that go
// must be written before they do).
bool status_may_wait(const json& stored, const Decision& d, bool planned);

// How long such a change may be held: `window`, or the admitted tasks' share of the progress write
// rate when that is longer (each task's progress writes at least admitted / rate seconds apart, as
// the periodic cost writes: cost::accrual_interval); no longer than `window` when the rate is 0.
std::chrono::milliseconds status_hold(std::chrono::milliseconds window, size_t admitted_tasks, double progress_writes_per_second);

// Without a planner (tests, or a cluster without GPUs): replicas.target if pinned, else min.
int desired_workers(const api::TaskSpec& spec);

}  // namespace valley::lifecycle
