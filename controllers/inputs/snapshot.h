// From API objects to the planner's view, purely: a Node's GPU capacity, vendor, capacity class
// (on-demand or spot, from the labels cloud providers and Karpenter set) and whether it takes new
// work (Ready, not cordoned, no disruption notice); what a pod holds; a TrainingTask with its live
// workers. The lists of labels and taints understood are configurable (DESIGN.md section 4).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "controllers/planner/planner.h"
#include "controllers/api/pod.h"
#include "controllers/api/spec.h"

namespace valley::planner {

using json = nlohmann::json;

// A DRA driver whose devices are GPUs Valley places work on: whose GPUs (vendor) and the
// DeviceClass a claim names to get one.
struct DraDriver {
  std::string driver, vendor, device_class;
  // Its devices may be shared by the pods of one claim (a task's seats: Node::dra_shared).
  bool shared = false;
  bool operator==(const DraDriver&) const = default;
};

struct NodeFacts {
  // label=value pairs that mark spot/preemptible capacity.
  std::vector<std::pair<std::string, std::string>> spot_labels = {{"karpenter.sh/capacity-type", "spot"},
                                                                  {"eks.amazonaws.com/capacityType", "SPOT"},
                                                                  {"cloud.google.com/gke-spot", "true"},
                                                                  {"cloud.google.com/gke-preemptible", "true"}};
  // Taint keys that announce the node is going away: no new work goes there.
  std::vector<std::string> disruption_taints = {"aws-node-termination-handler/spot-itn", "karpenter.sh/disrupted",
                                                "cloud.google.com/impending-node-termination"};
  // GPU faults as health tooling reports them on the node. Node condition types that mean a fault
  // while True ('*' matches any run of characters): NVIDIA NVSentinel's GPU health monitor
  // (Gpu...Watch from DCGM: memory/ECC, PCIe, NVLink, SM, power, thermal, inforom, driver, ...), its
  // syslog monitor (XID, SXID, fallen off the bus) and NVSwitch conditions; Node Problem Detector
  // rules add their own types here. Taint keys its fault quarantine applies (those its
  // documentation shows; any key may be configured there).
  std::vector<std::string> gpu_fault_conditions = {"Gpu*Watch", "SysLogsXIDError", "SysLogsSXIDError", "SysLogsGPUFallenOff",
                                                   "NVSwitchFatalError", "NVSwitchDown"};
  std::vector<std::string> gpu_fault_taints = {"nvidia.com/gpu-xid-error", "nvidia.com/gpu-nvlink-error",
                                               "nvidia.com/syslog-xid-error", "nvidia.com/gpu-error"};
  // The GPU drivers of NVIDIA, AMD and Intel as their DRA drivers name themselves, each with the
  // DeviceClass it installs under the same name (the operator's --dra-drivers adds others).
  std::vector<DraDriver> dra_drivers = {{"gpu.nvidia.com", "nvidia", "gpu.nvidia.com"},
                                        {"gpu.amd.com", "amd", "gpu.amd.com"},
                                        {"gpu.intel.com", "intel", "gpu.intel.com"}};
  // Device attributes read as a DRA GPU's product (pricing keys on it), first found wins.
  std::vector<std::string> dra_product_attributes = {"productName", "model"};
};

// `name` matches `pattern`, where '*' stands for any run of characters.
bool matches_pattern(const std::string& pattern, const std::string& name);

// GPU resources of a node as free capacity (allocatable, before any pod), its vendor and class.
Node node_from(const json& node, const NodeFacts& facts = {});
// The node with a GPU fault the health tooling reports laid over ("" leaves it as it is): nothing
// new is placed there and its workers move.
Node with_gpu_fault(Node n, const std::string& fault);

// The key node `n` counts a pod's `resource` under: its replicas' (Node::replicas_resource) for the
// device plugin's resource on a node that shares GPUs as replicas, else the resource itself.
std::string counted_as(const Node& n, const std::string& resource);
// Thousandths of a GPU the pod holds on `node`, as the node hands its GPUs out (a replica of a GPU
// it splits R ways is 1/R), never as the pod's own metadata says: what billing charges.
int64_t share_on_node(const api::Pod& pod, const Node& node);

// What kube-scheduler counts for a pod besides extended resources (Node::room's units): per resource
// the larger of its containers' sum and its largest init container (requests, else limits), and
// one pod.
std::map<std::string, int64_t> room_requests(const api::Pod& pod);
// What it holds now: those, or nothing once it has finished.
std::map<std::string, int64_t> room_usage(const api::Pod& pod);
// What one worker of the task asks for besides GPUs: room_requests of the worker pod render makes
// from its spec (the user's containers and init containers, and Valley's own).
std::map<std::string, int64_t> worker_room(const api::TaskSpec& spec);
// The same of one worker and (MPI) of the launcher: each a rendered pod, so the cluster snapshot
// computes them once per spec, not at every status write.
struct PodRooms {
  std::map<std::string, int64_t> worker, launcher;
};
PodRooms pod_rooms(const api::TaskSpec& spec);
// Lays them on the task (the launcher's, when it has one).
void lay_rooms(Task& t, const PodRooms& rooms);

// Subtracts what `pod` holds from its node's free capacity.
void subtract(Node& node, const api::Pod& pod);

// The planner's view of a task: spec, whether it is admitted (has an epoch and has not ended) and
// its live workers of the current epoch (node and GPU resource each holds).
Task task_from(const api::TaskSpec& spec, const json& task_object, const std::vector<api::Pod>& owned_pods);
// The same over pods held elsewhere (the cluster snapshot keeps them as shared objects), without
// the pods' rooms (the caller lays them: the snapshot computes them once per spec).
Task task_with_pods(const api::TaskSpec& spec, const json& task_object, const std::vector<const api::Pod*>& owned_pods);

// The workers an admitted task holds for the next plan: those the last plan published for it (by
// worker index; its pods may not all exist yet), except where a live worker's pod is bound. There
// its GPUs are, wherever the plan had moved it meanwhile (it was refused at the node, then taken).
std::vector<Task::Worker> planned_workers(const std::vector<Task::Worker>& published, const std::vector<Task::Worker>& live);

// Whether an update of a cached object (as its informer has it, before and after) can change a
// plan, so that the planner should run now rather than at its next periodic pass (every 2 s at
// most). Churn that moves no GPU cannot: a pod's progress before it ends (conditions, container
// states, Pending to Running), a node's heartbeat (only its resourceVersion changes in the lean
// cache), a task's accrued cost (its only reader, reduceCost's work done, is not urgent). At a
// thousand running tasks these are most events, and each woke a plan of the whole cluster.
bool replan_needed(const json& before, const json& after);
bool replan_needed(const api::Pod& before, const api::Pod& after);

}  // namespace valley::planner
