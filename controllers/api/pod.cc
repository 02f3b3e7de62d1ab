#include "controllers/api/pod.h"

#include <algorithm>
#include <cctype>

#include "controllers/api/nodepool.h"
#include "controllers/api/quantity.h"
#include "operator/kube/json_fields.h"

namespace valley::api {
namespace {

using json = nlohmann::json;
using kube::array_at;
using kube::object_at;
using kube::string_at;

std::vector<std::pair<std::string, int64_t>> kept_resources(const json& list) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [k, v] : list.items()) {
    if (k.find('/') != std::string::npos) {
      out.emplace_back(k, extended_quantity(v));
    } else if (k == kCpu || k == kMemory || k == kEphemeralStorage) {
      // What the API server took is a quantity; one that reads as none asks for nothing.
      out.emplace_back(k, quantity_of(v, k == kCpu ? 1000 : 1).value_or(0));
    }
  }
  return out;
}

std::vector<PodContainer> containers(const json& spec, const char* key) {
  std::vector<PodContainer> out;
  for (const auto& c : array_at(spec, key)) {
    const json& res = object_at(c, "resources");
    out.push_back({string_at(c, "name"), kept_resources(object_at(res, "limits")), kept_resources(object_at(res, "requests")),
                   string_at(c, "restartPolicy") == "Always"});
  }
  return out;
}

std::vector<PodContainerStatus> statuses(const json& status, const char* key) {
  std::vector<PodContainerStatus> out;
  for (const auto& cs : array_at(status, key)) {
    PodContainerStatus s;
    s.name = string_at(cs, "name");
    const json& state = object_at(cs, "state");
    s.running = state.contains("running");
    s.running_since = kube::time_at(object_at(state, "running"), "startedAt");
    s.terminated = state.contains("terminated");
    const json& t = object_at(state, "terminated");
    s.exit_code = kube::int_at(t, "exitCode");
    s.reason = string_at(t, "reason");
    s.message = string_at(t, "message");
    s.started = kube::time_at(t, "startedAt");
    s.finished = kube::time_at(t, "finishedAt");
    s.last_terminated_started = kube::time_at(object_at(object_at(cs, "lastState"), "terminated"), "startedAt");
    const json& waiting = object_at(state, "waiting");
    s.waiting_reason = string_at(waiting, "reason");
    s.waiting_message = string_at(waiting, "message");
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

int64_t extended_quantity(const json& v) {
  if (v.is_number_integer()) return v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), 1u << 30)) : std::max<int64_t>(0, v.get<int64_t>());
  if (!v.is_string()) return 0;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty() || s.size() > 12 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return 0;
  return std::stoll(s);
}

ClaimedGpus claimed_gpus(const std::string& annotation) {
  const auto eq = annotation.rfind('=');
  if (eq == std::string::npos || eq == 0) return {};
  const int64_t count = extended_quantity(annotation.substr(eq + 1));
  if (count <= 0) return {};
  return {annotation.substr(0, eq), count};
}

std::string price_class_annotation(const PriceClass& c) { return c.vendor + "/" + c.capacity_class + "/" + c.product; }

PriceClass price_class(const std::string& annotation) {
  // The product last: a DRA GPU's product attribute may hold any character.
  const auto first = annotation.find('/');
  const auto second = first == std::string::npos ? first : annotation.find('/', first + 1);
  if (first == 0 || second == std::string::npos || second == first + 1) return {};
  return {annotation.substr(0, first), annotation.substr(first + 1, second - first - 1), annotation.substr(second + 1)};
}

namespace {
constexpr const char* kSealedRecords[] = {kClaimedGpusAnnotation, kGpuSeatAnnotation, kMpsReplicasAnnotation, kTimeSlicedReplicasAnnotation,
                                          kPricedAsAnnotation};

// The records Valley reads on a pod, by annotation key (see kRecordsEnv): the seal's last entry
// (what the container sees too), or an earlier release's annotations; none on another's pod.
json records_of(const json& pod) {
  const json& meta = object_at(pod, "metadata");
  if (!made_by_valley(object_at(meta, "labels"))) return json::object();
  const json& containers = array_at(object_at(pod, "spec"), "containers");
  const json* sealed = nullptr;
  if (!containers.empty())
    for (const auto& e : array_at(containers[0], "env"))
      if (string_at(e, "name") == kRecordsEnv) sealed = &e;
  if (!sealed) return object_at(meta, "annotations");
  json records = json::parse(string_at(*sealed, "value"), nullptr, false);
  return records.is_object() ? records : json::object();
}
}  // namespace

bool made_by_valley(const json& labels) { return string_at(labels, kManagedByLabel) == kManagedByValley; }

