#include "controllers/api/template_guard.h"

#include <algorithm>
#include <array>
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

// Pod Security Standards, Baseline: the capabilities a container may add.
bool baseline_capability(const std::string& c) {
  static constexpr std::array<std::string_view, 13> kAllowed = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                                                "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"};
  std::string_view name = c;
  if (name.rfind("CAP_", 0) == 0) name.remove_prefix(4);
  return std::find(kAllowed.begin(), kAllowed.end(), name) != kAllowed.end();
}

void check_container(const json& c, const std::string& path, std::vector<std::string>& out) {
  if (!c.is_object()) return;
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
  if (c.contains("env") && c["env"].is_array())
    for (const auto& e : c["env"])
      if (e.is_object() && e.value("name", json("")) == kRecordsEnv)
        out.push_back(path + ".env." + kRecordsEnv + ": Valley's own record of the pod's GPUs, sealed when it makes the pod");
  if (c.contains("ports") && c["ports"].is_array())
    for (const auto& p : c["ports"])
      if (p.is_object() && is_set(p, "hostPort") && !(p["hostPort"].is_number_integer() && p["hostPort"].get<int64_t>() == 0))
        out.push_back(path + ".ports.hostPort: a host port takes the node's network");
}

void check_metadata(const json& meta, const std::string& path, std::vector<std::string>& out) {
  if (!meta.is_object()) return;
  for (const char* field : {"labels", "annotations"}) {
    auto it = meta.find(field);
    if (it == meta.end() || !it->is_object()) continue;
    for (const auto& [key, value] : it->items())
      if (key.rfind(kValleyKeyPrefix, 0) == 0)
        out.push_back(path + ".metadata." + field + "." + key + ": keys under " + kValleyKeyPrefix + " are Valley's own records");
  }
}

}  // namespace

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
