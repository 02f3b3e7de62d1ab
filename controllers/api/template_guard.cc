#include "controllers/api/template_guard.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string_view>

#include "controllers/api/pod.h"

namespace valley::api {
namespace {

using json = nlohmann::json;

bool is_true(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}
bool is_set(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty());
}

// A list with something in it (an empty one asks for nothing), or anything else but null.
bool has_entries(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && !it->is_null() && !(it->is_array() && it->empty());
}

// Pod Security Standards, Baseline: the capabilities a container may add.
bool baseline_capability(const std::string& c) {
  static constexpr std::array<std::string_view, 13> kAllowed = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                                                "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"};
  std::string_view name = c;
  if (name.rfind("CAP_", 0) == 0) name.remove_prefix(4);
  return std::find(kAllowed.begin(), kAllowed.end(), name) != kAllowed.end();
}

// Calls f(field, key) for each key of the objects o.<field> (a map such as labels or limits).
template <typename F>
void each_key(const json& o, std::initializer_list<const char*> fields, F&& f) {
  if (!o.is_object()) return;
  for (const char* field : fields) {
    auto it = o.find(field);
    if (it == o.end() || !it->is_object()) continue;
    for (const auto& [key, value] : it->items()) f(field, key);
  }
}

void check_resources(const json& resources, const std::string& path, std::vector<std::string>& out) {
  if (!resources.is_object()) return;
  each_key(resources, {"limits", "requests"}, [&](const char* list, const std::string& name) {
    if (is_gpu_device_resource(name))
      out.push_back(path + "." + list + "." + name + ": a task's GPUs are spec.worker.gpus, placed and billed by Valley");
  });
  if (has_entries(resources, "claims")) out.push_back(path + ".claims: Valley claims the devices it places (spec.worker.devices)");
}

void check_container(const json& c, const std::string& path, std::vector<std::string>& out) {
  if (!c.is_object()) return;
  if (auto r = c.find("resources"); r != c.end()) check_resources(*r, path + ".resources", out);
  const json sc = c.value("securityContext", json::object());
  if (sc.is_object()) {
    if (is_true(sc, "privileged")) out.push_back(path + ".securityContext.privileged: a privileged container is the node's root");
    const json caps = sc.value("capabilities", json::object());
    if (caps.is_object() && caps.contains("add") && caps["add"].is_array())
      for (const auto& cap : caps["add"])
        if (!cap.is_string() || !baseline_capability(cap.get<std::string>()))
          out.push_back(path + ".securityContext.capabilities.add: " + (cap.is_string() ? cap.get<std::string>() : std::string("?")) +
                        " is beyond Pod Security Baseline");
  }
  if (c.contains("env") && c["env"].is_array()) {
    for (const auto& e : c["env"]) {
      if (!e.is_object()) continue;
      const json name = e.value("name", json(""));
      if (name == kRecordsEnv)
        out.push_back(path + ".env." + kRecordsEnv + ": Valley's own record of the pod's GPUs, sealed when it makes the pod");
      else if (name == kNvidiaVisibleDevices)
        out.push_back(path + ".env." + kNvidiaVisibleDevices + ": the NVIDIA runtime would hand the container the GPUs it names, outside Valley's plan and bill");
    }
  }
  if (c.contains("ports") && c["ports"].is_array())
    for (const auto& p : c["ports"])
      if (p.is_object() && is_set(p, "hostPort") && !(p["hostPort"].is_number_integer() && p["hostPort"].get<int64_t>() == 0))
        out.push_back(path + ".ports.hostPort: a host port takes the node's network");
}

void check_metadata(const json& meta, const std::string& path, std::vector<std::string>& out) {
  each_key(meta, {"labels", "annotations"}, [&](const char* field, const std::string& key) {
    if (key.rfind(kValleyKeyPrefix, 0) == 0)
      out.push_back(path + ".metadata." + field + "." + key + ": keys under " + kValleyKeyPrefix + " are Valley's own records");
  });
}

}  // namespace

bool is_gpu_device_resource(const std::string& name) {
  for (const char* prefix : kGpuDeviceResourcePrefixes)
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> resource_escapes(const json& resources, const std::string& path) {
  std::vector<std::string> out;
  check_resources(resources, path, out);
  return out;
}

std::vector<std::string> template_escapes(const json& pod_template, const std::string& path) {
  std::vector<std::string> out;
  if (!pod_template.is_object()) return out;
  check_metadata(pod_template.value("metadata", json::object()), path, out);
  const json spec = pod_template.value("spec", json::object());
  if (!spec.is_object()) return out;
  const std::string sp = path + ".spec.";
  for (const char* host : {"hostNetwork", "hostPID", "hostIPC"})
    if (is_true(spec, host)) out.push_back(sp + host + ": the node's namespaces are not a tenant's");
  if (is_set(spec, "nodeName")) out.push_back(sp + "nodeName: Valley places the pods (a node is chosen by spec.vendors and the template's nodeSelector or affinity)");
  if (is_set(spec, "schedulerName")) out.push_back(sp + "schedulerName: Valley's pods are bound by the cluster's scheduler");
  if (is_set(spec, "priorityClassName") || is_set(spec, "priority"))
    out.push_back(sp + "priorityClassName: a task's priority is spec.priority, within its tenant's maxPriority");
  for (const char* account : {"serviceAccountName", "serviceAccount"})
    if (is_set(spec, account) && spec[account] != "default")
      out.push_back(sp + account + ": a task's pods run as its namespace's default ServiceAccount");
  if (spec.contains("volumes") && spec["volumes"].is_array())
    for (const auto& v : spec["volumes"])
      if (v.is_object() && v.contains("hostPath"))
        out.push_back(sp + "volumes." + (v.value("name", json("?")).is_string() ? v.value("name", std::string("?")) : std::string("?")) +
                      ".hostPath: a directory of the node is not a tenant's");
  if (has_entries(spec, "resourceClaims")) out.push_back(sp + "resourceClaims: Valley claims the devices it places (spec.worker.devices)");
  if (auto r = spec.find("resources"); r != spec.end()) check_resources(*r, sp + "resources", out);  // pod-level
  if (spec.contains("tolerations") && spec["tolerations"].is_array())
    for (const auto& t : spec["tolerations"])
      if (t.is_object() && !is_set(t, "key") && t.value("operator", json("")) == "Exists")
        out.push_back(sp + "tolerations: a toleration without a key tolerates every taint, other tenants' nodes too");
  for (const char* list : {"containers", "initContainers", "ephemeralContainers"})
    if (spec.contains(list) && spec[list].is_array())
      for (const auto& c : spec[list]) check_container(c, sp + list + "[" + (c.is_object() && c.value("name", json("")).is_string() ? c.value("name", std::string()) : std::string()) + "]", out);
  return out;
}

}  // namespace valley::api
