#include "cmd/valley-operator/options.h"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "controllers/api/vendors.h"
#include "operator/duration.h"
#include "operator/kube/config.h"
#include "operator/kube/label_selector.h"
#include "operator/metrics/registry.h"
#include "operator/storage/address_filter.h"

namespace valley::op {

Flags make_flags() {
  return valley::Flags({
      {"kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, in-cluster, then ~/.kube/config"},
      {"context", "", "kubeconfig context to use; empty: the current context"},
      {"log-level", "info", "trace, debug, info, warn or error"},
      {"log-format", "text", "text or json (one object a line, with the task key when there is one)"},
      {"http-bind-address", ":8080", "where /healthz and /readyz (and /metrics, unless --metrics-bind-address) are served; empty: nowhere"},
      {"metrics-bind-address", "", "serve /metrics here instead, on its own port (so a NetworkPolicy can open it to Prometheus only)"},
      {"kube-api-qps", "50", "client-side limit on requests per second to the API server"},
      {"kube-api-burst", "100", "requests allowed above kube-api-qps in a burst"},
      {"workers", "8", "TrainingTask reconciles at once (a reconcile mostly waits on the API server)"},
      {"status-coalesce-window", "2s",
       "hold a status change that only updates counts, cost or utilization this long for the next change worth writing (0: write each)"},
      {"debug-task-watch-delay", "0s", "testing only: apply TrainingTask watch events this much later than they arrive"},
      {"debug-verify-plan-inputs", "false",
       "testing only: each plan also rebuilds every task's plan input and plans again; a different decision is logged and counted", true},
      {"max-concurrent-creates", "32",
       "object creates in flight at once across all tasks (a task's pods go out together; kube-api-qps still applies)"},
      {"plan-interval", "1s",
       "while changes keep coming, plan at most this often (and spend at most a tenth of the time planning); a change after a quiet spell is planned within 50ms"},
      {"planner-min-resize-interval", "5m", "a running task is resized at most this often (checkpoint-restarts cost time)"},
      {"planner-min-gain-workers", "1", "grow a running task only by at least this many workers"},
      {"planner-min-gain-fraction", "0.25", "... and by at least this fraction of its current size"},
      {"planner-aging-step", "10m", "a waiting task gains one priority point per this much waiting"},
      {"unschedulable-timeout", "60s", "re-plan a worker its planned node has not bound after this long"},
      {"disruption-taints", "aws-node-termination-handler/spot-itn,karpenter.sh/disrupted,cloud.google.com/impending-node-termination",
       "node taint keys that announce a node is going away (comma-separated): its tasks checkpoint and move"},
      {"prometheus-url", "", "Prometheus (http://host:9090) holding DCGM-exporter's metrics: GPU faults there (XIDs, ECC, row remaps, heat) move tasks too; empty: not read"},
      {"gpu-health-interval", "15s", "how often the GPU health queries run against --prometheus-url"},
      {"gpu-utilization-interval", "60s", "how often a running task's status.utilization takes in a new reading of its GPUs"},
      {"gpu-health-window", "5m", "a DCGM signal counts while it showed within this window (a temperature: for all of it)"},
      {"gpu-fault-xids", "48,64,74,79,94,95,119,120", "XID codes that mean the GPU, not the program, failed"},
      {"gpu-temperature-limit", "90", "degrees C: a GPU at or above it for the whole --gpu-health-window is a fault"},
      {"gpu-fault-conditions", "Gpu*Watch,SysLogsXIDError,SysLogsSXIDError,SysLogsGPUFallenOff,NVSwitchFatalError,NVSwitchDown",
       "node condition types ('*' matches any run) that report a GPU fault while True (NVSentinel's defaults; add Node Problem Detector's): its workers checkpoint and move"},
      {"gpu-fault-taints", "nvidia.com/gpu-xid-error,nvidia.com/gpu-nvlink-error,nvidia.com/syslog-xid-error,nvidia.com/gpu-error",
       "node taint keys that report a GPU fault (comma-separated): its workers checkpoint and move"},
      {"spot-labels", "karpenter.sh/capacity-type=spot,eks.amazonaws.com/capacityType=SPOT,cloud.google.com/gke-spot=true,cloud.google.com/gke-preemptible=true",
       "node labels (key=value, comma-separated) that mark spot/preemptible capacity"},
      {"node-not-ready-grace", "30s", "a node NotReady/Unknown this long is lost: its tasks restart elsewhere"},
      {"failure-settle", "10s", "wait this long after a launcher's permanent-looking exit for a disruption that explains it"},
      {"refused-retry", "10m",
       "after the API server refuses a task's objects in a way retrying cannot heal (Pod Security, an invalid object, an admission policy), they are tried again when the task's spec or its namespace's labels change, or after this long"},
      {"start-grace", "3m", "pods that cannot start this long (image pull, missing Secret, unschedulable launcher) give their GPUs back; a task's runPolicy.startGraceSeconds overrides"},
      {"checkpoint-poll-interval", "30s", "how often each task's latest.json is read from its s3:// store"},
      {"outputs-finalizer", "false",
       "hold a task that ran and keeps outputs with the valley.dev/outputs finalizer, so that once deleted it goes only after its "
       "pods' uploads and Valley's report (partial); every release since its introduction removes it, this adds it", true},
      {"outputs-on-delete-timeout", "10m",
       "how long a task deleted before its outputs were kept is held for them (its pods' uploads and Valley's report); "
       "past it the task goes without them, with a Warning Event"},
      {"pricing-policy", "default", "the cluster-scoped PricingPolicy that prices tasks"},
      {"namespace", "", "run only the TrainingTasks of this namespace (empty: every namespace); pods of every namespace still count as capacity taken"},
      {"node-selector", "",
       "a label selector (as kubectl get nodes -l takes): Valley plans only on the nodes it selects and leaves the others to "
       "other schedulers or other Valley instances; empty: every node"},
      {"instance-types", "",
       "a JSON file of the instance types Karpenter NodePools buy (the format of Karpenter's kwok provider: name, resources, "
       "offerings with capacity type and zone): Valley then reads NodePools (karpenter.sh/v1) and plans on the nodes they may "
       "still buy as well as on those that exist; empty: only nodes that exist"},
      {"provisioning-delay", "60s", "how long a NodePool takes from a pending pod to a node it can bind to, where --provisioning-delays does not say"},
      {"provisioning-timeout", "10m",
       "workers waiting this long for the nodes a NodePool is to buy give their gang's capacity back (its pods go; it is planned again after a backoff)"},
      {"provisioning-delays", "", "per NodePool (pool=duration, comma-separated): how long it takes to buy a node"},
      {"topology-levels", "clique=nvidia.com/gpu.clique,block=valley.dev/topology-block,rack=valley.dev/topology-rack,zone=topology.kubernetes.io/zone",
       "topology levels, narrowest first (name=node label, comma-separated): a task's spec.topology names one; a gang keeps to the narrowest domains it can; empty: nodes only"},
      {"dra-drivers", "gpu.nvidia.com=nvidia,gpu.amd.com=amd,gpu.intel.com=intel",
       "DRA drivers whose devices are GPUs (driver=vendor, or driver=vendor:DeviceClass when the class is not named after the driver), comma-separated"},
      {"dra-product-attributes", "productName,model", "device attributes read as a DRA GPU's product (pricing keys on it), first found wins"},
      {"dra-shared-drivers", "gpu.nvidia.com",
       "those of --dra-drivers that let the pods of one claim share its devices (comma-separated): a task's fractional workers then sit several to a device (as many as their share allows) on a claim Valley makes, instead of taking a device each"},
      {"launcher-node-selector", "",
       "node labels (key=value, comma-separated) of the launcher pool: MPI launchers run only there (stable capacity; a launcher holds no GPU but its loss restarts the gang); empty: beside worker 0"},
      {"pod-security", "Baseline",
       "the Pod Security level (Baseline or Restricted) Valley renders pods for when a task sets no spec.podSecurity.level"},
      {"task-network-policies", "true",
       "give each task a NetworkPolicy that admits only its own pods (and the ports its templates declare) to its pods; false: leave isolation to the cluster's own policies", true},
      {"task-egress-except", "",
       "CIDRs (comma-separated) a task's pods may not reach, e.g. the cluster's pod and service ranges and 169.254.169.254/32: with --task-network-policies, each task then reaches only its own pods, DNS and addresses outside these (its store); empty: egress open"},
      {"io-image", "",
       "the image with valley-io for task pods' data-in and outputs containers; empty: the operator's own pod's image (POD_NAME), else ghcr.io/valley-dev/valley-operator:<version>"},
      {"data-cache-class", "",
       "a StorageClass with volumeBindingMode WaitForFirstConsumer (a node-local provisioner, or local PVs): a task's spec.data is copied once per node into a claim of it, which the task's later pods there reuse (copying only what changed) until the task ends; empty: a copy per pod, in an emptyDir"},
      {"cost-interval", "30s", "how often a running task's accrued cost is brought up to date in its status"},
      {"progress-writes-per-second", "5",
       "at most this many status writes a second across all admitted tasks that only bring progress up to date (accrued cost, counts, utilization): with more tasks than cost-interval x this many, each task's are written less often; 0: no limit"},
      {"usage-half-life", "168h", "tenants' fair share: how fast past GPU usage stops counting (Slurm's PriorityDecayHalfLife)"},
      {"tenant-interval", "10s", "how often a Tenant's status (usage, share, spend) is brought up to date at least"},
      {"cost-settle", "15s", "a running pod is charged up to this long ago: its end may reach Valley late, and the accrued cost never goes down"},
      {"leader-elect", "true", "run controllers only while holding the leader Lease", true},
      {"leader-elect-namespace", "", "namespace of the leader Lease; empty: the service account's namespace"},
      {"tenancy-configmap", "valley-tenancy",
       "ConfigMap (name, or namespace/name; default namespace: the leader Lease's) where namespace -> tenant ownership is published for deploy/policies; empty: none"},
      {"leader-elect-name", "valley-operator", "name of the leader Lease"},
      {"leader-elect-identity", "", "this process's identity in the Lease; empty: hostname_random"},
      {"leader-elect-lease-duration", "15s", "how long a lease stays valid after its last renewal"},
      {"leader-elect-renew-deadline", "10s", "how long the leader keeps trying to renew before stepping down"},
      {"leader-elect-retry-period", "2s", "time between attempts to acquire or renew"},
      {"version", "false", "print the version and exit", true},
      {"help", "false", "print this help and exit", true},
  });
}

namespace {

std::chrono::milliseconds duration_flag(const Flags& flags, const std::string& name) {
  auto d = parse_duration(flags.get(name));
  if (!d) throw std::invalid_argument("--" + name + "=" + flags.get(name) + " is not a duration like 15s or 1m");
  return *d;
}

kube::HttpOptions http_options(const Flags& flags) {
  kube::HttpOptions http;
  http.qps = std::stod(flags.get("kube-api-qps"));
  {
    auto& requests = metrics::registry().counter("valley_api_requests_total", "Requests to the API server by verb and HTTP code.",
                                                         {"verb", "code"});
    auto& latency = metrics::registry().histogram("valley_api_request_duration_seconds",
                                                          "API server request latency by verb and HTTP code (0: no answer).", {"verb", "code"});
    http.observer = [&requests, &latency](const std::string& verb, long code, std::chrono::nanoseconds took) {
      requests.inc({verb, std::to_string(code)});
      latency.observe({verb, std::to_string(code)}, std::chrono::duration<double>(took).count());
    };
  }
  http.burst = std::stoi(flags.get("kube-api-burst"));
  return http;
}

// A flag of key=value pairs, comma-separated.
std::vector<std::pair<std::string, std::string>> label_pairs(const Flags& flags, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& kv : split_list(flags.get(name))) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--" + name + ": \"" + kv + "\" is not key=value");
    pairs.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
  }
  return pairs;
}

