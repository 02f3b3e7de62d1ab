// The planner's inputs kept up to date from informer events instead of rebuilt from the caches for
// every plan (a rebuild parses every task and walks every pod each time). Kept per object, and recomputed only when that object (or, for a task, one of its
// pods) changed:
// - each node as the planner sees it (node_from) and what all pods bound or pinned to it hold;
// - each task's parsed spec and its planner::Task (task_from over its pods);
// - each pod's GPU usage, node, owner and worker labels.
// view() hands the planning loop nodes whose free GPUs are allocatable less what every pod holds,
// the tasks, and each task's current-epoch workers (the plan gives those back for tasks it plans:
// it places them itself). rebuild() computes the same view from whole object lists, the way each
// plan used to: the unit tests hold the two equal after random event sequences.
// Not thread-safe: the caller serializes updates and views.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controllers/api/dra.h"
#include "controllers/api/spec.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/planner/planner.h"

namespace valley::planner {

using ObjectPtr = std::shared_ptr<const json>;
using PodPtr = std::shared_ptr<const api::Pod>;
using ClaimPtr = std::shared_ptr<const api::DraClaim>;

bool operator==(const NodeFacts& a, const NodeFacts& b);

struct SnapshotView {
  // By name; free = allocatable less what every pod on the node holds. Shared like the tasks: a
  // node is made anew only when it or what its pods hold changed.
  std::vector<std::shared_ptr<const Node>> nodes;
  // A pod pinned to a node and not bound yet: kube-scheduler may be refusing it.
  struct Waiting {
    PodPtr pod;
    std::string node;  // the node it is pinned to
    // Since when its PodScheduled condition is False, and what it says (unset: not refused).
    std::optional<SystemTime> refused_since;
    std::string refusal;
  };
  struct TaskEntry {
    std::string key;  // namespace/name
    ObjectPtr object;
    std::shared_ptr<const api::ParsedTask> parsed;
    std::shared_ptr<const Task> task;  // task_from(spec, object, owned); null when the spec is invalid
    std::vector<PodPtr> owned;         // its pods (by owner UID), by name
    // Of those, the ones pinned to a node and not bound yet.
    std::vector<Waiting> waiting;
  };
  // By key. Shared with the snapshot and between views: an entry is made anew only when its task or
  // one of its pods changed, so a view copies a pointer a task.
  std::vector<std::shared_ptr<const TaskEntry>> tasks;
  // Valley worker pods by the task their labels name ("ns/task"): the node they hold GPUs on (bound
  // or pinned), what they hold, and their epoch label; by pod name. Shared likewise.
  struct Worker {
    std::string node;
    std::map<std::string, int64_t> usage;  // gpu_usage
    std::string epoch;
    std::map<std::string, int64_t> room;   // room_usage
  };
  std::map<std::string, std::shared_ptr<const std::vector<Worker>>> workers;
  // By task ("namespace/name"): node -> devices its allocated seats claims hold (Task::shared_devices).
  std::map<std::string, std::map<std::string, int64_t>> shared_devices;
};

class ClusterSnapshot {
 public:
  explicit ClusterSnapshot(NodeFacts facts = {}) : facts_(std::move(facts)) {}

  // Nodes are read anew when the facts change (a PricingPolicy naming other spot labels).
  void set_facts(const NodeFacts& facts);
  void upsert_node(const ObjectPtr& node);
  void remove_node(const std::string& name);
  void upsert_pod(const PodPtr& pod);
  void remove_pod(const std::string& key);  // namespace/name
  void upsert_task(const ObjectPtr& task);
  void remove_task(const std::string& key);
  // DRA: ResourceSlices (GPUs a driver publishes for a node) and ResourceClaims (what they hold).
  void upsert_slice(const ObjectPtr& slice);
  void remove_slice(const std::string& name);
  void upsert_claim(const ClaimPtr& claim);
  void remove_claim(const std::string& key);  // namespace/name

  SnapshotView view();
  // A node as node_from read it under the current facts (allocatable, not less what pods hold),
  // shared as read (it is replaced, never changed, when the node or the facts change); null when
  // unknown. nodes(): copies of all of them, by name.
  std::shared_ptr<const Node> node(const std::string& name) const;
  std::vector<Node> nodes() const;

