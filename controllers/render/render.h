// TrainingTask -> the Kubernetes objects that run it. Pure: same inputs, same objects.
//
// Names are deterministic so a restarted operator finds what it made: <task>-launcher,
// <task>-worker-<i>, <task>-workers (headless Service for worker DNS), <task>-ssh (key pair). Every
// object carries Valley's labels and a controller owner reference to the task, so deleting the task
// deletes everything. The launcher carries its hostfile and discover_hosts.sh in annotations that a
// downward-API volume mounts at /etc/mpi (no ConfigMap a task: one object fewer to create, and a
// resize in place is one patch of the launcher).
//
// Workload contract (env in every pod): VALLEY_TASK, VALLEY_ROLE, VALLEY_WORLD_SIZE (MPI ranks or
// PyTorch processes = workers x slots, as the epoch started), VALLEY_WORKERS, VALLEY_SLOTS_PER_WORKER,
// VALLEY_EPOCH, VALLEY_CHECKPOINT_URI, VALLEY_RESUME (1 from the second epoch on: load the latest
// checkpoint), VALLEY_WORKER_INDEX. A PyTorch task's workers run torchrun (PET_* env: its rendezvous
// on worker 0, replicas.min:max nodes); the processes it starts read torch's own WORLD_SIZE and RANK,
// which follow resizes within an epoch.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "controllers/render/ssh_keys.h"
#include "controllers/api/pod.h"
#include "controllers/api/spec.h"
#include "operator/kube/label_selector.h"

