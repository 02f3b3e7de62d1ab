#include "controllers/inputs/snapshot.h"

#include <algorithm>
#include <cctype>

#include "controllers/api/quantity.h"
#include "controllers/api/task_status.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/gpu/resources.h"
#include "controllers/render/render.h"
#include "operator/kube/json_fields.h"
#include "operator/text.h"

namespace valley::planner {
namespace {

const json& field(const json& o, const char* name) { return kube::object_at(o, name); }

}  // namespace

bool matches_pattern(const std::string& pattern, const std::string& name) {
  // Iterative glob with backtracking to the last '*': linear in practice, no recursion.
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Node with_gpu_fault(Node n, const std::string& fault) {
  if (!fault.empty()) {
    n.fault = fault;
    n.schedulable = false;
  }
  return n;
}

namespace {
// A node whose device plugin shares its GPUs through MPS or time-slicing, saying how many replicas
// a GPU has, offers its replicas as 1/R of a GPU each (gpu::replicas_resource), under the key its
// own and its pods' requests are counted as. Time-sliced replicas of a node that does not say R
// stay nvidia.com/gpu.shared (kTimeSlicedShareMilli each).
void count_replicas(Node& n) {
  auto strategy = n.labels.find(gpu::kSharingStrategyLabel);
  auto replicas = n.labels.find(gpu::kReplicasLabel);
  if (replicas == n.labels.end()) return;
  const bool mps = strategy != n.labels.end() && strategy->second == "mps";
  const bool time_sliced = strategy != n.labels.end() && strategy->second == "time-slicing";
  const int64_t r = api::extended_quantity(replicas->second);
  if (r < 2 || r > 999) return;
  for (const char* resource : gpu::kReplicaDeviceResources) {
    auto cap = n.capacity.find(resource);
    // Without a strategy label, only the renamed resource is known to be replicas.
    if (cap == n.capacity.end() || (!mps && !time_sliced && std::string(resource) != gpu::kTimeSliced)) continue;
    n.replicas_resource = gpu::replicas_resource(mps ? gpu::Sharing::Mps : gpu::Sharing::TimeSliced, static_cast<int>(r), resource);
    n.capacity[n.replicas_resource] = cap->second;
    n.free[n.replicas_resource] = n.free[resource];
    n.capacity.erase(resource);
    n.free.erase(resource);
    return;
  }
}
}  // namespace

Node node_from(const json& node, const NodeFacts& facts) {
  Node n;
  const json& meta = field(node, "metadata");
  n.name = kube::string_at(meta, "name");
  n.labels = kube::labels_of(node);
  for (const auto& [k, v] : field(field(node, "status"), "allocatable").items()) {
    if (!gpu::is_gpu_resource(k)) continue;
    int64_t units = api::extended_quantity(v);
    if (units <= 0) continue;
    n.free[k] = units;
    n.capacity[k] = units;
    if (std::string vendor = gpu::vendor_of_whole(k); !vendor.empty()) n.vendor = vendor;
    else if (n.vendor.empty()) n.vendor = k.substr(0, k.find('.'));  // MIG slices and replicas alone: NVIDIA's
  }
  count_replicas(n);
  for (const auto& [k, v] : field(field(node, "status"), "allocatable").items()) {
    if (!api::is_node_room_resource(k)) continue;
    const auto units = api::quantity_of(v, k == api::kCpu ? 1000 : 1);
    if (!units) continue;
    n.room[k] = *units;
    n.room_capacity[k] = *units;
  }
  for (const auto& [key, value] : facts.spot_labels) {
    auto it = n.labels.find(key);
    if (it != n.labels.end() && it->second == value) n.capacity_class = "spot";
  }
  const json& spec = field(node, "spec");
  bool cordoned = spec.contains("unschedulable") && spec["unschedulable"] == true;
  bool notice = false;
  if (auto taints = spec.find("taints"); taints != spec.end() && taints->is_array()) {
    for (const auto& t : *taints) {
      if (!t.is_object()) continue;
      std::string key = kube::string_at(t, "key");
      if (std::find(facts.disruption_taints.begin(), facts.disruption_taints.end(), key) != facts.disruption_taints.end()) {
        notice = true;
        n.notice = key;
      }
      if (n.fault.empty() && std::find(facts.gpu_fault_taints.begin(), facts.gpu_fault_taints.end(), key) != facts.gpu_fault_taints.end()) {
        const std::string value = kube::string_at(t, "value");
        n.fault = "taint " + key + (value.empty() ? "" : "=" + value);
      }
      std::string effect = kube::string_at(t, "effect");
      if (effect == "NoSchedule" || effect == "NoExecute") n.taints.push_back({key, kube::string_at(t, "value"), effect});
    }
  }
  bool ready = false;
  if (auto conds = field(node, "status").find("conditions"); conds != field(node, "status").end() && conds->is_array())
    for (const auto& c : *conds) {
      const std::string type = kube::string_at(c, "type");
      if (type == "Ready") {
        ready = kube::string_at(c, "status") == "True";
        if (!ready) n.not_ready_since = kube::time_at(c, "lastTransitionTime");
      } else if (kube::string_at(c, "status") == "True" && n.fault.empty() &&
                 std::any_of(facts.gpu_fault_conditions.begin(), facts.gpu_fault_conditions.end(),
                             [&](const std::string& p) { return matches_pattern(p, type); })) {
        // The condition's own words say which GPU and what went wrong ("[DCGM_FR_...] ... GPU 3").
        std::string message = kube::string_at(c, "message");
        if (message.size() > 200) message = utf8_head(message, 200) + "...";
        n.fault = "condition " + type + (message.empty() ? "" : ": " + message);
      }
    }
  n.ready = ready;
  n.cordoned = cordoned;
  n.schedulable = ready && !cordoned && !notice && n.fault.empty();
  return n;
}

int64_t share_on_node(const api::Pod& pod, const Node& node) {
  int64_t milli = 0;
  for (const auto& [resource, count] : gpu::device_requests(pod)) milli += gpu::share_milli(counted_as(node, resource), count);
  return milli;
}

std::map<std::string, int64_t> room_requests(const api::Pod& pod) {
  auto out = gpu::pod_requests(pod, [](const std::string& k) { return api::is_node_room_resource(k); });
  out[api::kPods] = 1;
  return out;
}

std::map<std::string, int64_t> room_usage(const api::Pod& pod) {
  if (pod.phase == "Succeeded" || pod.phase == "Failed") return {};
  return room_requests(pod);
}

std::map<std::string, int64_t> worker_room(const api::TaskSpec& spec) {
  const render::WorkerPlacement placement = render::default_placement(spec);
  return room_requests(api::pod_from(render::worker_pod(spec, 0, render::Shape{}, placement)));
}

PodRooms pod_rooms(const api::TaskSpec& spec) {
  PodRooms r{worker_room(spec), {}};
  if (spec.type == api::TaskType::MPI) r.launcher = room_requests(api::pod_from(render::launcher_pod(spec, render::Shape{})));
  return r;
}

void lay_rooms(Task& t, const PodRooms& rooms) {
  t.worker_room = rooms.worker;
  if (t.launcher) t.launcher->room = rooms.launcher;
}

std::string counted_as(const Node& n, const std::string& resource) {
  if (n.replicas_resource.empty()) return resource;
  const auto r = gpu::replicas_of(n.replicas_resource);
  return r && r->resource == resource ? n.replicas_resource : resource;
}

void subtract(Node& node, const api::Pod& pod) {
  for (const auto& [k, v] : gpu::gpu_usage(pod)) node.free[counted_as(node, k)] -= v;
  for (const auto& [k, v] : room_usage(pod)) node.room[k] -= v;
}

namespace {
// A pod template's nodeSelector, required node affinity terms and tolerations.
void read_node_constraints(const json& tmpl_spec, std::map<std::string, std::string>& selector,
                           std::vector<std::vector<NodeRequirement>>& terms, std::vector<Toleration>& tolerations) {
  for (const auto& [k, v] : field(tmpl_spec, "nodeSelector").items())
    if (v.is_string()) selector[k] = v.get<std::string>();
  for (const auto& term : kube::array_at(field(field(field(tmpl_spec, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
                                        "nodeSelectorTerms")) {
    std::vector<NodeRequirement> requirements;
    for (const char* list : {"matchExpressions", "matchFields"})
      for (const auto& e : kube::array_at(term, list)) {
        NodeRequirement r{kube::string_at(e, "key"), kube::string_at(e, "operator"), {}};
        for (const auto& v : kube::array_at(e, "values"))
          if (v.is_string()) r.values.push_back(v.get<std::string>());
        requirements.push_back(std::move(r));
      }
    terms.push_back(std::move(requirements));
  }
  if (auto tols = tmpl_spec.find("tolerations"); tols != tmpl_spec.end() && tols->is_array())
    for (const auto& tol : *tols)
      if (tol.is_object())
        tolerations.push_back({kube::string_at(tol, "key"), kube::string_at(tol, "operator", "Equal"), kube::string_at(tol, "value"),
                               kube::string_at(tol, "effect")});
}
}  // namespace

Task task_from(const api::TaskSpec& spec, const json& task_object, const std::vector<api::Pod>& owned_pods) {
  std::vector<const api::Pod*> pods;
  for (const auto& p : owned_pods) pods.push_back(&p);
  Task t = task_with_pods(spec, task_object, pods);
  lay_rooms(t, pod_rooms(spec));
  return t;
}

Task task_with_pods(const api::TaskSpec& spec, const json& task_object, const std::vector<const api::Pod*>& owned_pods) {
  Task t;
  t.key = spec.ns + "/" + spec.name;
  t.priority = spec.priority;
  t.reduce_cost = spec.reduce_cost;
  t.vendors = spec.vendors;
  t.hot_elastic = spec.hot_elastic;
  if (spec.topology) t.topology = TopologyRule{spec.topology->level, spec.topology->required};
  if (spec.devices) {
    t.device_class = spec.devices->device_class;
    t.device_attributes = spec.devices->match_attributes;
  }
  t.checkpointed = !spec.checkpoint_uri.empty();
  t.min_workers = spec.type == api::TaskType::Single ? 1 : spec.min_workers;
  t.max_workers = spec.type == api::TaskType::Single ? 1 : spec.max_workers;
  t.pinned_workers = spec.target_workers;
  t.estimated_duration = spec.estimated_duration;
  t.gpu_milli = spec.gpus.milli;
  t.sharing_profile = spec.sharing_profile.value_or("");
  // Where the workers may go, from the worker pod template the user gave.
  read_node_constraints(field(spec.worker.pod_template, "spec"), t.node_selector, t.node_terms, t.tolerations);
  if (spec.type == api::TaskType::MPI) {
    Task::Launcher l;
    read_node_constraints(field(spec.launcher.pod_template, "spec"), l.node_selector, l.node_terms, l.tolerations);
    t.launcher = std::move(l);
  }
  const json& meta = field(task_object, "metadata");
  if (auto created = kube::time_at(meta, "creationTimestamp")) t.created = *created;
  const json status = api::readable_status(field(task_object, "status"));
  std::string phase = status.value("phase", "");
  int64_t epoch = status.value("epoch", int64_t{0});
  t.admitted = epoch > 0 && phase != "Succeeded" && phase != "Failed" && phase != "Suspended" && phase != "Pending";
  if (t.admitted) t.epoch_workers = static_cast<int>(status.value("epochReplicas", int64_t{0}));
  if (auto last = kube::parse_time(status.value("lastResizeTime", ""))) t.last_resize = *last;
  std::vector<std::pair<int, Task::Worker>> workers;
  for (const api::Pod* pod : owned_pods) {
    if (pod->label(render::label::kRole) != "worker") continue;
    if (pod->label(render::label::kEpoch) != std::to_string(epoch)) continue;
    std::string node = pod->node_name;
    const bool bound = !node.empty();
    if (!bound) node = pod->pinned;  // created but not bound yet: where it will be
    auto usage = gpu::gpu_usage(*pod);
    if (node.empty() || usage.empty()) continue;  // not placed yet, or finished
    int index = 0;
    try {
      const std::string& label = pod->label(render::label::kWorkerIndex);
      index = std::stoi(label.empty() ? "0" : label);
    } catch (const std::exception&) {
    }
    workers.push_back({index, Task::Worker{node, usage.begin()->first, usage.begin()->second, bound, index}});
  }
  std::sort(workers.begin(), workers.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [i, w] : workers) t.workers.push_back(w);
  return t;
}

std::vector<Task::Worker> planned_workers(const std::vector<Task::Worker>& published, const std::vector<Task::Worker>& live) {
  std::vector<Task::Worker> workers = published;
  for (const auto& w : live)
    if (w.bound && w.index >= 0 && static_cast<size_t>(w.index) < workers.size()) workers[static_cast<size_t>(w.index)] = w;
  return workers;
}

namespace {
// What of `object` (a node or a task) a plan reads, or may read: all of it but its version, its
// managed fields and a task's accrued cost.
json plan_relevant(const json& object) {
  json out = object;
  if (!out.is_object()) return out;
  if (auto meta = out.find("metadata"); meta != out.end() && meta->is_object()) {
    meta->erase("resourceVersion");
    meta->erase("managedFields");
  }
  if (auto status = out.find("status"); status != out.end() && status->is_object()) status->erase("cost");
  return out;
}
}  // namespace

bool replan_needed(const json& before, const json& after) { return plan_relevant(before) != plan_relevant(after); }

bool replan_needed(const api::Pod& before, const api::Pod& after) {
  // All of a pod a plan may read, less its version and its progress (conditions, container states,
  // start, phase short of whether it ended): a field added to api::Pod counts unless named here.
  auto plan_part = [](api::Pod p) {
    const bool ended = p.phase == "Succeeded" || p.phase == "Failed";
    p.resource_version.clear();
    p.phase = ended ? "ended" : "";
    p.reason.clear();
    p.start_time.reset();
    p.conditions.clear();
    p.container_statuses.clear();
    p.init_container_statuses.clear();
    return p;
  };
  return !(plan_part(before) == plan_part(after));
}

}  // namespace valley::planner