// The GPU health signals (DCGM-exporter through Prometheus, node conditions and taints) and spot labels.
void node_signal_options(const Flags& flags, task::ControllerOptions& o) {
  auto seconds = [&](const char* name) { return std::chrono::duration_cast<std::chrono::seconds>(duration_flag(flags, name)); };
  o.node_facts.disruption_taints = split_list(flags.get("disruption-taints"));
  o.node_facts.gpu_fault_conditions = split_list(flags.get("gpu-fault-conditions"));
  o.node_facts.gpu_fault_taints = split_list(flags.get("gpu-fault-taints"));
  o.prometheus_url = flags.get("prometheus-url");
  o.gpu_health_interval = seconds("gpu-health-interval");
  o.utilization_interval = seconds("gpu-utilization-interval");
  o.gpu_health.window = seconds("gpu-health-window");
  o.gpu_health.critical_xids.clear();
  for (const auto& x : split_list(flags.get("gpu-fault-xids"))) {
    char* end = nullptr;
    const long code = std::strtol(x.c_str(), &end, 10);
    if (end == x.c_str() || *end != '\0' || code <= 0 || code > 100000)
      throw std::invalid_argument("--gpu-fault-xids: \"" + x + "\" is not an XID code");
    o.gpu_health.critical_xids.insert(static_cast<int>(code));
  }
  {
    char* end = nullptr;
    const std::string limit = flags.get("gpu-temperature-limit");
    o.gpu_health.temperature_limit = std::strtod(limit.c_str(), &end);
    if (end == limit.c_str() || *end != '\0' || o.gpu_health.temperature_limit <= 0)
      throw std::invalid_argument("--gpu-temperature-limit=" + limit + " is not a temperature in degrees C");
  }
  if (o.gpu_health_interval.count() < 1 || o.gpu_health.window.count() < 1)
    throw std::invalid_argument("--gpu-health-interval and --gpu-health-window must be at least 1s");
  o.node_facts.spot_labels = label_pairs(flags, "spot-labels");
  o.node_facts.dra_drivers.clear();
  for (const auto& [driver, value] : label_pairs(flags, "dra-drivers")) {
    const auto colon = value.find(':');
    const std::string vendor = value.substr(0, colon), device_class = colon == std::string::npos ? driver : value.substr(colon + 1);
    if (!api::is_vendor(vendor))
      throw std::invalid_argument("--dra-drivers: " + driver + "=" + value + ": the vendor must be nvidia, amd or intel");
    if (device_class.empty()) throw std::invalid_argument("--dra-drivers: " + driver + "=" + value + " names no DeviceClass");
    o.node_facts.dra_drivers.push_back({driver, vendor, device_class});
  }
  const auto shared = split_list(flags.get("dra-shared-drivers"));
  for (auto& d : o.node_facts.dra_drivers) d.shared = std::find(shared.begin(), shared.end(), d.driver) != shared.end();
  o.node_facts.dra_product_attributes = split_list(flags.get("dra-product-attributes"));
}

