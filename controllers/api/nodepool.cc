#include "controllers/api/nodepool.h"

#include <cmath>

#include "controllers/api/quantity.h"
#include "operator/duration.h"
#include "operator/kube/json_fields.h"

namespace valley::api {

namespace {
using kube::array_at;
using kube::object_at;

std::vector<NodeRequirement> requirements_of(const json& list) {
  std::vector<NodeRequirement> out;
  if (!list.is_array()) return out;
  for (const auto& r : list) {
    if (!r.is_object()) continue;
    NodeRequirement req{kube::string_at(r, "key"), kube::string_at(r, "operator", "In"), {}};
    if (auto v = r.find("values"); v != r.end() && v->is_array())
      for (const auto& x : *v)
        if (x.is_string()) req.values.push_back(x.get<std::string>());
    if (!req.key.empty()) out.push_back(std::move(req));
  }
  return out;
}

// Whole units for a GPU or pods, thousandths for cpu, bytes for memory and storage.
std::optional<int64_t> limit_units(const std::string& resource, const json& value) {
  return quantity_of(value, resource == kCpu ? 1000 : 1);
}
}  // namespace

NodePoolRead read_node_pool(const json& object) {
  NodePoolRead out;
  NodePool p;
  p.name = kube::string_at(object_at(object, "metadata"), "name");
  p.deleting = object_at(object, "metadata").contains("deletionTimestamp");
  const json& spec = object_at(object, "spec");
  const json& tmpl = object_at(spec, "template");
  for (const auto& [k, v] : object_at(object_at(tmpl, "metadata"), "labels").items())
    if (v.is_string()) p.labels[k] = v.get<std::string>();
  const json& tspec = object_at(tmpl, "spec");
  p.requirements = requirements_of(array_at(tspec, "requirements"));
  for (const auto& t : array_at(tspec, "taints"))
    if (t.is_object()) p.taints.push_back({kube::string_at(t, "key"), kube::string_at(t, "value"), kube::string_at(t, "effect")});
  for (const auto& [k, v] : object_at(spec, "limits").items()) {
    auto units = limit_units(k, v);
    if (!units) {
      out.error = "spec.limits." + k + ": " + v.dump() + " is not a quantity";
      return out;
    }
    p.limits[k] = *units;
  }
  const json& disruption = object_at(spec, "disruption");
  p.consolidation_policy = kube::string_at(disruption, "consolidationPolicy", "WhenEmptyOrUnderutilized");
  const std::string after = kube::string_at(disruption, "consolidateAfter", "0s");
  if (after != "Never") {
    auto d = parse_duration(after);
    p.consolidate_after_seconds = d ? std::chrono::duration_cast<std::chrono::seconds>(*d).count() : 0;
  }
  if (auto w = kube::int_at(spec, "weight")) p.weight = static_cast<int>(*w);
  for (const auto& [k, v] : object_at(object_at(object, "status"), "resources").items())
    if (auto units = limit_units(k, v)) p.in_use[k] = *units;
  out.pool = std::move(p);
  return out;
}

Catalogue read_catalogue(const json& document) {
  Catalogue c;
  if (!document.is_array()) {
    c.error = "the instance-type catalogue is not a JSON array";
    return c;
  }
  for (const auto& t : document) {
    InstanceType it;
    it.name = kube::string_at(t, "name");
    if (it.name.empty()) {
      c.error = "an instance type without a name";
      return c;
    }
    it.architecture = kube::string_at(t, "architecture", "amd64");
    if (const json& os = array_at(t, "operatingSystems"); !os.empty()) {
      it.operating_systems.clear();
      for (const auto& o : os)
        if (o.is_string()) it.operating_systems.push_back(o.get<std::string>());
    }
    for (const auto& [k, v] : object_at(t, "resources").items())
      it.resources[k] = v.is_string() ? v.get<std::string>() : v.dump();
    for (const auto& o : array_at(t, "offerings")) {
        if (!o.is_object()) continue;
        Offering off;
        if (auto price = o.find("Price"); price != o.end() && price->is_number()) off.price_micros = std::llround(price->get<double>() * 1e6);
        if (auto a = o.find("Available"); a != o.end() && a->is_boolean()) off.available = a->get<bool>();
        for (const auto& r : requirements_of(array_at(o, "Requirements"))) {
          if (r.op != "In" || r.values.size() != 1) continue;
          if (r.key == karpenter::kCapacityType) off.capacity_type = r.values[0];
          if (r.key == karpenter::kZone) off.zone = r.values[0];
        }
        if (off.capacity_type.empty()) off.capacity_type = "on-demand";
        it.offerings.push_back(std::move(off));
      }
    c.types.push_back(std::move(it));
  }
  return c;
}

std::string provisionable_name(const ProvisionTarget& t, int n) {
  return t.pool + ":" + t.instance_type + ":" + t.capacity_type + ":" + std::to_string(n);
}

std::optional<ProvisionTarget> provision_target(const std::string& node_name) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t at; (at = node_name.find(':', from)) != std::string::npos; from = at + 1) parts.push_back(node_name.substr(from, at - from));
  parts.push_back(node_name.substr(from));
  if (parts.size() != 4 || parts[0].empty() || parts[1].empty() || parts[2].empty()) return std::nullopt;
  return ProvisionTarget{parts[0], parts[1], parts[2]};
}

bool satisfies(const std::map<std::string, std::string>& labels, const NodeRequirement& r) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  auto listed = [&] { return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  if (r.op == "In") return listed();
  if (r.op == "NotIn") return !listed();
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (r.op == "Gt" || r.op == "Lt") {
    if (!has || r.values.size() != 1) return false;
    try {
      const long long have = std::stoll(it->second), bound = std::stoll(r.values[0]);
      return r.op == "Gt" ? have > bound : have < bound;
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

}  // namespace valley::api
