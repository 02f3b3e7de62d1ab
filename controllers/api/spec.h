// A TrainingTask's spec as typed values, parsed from the object the API server stored. The CRD
// schema already refused most bad input; this parser is the second line for what slips past it
// (an older CRD, a hand-edited etcd, a field the schema cannot express) and turns it into a list
// of errors for an InvalidSpec condition rather than a crash.
// controllers/api/ (namespace valley::api, library valley_api) holds the API types every layer reads
// (the pure cores, the reconcilers, valleyctl); it depends on nothing of Valley's above the kube
// client, the storage URIs and the process plumbing.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace valley::api {

using json = nlohmann::json;

// MPI: a launcher (mpirun) and workers it reaches over SSH. PyTorch: workers only, each a torchrun
// agent of one c10d rendezvous that worker 0 hosts (no launcher, no SSH). Single: one pod.
enum class TaskType { MPI, Single, PyTorch };
const char* task_type_name(TaskType type);
// The type a name spells ("MPI", "Single", "PyTorch"), or nothing for any other name.
std::optional<TaskType> parse_task_type(const std::string& name);
// The port of a PyTorch task's rendezvous (torchrun's default for c10d) on worker 0.
inline constexpr int kRendezvousPort = 29400;
enum class CleanPodPolicy { Running, All, None };

struct ContainerSpec {
  std::string image;
  // Workers only: the image to use on a vendor's nodes (amdImage is vendorImages.amd); absent: image.
  std::map<std::string, std::string> vendor_images;
  const std::string& image_for(const std::string& vendor) const {
    auto it = vendor_images.find(vendor);
    return it == vendor_images.end() || it->second.empty() ? image : it->second;
  }
  std::vector<std::string> command, args;
  json resources = json::object();  // requests/limits besides GPUs
  json pod_template = json::object();  // optional PodTemplateSpec merged under Valley's pod
};

// GPUs per worker in thousandths: 1000 = one whole GPU, 500 = half (MIG slice or time-slice).
struct GpuRequest {
  int milli = 1000;
  bool whole() const { return milli % 1000 == 0; }
  int count() const { return milli / 1000; }
};

struct RunPolicy {
  int backoff_limit = 3;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int64_t> ttl_seconds_after_finished;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::Running;
  bool suspend = false;
  // How long its pods may fail to start (an image that cannot be pulled, ...) before its GPUs are
  // given back; unset: the operator's --start-grace.
  std::optional<int64_t> start_grace_seconds;
};

// The Pod Security Standards level Valley renders the task's pods for. Baseline: pods as the image
// defines them (MPI workers run sshd as root on port 22). Restricted: non-root (runAsUser, also the
// group and fsGroup), seccomp RuntimeDefault, no privilege escalation, every capability dropped;
// sshd listens on kRestrictedSshPort and reads the keys Valley mounts at kSshDir.
enum class PodSecurityLevel { Baseline, Restricted };
inline constexpr int kRestrictedSshPort = 2222;

struct PodSecurity {
  std::optional<PodSecurityLevel> level;  // absent: the operator's --pod-security default
  int64_t run_as_user = 1000;
};

// What Valley does about a task whose GPUs sit idle (mean utilization below `below_percent` for
// `after`), read from DCGM-exporter's metrics: Report (an Idle condition and Event), Shrink (to
// replicas.min), or Suspend (checkpoint and stop until the spec changes).
enum class IdleAction { Report, Shrink, Suspend };
struct IdlePolicy {
  IdleAction action = IdleAction::Report;
  int below_percent = 5;
  std::chrono::seconds after{1800};
};