 private:
  struct PodEntry {
    PodPtr object;
    std::string node;                      // bound, else pinned; "" if neither
    std::map<std::string, int64_t> usage;  // gpu_usage
    std::map<std::string, int64_t> room;   // room_usage
    std::string worker_of;                 // "ns/task" of a Valley worker, else ""
    std::string epoch;
  };
  struct TaskEntry {
    ObjectPtr object;
    std::string uid;
    std::shared_ptr<const api::ParsedTask> parsed;
    PodRooms rooms;                                         // pod_rooms(spec), once per spec
    std::shared_ptr<const SnapshotView::TaskEntry> view;  // null: to be made anew (it or a pod changed)
  };
  struct TaskWorkers {
    std::map<std::string, SnapshotView::Worker> by_pod;
    std::shared_ptr<const std::vector<SnapshotView::Worker>> view;  // null: to be made anew
  };
  void hold(const PodEntry& p, int sign);
  void touch_owner(const std::string& uid);
  // The node as node_from reads it with its DRA GPUs laid over.
  Node read_node(const ObjectPtr& object) const;
  std::vector<const api::DraSlice*> slice_list() const;
  void reread_node(const std::string& name);
  // Claims' holds recomputed after a slice or claim changed; nodes whose hold changed are redone.
  void recount_claims();

  NodeFacts facts_;
  struct NodeEntry {
    ObjectPtr object;
    std::shared_ptr<const Node> node;     // read_node(object)
    std::shared_ptr<const Node> view;     // less what its pods hold; null: to be made anew
  };
  std::map<std::string, NodeEntry> nodes_;                             // by name
  std::map<std::string, std::map<std::string, int64_t>> held_;         // node -> resource -> units held (GPUs and room)
  std::map<std::string, PodEntry> pods_;                               // by namespace/name
  std::map<std::string, std::map<std::string, PodPtr>> pods_by_owner_;  // owner UID -> pod key -> pod
  std::map<std::string, TaskWorkers> workers_;                         // by the task the labels name
  std::map<std::string, TaskEntry> tasks_;                             // by namespace/name
  std::map<std::string, std::string> task_by_uid_;                     // UID -> task key
  std::map<std::string, ObjectPtr> slice_objects_;                     // by name
  std::map<std::string, api::DraSlice> slices_;                        // by name, read with facts_
  std::map<std::string, std::set<std::string>> slices_by_node_;        // node -> the names of its slices
  std::map<std::string, api::DraClaim> claims_;                        // by namespace/name
  std::map<std::string, std::map<std::string, int64_t>> claim_held_;   // node -> DRA resource -> devices
  std::map<std::string, std::map<std::string, int64_t>> seats_held_;   // task -> node -> devices of its seats claims
  bool claims_stale_ = false;
};

// A task the plan is given: its current epoch and its workers as the plan's input has them (its
// live ones, or where its published admission put them; planned_workers).
struct PlannedTask {
  const std::string* epoch;
  const std::vector<Task::Worker>* workers;
};

// What the current-epoch workers of the planned tasks hold, by node: given back to the plan, which
// places those workers itself (a node's free units in the view count every pod there). A task's
// live workers give back no more on a node than its plan input takes there: a worker the plan
// moved before its pod was bound still holds its old node until the pod is deleted (kube-scheduler
// may bind it there meanwhile), and a worker beyond a lowered size holds its node until it goes.
// planned_of: nullopt for a task not planned; node_known: whether the plan has the node.
HeldByPlanned held_by_planned(const SnapshotView& view, const std::function<std::optional<PlannedTask>(const std::string&)>& planned_of,
                             const std::function<bool(const std::string&)>& node_known);

// The view, computed from scratch from the objects (what ClusterSnapshot must always equal).
SnapshotView rebuild(const std::vector<ObjectPtr>& nodes, const std::vector<PodPtr>& pods, const std::vector<ObjectPtr>& tasks,
                     const NodeFacts& facts, const std::vector<ObjectPtr>& slices = {}, const std::vector<ClaimPtr>& claims = {});

}  // namespace valley::planner