namespace valley::render {

using json = nlohmann::json;
using api::TaskSpec;

namespace label {
inline constexpr const char* kManagedBy = api::kManagedByLabel;
inline constexpr const char* kTask = "valley.dev/task";
inline constexpr const char* kRole = "valley.dev/role";
inline constexpr const char* kEpoch = "valley.dev/epoch";
inline constexpr const char* kWorkerIndex = "valley.dev/worker-index";
}  // namespace label

// Keeps a GPU-holding pod's object until Valley has its cost in the task's status: a pod deleted
// by anyone (a user, the garbage collector, pod GC after a node loss, Valley itself) cannot vanish
// unpriced while no leader runs. Valley removes it once the pod has ended and is charged to its
// end, or when no one will say when it ended (its node is lost).
inline constexpr const char* kAccountingFinalizer = "valley.dev/accounting";

std::string launcher_name(const std::string& task);
std::string worker_name(const std::string& task, int index);
std::string service_name(const std::string& task);
// A worker's name in that Service (<worker>.<service>.<ns>.svc), as the hostfile lists it.
std::string worker_host(const TaskSpec& spec, int index);
// A PyTorch task's c10d rendezvous: worker 0's name and api::kRendezvousPort.
std::string rendezvous_endpoint(const TaskSpec& spec);
std::string ssh_secret_name(const std::string& task);
// The metadata of an object Valley makes for the task: name, namespace, Valley's labels and the
// task as controlling owner (garbage-collected with it).
json task_object_metadata(const TaskSpec& spec, const std::string& name);
// "valley.dev/task=<name>": the label selector of all the task's pods (status.selector).
std::string task_selector(const std::string& task);

// Where and on what a worker runs: the GPU resource to request and, once the planner decides
// placement, the node it is pinned to.
struct WorkerPlacement {
  std::string vendor = "nvidia";        // chooses the image (worker.vendorImages)
  std::string gpu_resource = "nvidia.com/gpu";
  int gpu_count = 1;                     // of gpu_resource
  std::string node;                      // "" = let kube-scheduler choose; else required node affinity
  std::string claim;                     // a seat (gpu::dra_seat_resource): the seats claim it sits on
  api::PriceClass priced_as;             // the planned node's (api::kPricedAsAnnotation); vendor "": unknown
};

// Before the planner exists (or when it has no opinion): NVIDIA, whole GPUs as nvidia.com/gpu,
// a fraction as the smallest A100 MIG profile that holds it (1g.10gb = 1/7, 2g.20gb = 2/7,
// 3g.40gb = 3/7, 4g.40gb = 4/7, 7g.80gb = 1).
WorkerPlacement default_placement(const TaskSpec& spec);

struct Shape {
  int workers = 1;
  int epoch = 1;
};

// A worker placed on DRA GPUs (gpu_resource "dra:<DeviceClass>") asks for them through a claim
// made from gpu_claim_template (kube-scheduler allocates it on the node Valley pinned) and says
// what it holds in api::kClaimedGpusAnnotation; one on MPS or time-sliced replicas
// (gpu::replicas_resource) asks for the device plugin's resource and says the split in
// api::kMpsReplicasAnnotation or api::kTimeSlicedReplicasAnnotation; any other GPU resource is a
// limit and a request.
json worker_pod(const TaskSpec& spec, int index, const Shape& shape, const WorkerPlacement& placement);
// The ResourceClaimTemplate such a worker names: `count` devices of `device_class` (and, with
// spec.worker.devices.matchAttributes, only devices whose attributes have those values: a CEL
// selector, and a name that changes with them), owned by the task; its claims carry Valley's labels
// (so the planner counts them through the pods, not twice).
std::string gpu_claim_template_name(const TaskSpec& spec, const std::string& device_class, int count);
json gpu_claim_template(const TaskSpec& spec, const std::string& device_class, int count);
// A worker on a seat (gpu_resource gpu::dra_seat_resource) names its task's seats claim
// (placement.claim) instead, shared with the task's other workers on that device, and says its
// charged share in api::kGpuSeatAnnotation. The claim: one device of `device_class` (selected as a
// template's are), for `node` (kube-scheduler allocates it where its first pod is pinned), owned
// by the task and labelled as its seats claim there (the planner counts the claim, not the pods).
json gpu_seats_claim(const TaskSpec& spec, const std::string& device_class, const std::string& node, const std::string& name);
inline constexpr const char* kGpuClaim = "gpus";  // the claim's name in the pod and its request's
// An MPI launcher is created with its workers. Its last init container (kWaitForWorkers, the
// launcher's image and ssh settings) waits until every worker in the hostfile answers over ssh, so
// mpirun starts only when it can reach them all; after VALLEY_WORKERS_WAIT_SECONDS (the launcher's
// env, default kWorkersWaitSeconds) it fails the pod, naming the worker.
inline constexpr const char* kWaitForWorkers = "valley-wait-for-workers";
inline constexpr int kWorkersWaitSeconds = 1800;
// It mounts /etc/mpi/hostfile and /etc/mpi/discover_hosts.sh from its annotations: the hostfile
// (api::kHostfileAnnotation), which a merge patch rewrites on a running launcher (the kubelet then
// rewrites the file), and Horovod elastic's discovery script, which reads the hostfile.
// Where the launcher may run. It holds no GPU, but its loss restarts the whole gang, so it goes:
// - never on nodes with a `stay_off` label=value (spot capacity, for a task that does not checkpoint:
//   a termination notice would restart it from the beginning);
// - on nodes with every `pool` label=value, when the operator names a launcher pool (stable CPU
//   capacity); both are required node affinity, added to each of the template's own terms;
// - else preferably beside worker 0 (preferred pod affinity on the node's hostname): a node whose loss
//   restarts the gang anyway, not one more;
// - and always on the nodes Valley plans on (`nodes`, its --node-selector; required node affinity):
//   a node outside them is not in Valley's cache, where the launcher would look lost.
struct LauncherPlacement {
  std::vector<std::pair<std::string, std::string>> stay_off, pool;
  std::vector<kube::LabelRequirement> nodes;
};
json launcher_pod(const TaskSpec& spec, const Shape& shape, const LauncherPlacement& placement = {});
json headless_service(const TaskSpec& spec);
// The hostfile has one line per worker: "<worker>.<service>.<ns>.svc slots=<n>".
std::string hostfile(const TaskSpec& spec, int workers);
// The API server takes at most this many bytes of annotations (keys and values) on an object.
inline constexpr size_t kMaxAnnotationBytes = 256 * 1024;
// Why an MPI task's launcher could not carry its hostfile at spec.replicas.max workers (its
// annotations, the user's template's included, would pass kMaxAnnotationBytes); nullopt if it can.
std::optional<std::string> launcher_too_large(const TaskSpec& spec);
// The bytes (keys and values) of the annotations launcher_pod writes for `workers` workers.
size_t launcher_annotation_bytes(const TaskSpec& spec, int workers);
json ssh_secret(const TaskSpec& spec, const SshKeyPair& keys);

}  // namespace valley::render
