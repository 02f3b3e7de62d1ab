#include "controllers/render/transfers.h"

#include <algorithm>
#include <cstdio>

#include "controllers/render/render.h"
#include "controllers/api/nodepool.h"

namespace valley::render {
namespace {

using json = nlohmann::json;

json io_container(const api::TaskSpec& spec, const char* name, const std::vector<std::string>& args, const std::string& secret,
                  const json& mount) {
  json c = {{"name", name},
            {"image", spec.io_image.empty() ? kDefaultIoImage : spec.io_image},
            {"command", json::array({"valley-io"})},
            {"args", args},
            {"volumeMounts", json::array({mount})},
            // Small: it streams files. Its failure message is what the task's status shows.
            {"resources", {{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}}, {"limits", {{"memory", "256Mi"}}}}},
            {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  if (!secret.empty()) c["envFrom"] = json::array({{{"secretRef", {{"name", secret}}}}});
  return c;
}

void push(json& object, const char* list, json item) {
  if (!object.contains(list) || !object[list].is_array()) object[list] = json::array();
  object[list].push_back(std::move(item));
}

}  // namespace

void add_transfers(const api::TaskSpec& spec, const std::string& role, json& pod_spec, json& container) {
  // Every pod knows where the workers find the data (a launcher hands it on to its ranks).
  if (spec.data) push(container, "env", {{"name", "VALLEY_DATA_DIR"}, {"value", spec.data->mount_path}});
  if (spec.data && role == "worker") {
    const std::string& dir = spec.data->mount_path;
    push(pod_spec, "initContainers",
         io_container(spec, kDataContainer, {"fetch", "--uri", spec.data->uri, "--dir", dir}, spec.data->secret,
                      {{"name", kDataContainer}, {"mountPath", dir}}));
    push(pod_spec, "volumes", {{"name", kDataContainer}, {"emptyDir", json::object()}});
    push(container, "volumeMounts", {{"name", kDataContainer}, {"mountPath", dir}, {"readOnly", true}});
  }
  if (spec.outputs) {
    json sidecar = io_container(spec, kOutputsContainer, {"keep", "--uri", spec.outputs->uri, "--dir", api::kOutputDir},
                                spec.outputs->secret, {{"name", kOutputsContainer}, {"mountPath", api::kOutputDir}});
    sidecar["restartPolicy"] = "Always";
    push(pod_spec, "initContainers", std::move(sidecar));
    push(pod_spec, "volumes", {{"name", kOutputsContainer}, {"emptyDir", json::object()}});
    push(container, "volumeMounts", {{"name", kOutputsContainer}, {"mountPath", api::kOutputDir}});
    push(container, "env", {{"name", "VALLEY_OUTPUT_DIR"}, {"value", api::kOutputDir}});
  }
}

bool uses_data_cache(const api::TaskSpec& spec, const std::string& node) {
  // A node still to be bought has no name to keep a cache beside.
  return spec.data && !spec.data->cache_class.empty() && spec.data->cache_bytes > 0 && !node.empty() && !api::is_provisionable(node);
}

std::string data_cache_claim_name(const api::TaskSpec& spec, const std::string& node) {
  constexpr size_t kMaxName = 253;  // a DNS subdomain, as node names are
  std::string name = spec.name + "-data-" + node;
  if (name.size() <= kMaxName) return name;
  uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across processes and releases
  for (unsigned char c : node) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return spec.name + "-data-" + hex;
}

json data_cache_claim(const api::TaskSpec& spec, const std::string& node) {
  constexpr uint64_t kGi = uint64_t{1} << 30;
  const uint64_t bytes = spec.data ? spec.data->cache_bytes : 0;
  const uint64_t gib = std::max<uint64_t>(1, (bytes + bytes / 10 + kGi - 1) / kGi);
  json claim = {{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", task_object_metadata(spec, data_cache_claim_name(spec, node))}};
  claim["metadata"]["labels"][label::kRole] = kDataCacheRole;
  claim["metadata"]["annotations"]["valley.dev/node"] = node;
  claim["spec"] = {{"accessModes", json::array({"ReadWriteOnce"})},
                   {"storageClassName", spec.data ? spec.data->cache_class : ""},
                   {"resources", {{"requests", {{"storage", std::to_string(gib) + "Gi"}}}}}};
  return claim;
}

void use_data_cache(const api::TaskSpec& spec, const std::string& node, json& pod_spec) {
  if (!uses_data_cache(spec, node) || !pod_spec.contains("volumes")) return;
  for (json& v : pod_spec["volumes"])
    if (v.value("name", "") == kDataContainer) v = {{"name", kDataContainer}, {"persistentVolumeClaim", {{"claimName", data_cache_claim_name(spec, node)}}}};
  // A provisioner's directory is root's (an emptyDir is everyone's). With an fsGroup (Restricted
  // sets one) the kubelet gives it to the pod's group, once (OnRootMismatch: not a walk of the
  // whole set at every start); without one, the copy runs as root, which Baseline allows.
  json& pod_sc = pod_spec["securityContext"];
  if (!pod_sc.is_object()) pod_sc = json::object();
  if (pod_sc.contains("fsGroup")) {
    if (!pod_sc.contains("fsGroupChangePolicy")) pod_sc["fsGroupChangePolicy"] = "OnRootMismatch";
    return;
  }
  for (json& c : pod_spec["initContainers"])
    if (c.value("name", "") == kDataContainer) {
      c["securityContext"]["runAsUser"] = 0;
      c["securityContext"]["runAsNonRoot"] = false;
    }
}

}  // namespace valley::render