task::ControllerOptions controller_options(const Flags& flags) {
  task::ControllerOptions o;
  o.workers = std::stoi(flags.get("workers"));
  o.planner.min_resize_interval =
      std::chrono::duration_cast<std::chrono::seconds>(duration_flag(flags, "planner-min-resize-interval"));
  o.planner.min_gain_workers = std::stoi(flags.get("planner-min-gain-workers"));
  o.planner.min_gain_fraction = std::stod(flags.get("planner-min-gain-fraction"));
  o.unschedulable_timeout =
      std::chrono::duration_cast<std::chrono::seconds>(duration_flag(flags, "unschedulable-timeout"));
  o.planner.aging_step = std::chrono::duration_cast<std::chrono::seconds>(duration_flag(flags, "planner-aging-step"));
  if (o.workers < 1) throw std::invalid_argument("--workers must be at least 1");
  o.max_concurrent_creates = std::stoi(flags.get("max-concurrent-creates"));
  o.plan_interval = std::chrono::duration_cast<std::chrono::milliseconds>(duration_flag(flags, "plan-interval"));
  if (o.plan_interval.count() < 0) throw std::invalid_argument("--plan-interval must not be negative");
  o.status_hold_window = std::chrono::duration_cast<std::chrono::milliseconds>(duration_flag(flags, "status-coalesce-window"));
  o.verify_plan_inputs = flags.get_bool("debug-verify-plan-inputs");
  o.task_watch_delay = std::chrono::duration_cast<std::chrono::milliseconds>(duration_flag(flags, "debug-task-watch-delay"));
  if (o.max_concurrent_creates < 1) throw std::invalid_argument("--max-concurrent-creates must be at least 1");
  auto seconds = [&](const char* name) {
    return std::chrono::duration_cast<std::chrono::seconds>(duration_flag(flags, name));
  };
  o.disruption.node_not_ready_grace = seconds("node-not-ready-grace");
  o.disruption.failure_settle = seconds("failure-settle");
  o.disruption.start_grace = seconds("start-grace");
  o.refused_retry = seconds("refused-retry");
  o.checkpoint_poll = seconds("checkpoint-poll-interval");
  o.outputs_on_delete = seconds("outputs-on-delete-timeout");
  o.outputs_finalizer = flags.get_bool("outputs-finalizer");
  o.pricing_policy = flags.get("pricing-policy");
  o.watch_namespace = flags.get("namespace");
  o.node_selector = flags.get("node-selector");
  if (auto requirements = kube::parse_label_selector(o.node_selector)) o.node_requirements = std::move(*requirements);
  else throw std::invalid_argument("--node-selector=" + o.node_selector + " is not a label selector like pool=a100,!dedicated");
  o.launcher_pool = label_pairs(flags, "launcher-node-selector");
  o.planner.launcher_pool = o.launcher_pool;  // the plan admits a gang only where its launcher can go
  if (const std::string path = flags.get("instance-types"); !path.empty()) {
    std::string text;
    try {
      text = kube::read_file(path, "--instance-types");
    } catch (const std::exception& e) {
      throw std::invalid_argument(e.what());
    }
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded()) throw std::invalid_argument("--instance-types=" + path + ": not JSON");
    o.instance_types = api::read_catalogue(doc);
    if (!o.instance_types.error.empty()) throw std::invalid_argument("--instance-types=" + path + ": " + o.instance_types.error);
    if (o.instance_types.types.empty()) throw std::invalid_argument("--instance-types=" + path + ": lists no instance type");
  }
  o.provisioning.default_delay = seconds("provisioning-delay");
  o.disruption.provisioning_timeout = seconds("provisioning-timeout");
  if (o.disruption.provisioning_timeout.count() < 1) throw std::invalid_argument("--provisioning-timeout must be at least 1s");
  for (const auto& [pool, text] : label_pairs(flags, "provisioning-delays")) {
    auto d = valley::parse_duration(text);
    if (!d) throw std::invalid_argument("--provisioning-delays: " + pool + "=" + text + " is not a duration like 90s");
    o.provisioning.delay[pool] = std::chrono::duration_cast<std::chrono::seconds>(*d);
  }
  for (const auto& [name, label] : label_pairs(flags, "topology-levels")) {
    if (label.empty()) throw std::invalid_argument("--topology-levels: the level " + name + " names no node label");
    for (const auto& l : o.planner.topology)
      if (l.name == name || l.label == label) throw std::invalid_argument("--topology-levels: " + name + "=" + label + " repeats a level or label");
    o.planner.topology.push_back({name, label});
  }
  if (flags.get("pod-security") == "Restricted") o.pod_security = api::PodSecurityLevel::Restricted;
  else if (flags.get("pod-security") != "Baseline")
    throw std::invalid_argument("--pod-security=" + flags.get("pod-security") + " must be Baseline or Restricted");
  o.io_image = flags.get("io-image");
  o.data_cache_class = flags.get("data-cache-class");
  o.task_network_policies = flags.get_bool("task-network-policies");
  for (const auto& c : valley::split_list(flags.get("task-egress-except"))) {
    if (!valley::storage::valid_cidr(c)) throw std::invalid_argument("--task-egress-except: \"" + c + "\" is not a CIDR");
    o.task_egress_except.push_back(c);
  }
  o.cost_interval = seconds("cost-interval");
  if (o.cost_interval.count() < 1) throw std::invalid_argument("--cost-interval must be at least 1s");
  try {
    o.progress_writes_per_second = std::stod(flags.get("progress-writes-per-second"));
  } catch (const std::exception&) {
    o.progress_writes_per_second = -1;
  }
  if (!(o.progress_writes_per_second >= 0))
    throw std::invalid_argument("--progress-writes-per-second=" + flags.get("progress-writes-per-second") + " must be a number >= 0");
  o.cost_settle = seconds("cost-settle");
  o.usage_half_life = seconds("usage-half-life");
  o.tenant_interval = seconds("tenant-interval");
  if (o.usage_half_life.count() < 60) throw std::invalid_argument("--usage-half-life must be at least 1m");
  if (o.tenant_interval.count() < 1) throw std::invalid_argument("--tenant-interval must be at least 1s");
  if (o.cost_settle.count() < 0 || o.cost_settle > std::chrono::minutes(10))
    throw std::invalid_argument("--cost-settle must be from 0s to 10m");
  if (o.checkpoint_poll.count() < 1) throw std::invalid_argument("--checkpoint-poll-interval must be at least 1s");
  node_signal_options(flags, o);
  return o;
}

