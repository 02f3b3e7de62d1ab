#include "controllers/render/network_policy.h"

#include <set>
#include <tuple>

#include "controllers/render/render.h"
#include "operator/kube/json_fields.h"

namespace valley::render {

using json = nlohmann::json;

std::string network_policy_name(const std::string& task) { return task + "-mpi"; }

namespace {

// The (port, protocol) pairs the containers of a PodTemplateSpec declare.
void declared_ports(const json& pod_template, std::set<std::pair<int64_t, std::string>>& out) {
  const json& spec = kube::object_at(pod_template, "spec");
  for (const char* list : {"containers", "initContainers"}) {
    const auto it = spec.find(list);
    if (it == spec.end() || !it->is_array()) continue;
    for (const auto& container : *it) {
      const auto ports = container.find("ports");
      if (!container.is_object() || ports == container.end() || !ports->is_array()) continue;
      for (const auto& port : *ports) {
        const auto number = kube::int_at(port, "containerPort");
        if (!number) continue;
        const std::string protocol = kube::string_at(port, "protocol");
        out.insert({*number, protocol.empty() ? "TCP" : protocol});
      }
    }
  }
}

}  // namespace

json task_network_policy(const api::TaskSpec& spec, const std::vector<std::string>& egress_except) {
  const json own_pods = {{"matchLabels", {{label::kManagedBy, "valley"}, {label::kTask, spec.name}}}};
  json ingress = json::array({{{"from", json::array({{{"podSelector", own_pods}}})}}});
  std::set<std::pair<int64_t, std::string>> ports;
  declared_ports(spec.launcher.pod_template, ports);
  declared_ports(spec.worker.pod_template, ports);
  if (!ports.empty()) {
    json open = json::array();
    for (const auto& [port, protocol] : ports) open.push_back({{"port", port}, {"protocol", protocol}});
    ingress.push_back({{"ports", open}});
  }
  json policy_spec = {{"podSelector", own_pods}, {"policyTypes", json::array({"Ingress"})}, {"ingress", ingress}};
  if (!egress_except.empty()) {
    json v4 = json::array(), v6 = json::array();
    for (const auto& cidr : egress_except) (cidr.find(':') == std::string::npos ? v4 : v6).push_back(cidr);
    json elsewhere = json::array({{{"ipBlock", {{"cidr", "0.0.0.0/0"}, {"except", v4}}}}, {{"ipBlock", {{"cidr", "::/0"}, {"except", v6}}}}});
    for (auto& block : elsewhere)
      if (block["ipBlock"]["except"].empty()) block["ipBlock"].erase("except");
    const json dns = json::array({{{"port", 53}, {"protocol", "UDP"}}, {{"port", 53}, {"protocol", "TCP"}}});
    policy_spec["policyTypes"].push_back("Egress");
    policy_spec["egress"] = json::array({{{"to", json::array({{{"podSelector", own_pods}}})}}, {{"ports", dns}}, {{"to", elsewhere}}});
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", task_object_metadata(spec, network_policy_name(spec.name))},
          {"spec", policy_spec}};
}

}  // namespace valley::render