struct TaskSpec {
  std::string name, ns, uid;
  int64_t generation = 0;
  TaskType type = TaskType::MPI;
  int priority = 0;
  bool priority_set = false;  // spec.priority given (else its tenant's defaultPriority applies)
  int min_workers = 1, max_workers = 1;
  std::optional<int> target_workers;  // kubectl scale
  // The GPU vendors its images run on, in kVendors order: spec.vendors (default nvidia), and amd
  // with amdSupport (the seed format's AMDSupport).
  std::vector<std::string> vendors = {"nvidia"};
  bool runs_on(const std::string& vendor) const { return std::find(vendors.begin(), vendors.end(), vendor) != vendors.end(); }
  bool reduce_cost = false;
  // spec.topology: the gang in one domain of a level the operator declares (--topology-levels):
  // required (it waits until one domain holds it) or preferred (else it spreads wider).
  struct Topology {
    std::string level;
    bool required = false;
  };
  std::optional<Topology> topology;
  ContainerSpec launcher;  // MPI only
  ContainerSpec worker;    // the MPI or PyTorch workers, or the one pod of a Single task
  bool has_launcher() const { return type == TaskType::MPI; }
  // Workers that find each other by name (the headless Service <task>-workers).
  bool has_worker_service() const { return type != TaskType::Single; }
  GpuRequest gpus;
  // spec.worker.devices: the workers' GPUs as DRA devices of this DeviceClass only, each of whose
  // attributes named here has that value. Names are the driver's own ("productName") or qualified
  // by their domain ("gpu.nvidia.com/productName"); values compare as text (string, integer,
  // boolean and version attributes).
  struct Devices {
    std::string device_class;
    std::map<std::string, std::string> match_attributes;
  };
  std::optional<Devices> devices;
  // spec.worker.sharing: the task may take half of a GPU split two ways beside another task's
  // worker, under this workload profile (the PricingPolicy's sharing pairs name profiles; default
  // the worker image); nullopt: never (a whole GPU per worker, as asked).
  std::optional<std::string> sharing_profile;
  // MPI ranks per worker; a PyTorch task's processes per worker (torchrun's nproc-per-node:
  // by default one per GPU).
  int slots_per_worker = 1;
  // Hot: workers are added or removed without a new epoch: an MPI workload follows
  // discover_hosts.sh (Horovod elastic) under its running launcher; a PyTorch task's torchrun agents
  // rendezvous again at the new size (its default). Restart (MPI's default): a resize is a new epoch.
  bool hot_elastic = false;
  PodSecurity pod_security;
  std::optional<IdlePolicy> idle_policy;  // absent: its tenant's, else Report after 30m below 5%
  std::string checkpoint_uri;     // s3://bucket/prefix or pvc://claim/path (operator/storage)
  std::string checkpoint_secret;  // Secret with AWS_* keys: read by Valley, given to the pods as env
  // The checkpoint window: the pods' terminationGracePeriodSeconds, so SIGTERM leaves the workload
  // this long to checkpoint before SIGKILL. Keep it within the cloud's notice (AWS spot: 120 s).
  int checkpoint_grace_seconds = 30;
  // spec.data: a data set copied into every worker before the workload starts (valley-io fetch).
  struct Data {
    std::string uri;         // s3://bucket/prefix
    std::string secret;      // its own secretRef, else the checkpoint's
    std::string mount_path;  // VALLEY_DATA_DIR in the pods
    // Filled in when observed: the operator's StorageClass for data kept on a node across the
    // task's pods (--data-cache-class; "" = a copy per pod) and the set's size as status.data
    // recorded it (0 = not listed yet: a copy per pod).
    std::string cache_class;
    uint64_t cache_bytes = 0;
  };
  std::optional<Data> data;
  // Where VALLEY_OUTPUT_DIR's files and Valley's report are kept: spec.outputs, else beside an
  // s3:// checkpoint (<checkpoint uri>/outputs); nullopt when neither.
  struct Outputs {
    std::string uri, secret;
  };
  std::optional<Outputs> outputs;
  std::string io_image;  // valley-io's image: the operator's setting, filled in when observed
  std::optional<std::chrono::milliseconds> estimated_duration;
  std::optional<int64_t> max_cost_micros;  // money as integer micro-units
  // spec.deadline: an RFC 3339 time, or a duration after the task's creation. A reduceCost task
  // waits for cheaper capacity only while it can still finish by then.
  std::optional<std::chrono::system_clock::time_point> deadline_at;
  std::optional<std::chrono::milliseconds> deadline_after;
  // The deadline as an instant, for a task created at `created`; nullopt without one.
  std::optional<std::chrono::system_clock::time_point> deadline(std::chrono::system_clock::time_point created) const {
    if (deadline_after) return created + *deadline_after;
    return deadline_at;
  }
  RunPolicy run_policy;
};

inline constexpr const char* kDefaultDataPath = "/valley/data";
inline constexpr const char* kOutputDir = "/valley/output";  // VALLEY_OUTPUT_DIR in the pods

struct ParsedTask {
  std::optional<TaskSpec> spec;     // set when errors is empty
  std::vector<std::string> errors;  // "spec.replicas.min: must be >= 1", ...
};

// A task whose spec, labels and annotations take more than this is refused: Valley writes its status
// (cost, conditions) beside them, and an object padded toward the API server's limit (etcd's 1.5 MiB)
// could no longer be charged or stopped through its status.
inline constexpr size_t kMaxTaskBytes = 256 * 1024;
ParsedTask parse_task(const json& object);
// Thousandths of a GPU the task's workers ask for at replicas.max, read from its spec alone (cheaper
// than parse_task, for counting what waiting tasks want); 0 when the spec does not say validly.
int64_t gpu_milli_at_max(const json& object);

// spec.idlePolicy of a TrainingTask or a Tenant (`path` prefixes the errors).
std::optional<IdlePolicy> parse_idle_policy(const json& o, const std::string& path, std::vector<std::string>* errors);


}  // namespace valley::api
