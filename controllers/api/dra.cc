#include "controllers/api/dra.h"

#include "controllers/api/pod.h"
#include "operator/kube/json_fields.h"

namespace valley::api {
namespace {

using json = nlohmann::json;
using kube::array_at;
using kube::object_at;
using kube::string_at;

// An attribute's value as text: DRA attributes are one-of {string, version, int, bool}.
std::string attribute_text(const json& attribute) {
  if (!attribute.is_object()) return "";
  if (std::string s = string_at(attribute, "string"); !s.empty()) return s;
  if (std::string v = string_at(attribute, "version"); !v.empty()) return v;
  if (auto i = attribute.find("int"); i != attribute.end() && i->is_number_integer()) return std::to_string(i->get<int64_t>());
  if (auto b = attribute.find("bool"); b != attribute.end() && b->is_boolean()) return b->get<bool>() ? "true" : "false";
  return "";
}

}  // namespace

DraSlice dra_slice_from(const json& slice, const std::vector<std::string>& product_attributes) {
  DraSlice s;
  s.name = string_at(object_at(slice, "metadata"), "name");
  const json& spec = object_at(slice, "spec");
  s.driver = string_at(spec, "driver");
  s.node = string_at(spec, "nodeName");
  const json& pool = object_at(spec, "pool");
  s.pool = string_at(pool, "name");
  if (auto g = pool.find("generation"); g != pool.end() && g->is_number_integer()) s.generation = g->get<int64_t>();
  for (const auto& d : array_at(spec, "devices")) {
    DraDevice device{string_at(d, "name"), "", {}};
    if (device.name.empty()) continue;
    const json& attributes = object_at(d, "attributes");
    for (const auto& [name, value] : attributes.items())
      if (std::string text = attribute_text(value); !text.empty())
        device.attributes[name.find('/') == std::string::npos ? s.driver + "/" + name : name] = std::move(text);
    for (const auto& a : product_attributes) {
      for (const std::string& key : {a, s.driver + "/" + a}) {
        if (auto it = attributes.find(key); it != attributes.end()) device.product = attribute_text(*it);
        if (!device.product.empty()) break;
      }
      if (!device.product.empty()) break;
    }
    s.devices.push_back(std::move(device));
  }
  return s;
}

DraClaim dra_claim_from(const json& claim) {
  DraClaim c;
  const json& meta = object_at(claim, "metadata");
  const std::string ns = string_at(meta, "namespace");
  c.key = ns.empty() ? string_at(meta, "name") : ns + "/" + string_at(meta, "name");
  c.resource_version = string_at(meta, "resourceVersion");
  c.created = kube::time_at(meta, "creationTimestamp");
  c.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  const json& labels = object_at(meta, "labels");
  c.valley = made_by_valley(labels);
  if (c.valley && string_at(labels, "valley.dev/role") == kSeatsClaimRole && !string_at(labels, "valley.dev/task").empty()) {
    c.seats_task = ns + "/" + string_at(labels, "valley.dev/task");
    c.seats_node = string_at(object_at(meta, "annotations"), kSeatsNodeAnnotation);
  }
  const json& allocation = object_at(object_at(claim, "status"), "allocation");
  for (const auto& r : array_at(object_at(allocation, "devices"), "results"))
    c.allocated.push_back({string_at(r, "driver"), string_at(r, "pool"), string_at(r, "device")});
  return c;
}

}  // namespace valley::api
