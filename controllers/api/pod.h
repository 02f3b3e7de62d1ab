// A pod as Valley's caches hold it: the fields the reconciler, the planner, the cost engine and the
// metrics read, typed. The pod informer makes one from each pod it sees (after the field mask,
// controllers/task/cache_fields.h) and caches nothing else: nlohmann keeps a pod's ~90 kept members
// in ~9 KB of tree nodes, this struct holds the same facts in a tenth of that.
// Read tolerantly, as the readers always read the JSON: a field absent, null or of another type
// reads as absent ("" / nullopt / false / empty).
// Kept:
//   metadata: namespace, name, uid, resourceVersion, labels (string values), owner UIDs, finalizers,
//             deletionTimestamp (whether present, and its time), the kHostfileAnnotation,
//             kClaimedGpusAnnotation, kGpuSeatAnnotation, kMpsReplicasAnnotation,
//             kTimeSlicedReplicasAnnotation and kPricedAsAnnotation records (sealed: kRecordsEnv);
//   spec:     nodeName; the node a required node affinity pins it to (a matchFields term
//             metadata.name In [one node], as render writes it); per container and init container
//             the extended resources (names with a '/', e.g. nvidia.com/gpu), cpu (thousandths),
//             memory and ephemeral-storage (bytes) of limits and requests; the records sealed in
//             the first container's kRecordsEnv (read into the fields of those annotations);
//   status:   phase, reason, startTime; conditions (type, status, reason, message,
//             lastTransitionTime); per container and init container status its name, whether
//             state.running / state.terminated is present, running.startedAt, terminated exitCode,
//             reason, message, startedAt, finishedAt, waiting reason and message, and
//             lastState.terminated.startedAt.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "operator/kube/store.h"
#include "operator/kube/timefmt.h"