ManagerOptions manager_options(const Flags& flags) {
  ManagerOptions options;
  options.leader_elect = flags.get_bool("leader-elect");
  auto& le = options.leader_election;
  le.lease_name = flags.get("leader-elect-name");
  le.identity = flags.get("leader-elect-identity");
  if (le.identity.empty()) le.identity = kube::default_identity();
  le.lease_duration = duration_flag(flags, "leader-elect-lease-duration");
  le.renew_deadline = duration_flag(flags, "leader-elect-renew-deadline");
  le.retry_period = duration_flag(flags, "leader-elect-retry-period");
  if (le.lease_duration <= le.renew_deadline || le.renew_deadline.count() <= le.retry_period.count() * 1.2)
    throw std::invalid_argument("leader election needs lease-duration > renew-deadline > 1.2 x retry-period");
  return options;
}

}  // namespace

OperatorOptions parse_options(const Flags& flags) {
  OperatorOptions o;
  o.http = http_options(flags);
  o.controllers = controller_options(flags);
  o.manager = manager_options(flags);
  return o;
}

void with_namespace(OperatorOptions& o, const Flags& flags, const std::string& default_namespace) {
  if (o.manager.leader_election.lease_namespace = flags.get("leader-elect-namespace"); o.manager.leader_election.lease_namespace.empty())
    o.manager.leader_election.lease_namespace = default_namespace;
  if (const std::string cm = flags.get("tenancy-configmap"); cm.find('/') != std::string::npos) {
    o.controllers.ownership_namespace = cm.substr(0, cm.find('/'));
    o.controllers.ownership_name = cm.substr(cm.find('/') + 1);
  } else {
    o.controllers.ownership_namespace = o.manager.leader_election.lease_namespace;
    o.controllers.ownership_name = cm;
  }
}

}  // namespace valley::op