void seal_records(json& pod) {
  const json& containers = array_at(object_at(pod, "spec"), "containers");
  if (containers.empty() || !containers[0].is_object()) return;
  const json& annotations = object_at(object_at(pod, "metadata"), "annotations");
  json records = json::object();
  for (const char* key : kSealedRecords)
    if (annotations.contains(key)) records[key] = annotations[key];
  json& container = pod["spec"]["containers"][0];
  json env = json::array();
  for (const auto& e : array_at(container, "env"))
    if (string_at(e, "name") != kRecordsEnv) env.push_back(e);
  env.push_back({{"name", kRecordsEnv}, {"value", records.dump()}});
  container["env"] = std::move(env);
}

namespace {
// The one value a pod's required node affinity asks `key` to be In, under `list` (matchFields or
// matchExpressions) of one of its terms; "" if none.
std::string required_single(const json& pod, const char* list, const char* key) {
  const json& terms = array_at(object_at(object_at(object_at(object_at(pod, "spec"), "affinity"), "nodeAffinity"),
                                         "requiredDuringSchedulingIgnoredDuringExecution"),
                               "nodeSelectorTerms");
  for (const auto& term : terms)
    for (const auto& r : array_at(term, list))
      if (string_at(r, "key") == key && string_at(r, "operator") == "In") {
        const json& values = array_at(r, "values");
        if (values.size() == 1 && values[0].is_string()) return values[0].get<std::string>();
      }
  return "";
}
}  // namespace

std::string pinned_node(const json& pod) { return required_single(pod, "matchFields", "metadata.name"); }

std::string bought_pool(const json& pod) { return required_single(pod, "matchExpressions", karpenter::kNodePool); }

const std::string& PodContent::label(const std::string& key) const {
  static const std::string kNone;
  for (const auto& [k, v] : labels)
    if (k == key) return v;
  return kNone;
}

Pod pod_from(const json& pod) {
  Pod p;
  const json& meta = object_at(pod, "metadata");
  p.ns = string_at(meta, "namespace");
  p.name = string_at(meta, "name");
  p.uid = string_at(meta, "uid");
  p.resource_version = string_at(meta, "resourceVersion");
  for (const auto& [k, v] : object_at(meta, "labels").items())
    if (v.is_string()) p.labels.emplace_back(k, v.get<std::string>());
  for (const auto& ref : array_at(meta, "ownerReferences"))
    if (ref.is_object()) p.owner_uids.push_back(string_at(ref, "uid"));
  for (const auto& f : array_at(meta, "finalizers"))
    if (f.is_string()) p.finalizers.push_back(f.get<std::string>());
  p.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  p.deletion_timestamp = kube::time_at(meta, "deletionTimestamp");
  p.hostfile = string_at(object_at(meta, "annotations"), kHostfileAnnotation);
  const json records = records_of(pod);
  const ClaimedGpus claimed = claimed_gpus(string_at(records, kClaimedGpusAnnotation));
  p.claimed_class = claimed.device_class;
  p.claimed_count = claimed.count;
  const ClaimedGpus seat = claimed_gpus(string_at(records, kGpuSeatAnnotation));
  p.seat_class = seat.device_class;
  p.seat_milli = std::min<int64_t>(seat.count, 1000);
  if (p.seat_milli > 0)
    for (const auto& c : array_at(object_at(pod, "spec"), "resourceClaims"))
      if (p.seat_claim.empty()) p.seat_claim = string_at(c, "resourceClaimName");
  auto replicas = [&](const char* annotation) {
    const int64_t r = extended_quantity(string_at(records, annotation));
    return r >= 2 && r <= 999 ? static_cast<int>(r) : 0;
  };
  p.mps_replicas = replicas(kMpsReplicasAnnotation);
  p.time_sliced_replicas = replicas(kTimeSlicedReplicasAnnotation);
  p.priced_as = price_class(string_at(records, kPricedAsAnnotation));
  const json& spec = object_at(pod, "spec");
  p.node_name = string_at(spec, "nodeName");
  p.pinned = pinned_node(pod);
  p.bought_from = bought_pool(pod);
  p.containers = containers(spec, "containers");
  p.init_containers = containers(spec, "initContainers");
  const json& status = object_at(pod, "status");
  p.phase = string_at(status, "phase");
  p.reason = string_at(status, "reason");
  p.start_time = kube::time_at(status, "startTime");
  for (const auto& c : array_at(status, "conditions"))
    p.conditions.push_back({string_at(c, "type"), string_at(c, "status"), string_at(c, "reason"), string_at(c, "message"),
                            kube::time_at(c, "lastTransitionTime")});
  p.container_statuses = statuses(status, "containerStatuses");
  p.init_container_statuses = statuses(status, "initContainerStatuses");
  return p;
}

}  // namespace valley::api

namespace valley::kube {

void ObjectTraits<api::Pod>::add_indexes(BasicStore<api::Pod>& store) {
  store.add_index(index::kOwnerUid, [](const api::Pod& p) { return p.owner_uids; });
}

}  // namespace valley::kube