namespace valley::api {

using kube::SystemTime;

// An MPI launcher's hostfile, in the annotation its downward-API volume mounts as
// /etc/mpi/hostfile (controllers/render): Valley rewrites it when the task is resized in place.
inline constexpr const char* kHostfileAnnotation = "valley.dev/hostfile";
// What a Valley worker's DRA claim holds, "<DeviceClass>=<count>": a pod's claims name no count,
// so render writes it here and the planner counts the pod's GPUs from it, as a device plugin's
// pod shows them in its requests.
inline constexpr const char* kClaimedGpusAnnotation = "valley.dev/claimed-gpus";
struct ClaimedGpus {
  std::string device_class;
  int64_t count = 0;  // 0: the annotation is absent or malformed
};
ClaimedGpus claimed_gpus(const std::string& annotation);
// A Valley worker on a seat of its task's shared DRA claim (gpu::dra_seat_resource), as
// "<DeviceClass>=<thousandths of a device it is charged>", read as claimed_gpus reads its own.
inline constexpr const char* kGpuSeatAnnotation = "valley.dev/gpu-seat";
// A Valley worker on MPS or time-sliced replicas (gpu/resources.h) says how many its node splits a
// GPU into, so that its request of the device plugin's resource counts as that many'ths of a GPU
// wherever the pod is read (the planner, the cost ledger, quotas), as the node counts them.
inline constexpr const char* kMpsReplicasAnnotation = "valley.dev/mps-replicas";
inline constexpr const char* kTimeSlicedReplicasAnnotation = "valley.dev/time-sliced-replicas";
// How a Valley worker's GPUs are priced, as its planned node's labels said when Valley created it:
// "<vendor>/<capacityClass>/<product>". The cost ledger prices a pod by its node; this is what it
// goes by when the node was deleted before the operator process pricing the pod ever saw it (the
// pod's accounting finalizer keeps the pod, nothing keeps the node).
inline constexpr const char* kPricedAsAnnotation = "valley.dev/priced-as";
struct PriceClass {
  std::string vendor, capacity_class, product;  // vendor "": none
  bool operator==(const PriceClass&) const = default;
};
std::string price_class_annotation(const PriceClass& c);
PriceClass price_class(const std::string& annotation);  // vendor "" when absent or malformed

// The label on every pod Valley makes, and its value.
inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByValley = "valley";
// An object's labels say Valley made it.
bool made_by_valley(const nlohmann::json& labels);
// The records above that count and price a pod's GPUs (all but the hostfile, which Valley rewrites)
// are sealed when Valley makes the pod: copied, as one JSON object by annotation key, into this
// variable of its first container's environment. A pod's containers cannot change once it exists,
// so whoever may edit the pod (a tenant, where deploy/policies/valley-pods.yaml is not installed)
// cannot rewrite or remove how its GPUs are counted and billed. The annotations stay, for people
// and for operators of earlier releases. Read from the seal on a pod labelled kManagedByLabel=valley;
// from its annotations when it has no seal (an earlier release made it); on other pods, never.
inline constexpr const char* kRecordsEnv = "VALLEY_RECORDS";
// Seals the records the pod's annotations hold now, replacing any kRecordsEnv its first container
// had (a template's); a pod without containers is left as it is.
void seal_records(nlohmann::json& pod);

struct PodCondition {
  std::string type, status, reason, message;
  std::optional<SystemTime> last_transition;
  bool operator==(const PodCondition&) const = default;
};

// An extended resource's count (limits or requests): a plain integer, "8" or 8; anything else
// (negative, fractional, too large) counts as 0.
int64_t extended_quantity(const nlohmann::json& v);

struct PodContainer {
  std::string name;
  // Extended resources, cpu (thousandths of a core), memory and ephemeral-storage (bytes).
  std::vector<std::pair<std::string, int64_t>> limits, requests;
  bool sidecar = false;  // an init container with restartPolicy Always: runs beside the others
  bool operator==(const PodContainer&) const = default;
};

struct PodContainerStatus {
  std::string name;
  bool running = false;                     // state.running present
  std::optional<SystemTime> running_since;  // state.running.startedAt
  bool terminated = false;                  // state.terminated present
  std::optional<int64_t> exit_code;
  std::string reason, message;
  std::optional<SystemTime> started, finished;            // state.terminated
  std::optional<SystemTime> last_terminated_started;      // lastState.terminated.startedAt
  std::string waiting_reason, waiting_message;            // state.waiting (ErrImagePull, ...)
  bool operator==(const PodContainerStatus&) const = default;
};

// All of it but its version: two versions of a pod that differ in nothing kept compare equal here.
struct PodContent {
  std::string ns, name, uid;
  std::vector<std::pair<std::string, std::string>> labels;  // by key
  std::vector<std::string> owner_uids;
  std::vector<std::string> finalizers;
  bool deleting = false;                         // metadata.deletionTimestamp present
  std::optional<SystemTime> deletion_timestamp;  // ... and its time
  std::string hostfile;                          // metadata.annotations[kHostfileAnnotation]
  // the kClaimedGpusAnnotation record, read: the DeviceClass and count (0: none).
  std::string claimed_class;
  int64_t claimed_count = 0;
  // the kGpuSeatAnnotation record, read: the DeviceClass and thousandths (0: none), and
  // the claim its seat is on (spec.resourceClaims' resourceClaimName, "" if none).
  std::string seat_class;
  int64_t seat_milli = 0;
  std::string seat_claim;
  int mps_replicas = 0;                          // the kMpsReplicasAnnotation record, 0: none
  int time_sliced_replicas = 0;                  // the kTimeSlicedReplicasAnnotation record, 0: none
  PriceClass priced_as;                          // the kPricedAsAnnotation record
  std::string node_name;                         // spec.nodeName
  std::string pinned;                            // the node its required affinity names, "" if none
  std::string bought_from;                       // the NodePool its required affinity names (bought_pool), "" if none
  std::vector<PodContainer> containers, init_containers;
  std::string phase, reason;  // status
  std::optional<SystemTime> start_time;
  std::vector<PodCondition> conditions;
  std::vector<PodContainerStatus> container_statuses, init_container_statuses;

  // The label's value, "" if it has none.
  const std::string& label(const std::string& key) const;
  bool made_by_valley() const { return label(kManagedByLabel) == kManagedByValley; }
  std::string key() const { return ns.empty() ? name : ns + "/" + name; }
  bool operator==(const PodContent&) const = default;
};

struct Pod : PodContent {
  std::string resource_version;
  bool operator==(const Pod&) const = default;
};

Pod pod_from(const nlohmann::json& pod);

// The node a pod's required node affinity pins it to: a matchFields term metadata.name In [one
// node] (how Valley pins a worker), "" if none.
std::string pinned_node(const nlohmann::json& pod);

// The Karpenter NodePool a pod's required node affinity selects: a matchExpressions term
// karpenter.sh/nodepool In [one pool] (how Valley places a worker on capacity still to be bought),
// "" if none.
std::string bought_pool(const nlohmann::json& pod);

// The index a typed pod cache starts with: by owner UID (kube::index::kOwnerUid).

}  // namespace valley::api

namespace valley::kube {
template <>
struct ObjectTraits<api::Pod> {
  static std::string key(const api::Pod& p) { return p.key(); }
  static const std::string& resource_version(const api::Pod& p) { return p.resource_version; }
  static bool same_but_resource_version(const api::Pod& a, const api::Pod& b) {
    return static_cast<const api::PodContent&>(a) == static_cast<const api::PodContent&>(b);
  }
  static api::Pod from(nlohmann::json&& o) { return api::pod_from(o); }
  static void add_indexes(BasicStore<api::Pod>& store);  // by owner UID
};
}  // namespace valley::kube
