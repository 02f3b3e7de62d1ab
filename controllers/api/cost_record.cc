#include "controllers/api/cost_record.h"

#include <spdlog/spdlog.h>

#include "operator/json_text.h"
#include "operator/kube/json_fields.h"

namespace valley::api {

namespace res = kube::resources;

std::string cost_record_name(const std::string& task_uid) { return "valley-cost-" + task_uid; }

nlohmann::json CostRecord::to_json() const {
  return {{"namespace", ns}, {"name", name}, {"uid", uid}, {"phase", phase}, {"deleted", deleted}, {"cost", cost}};
}

std::optional<CostRecord> CostRecord::from_json(const nlohmann::json& j) {
  if (!j.is_object() || kube::string_at(j, "uid").empty()) return std::nullopt;
  CostRecord r;
  r.ns = kube::string_at(j, "namespace");
  r.name = kube::string_at(j, "name");
  r.uid = kube::string_at(j, "uid");
  r.phase = kube::string_at(j, "phase");
  r.deleted = j.value("deleted", nlohmann::json(false)).is_boolean() && j.value("deleted", false);
  r.cost = kube::object_at(j, "cost");
  return r;
}

bool CostRecords::keep(const CostRecord& record) {
  nlohmann::json cost = record.cost;
  if (cost.is_object()) cost.erase("estimate");
  CostRecord kept = record;
  kept.cost = cost;
  const nlohmann::json cm = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", cost_record_name(record.uid)},
        {"namespace", ns_},
        {"labels", {{kCostRecordLabel, "true"}, {kCostRecordNamespaceLabel, record.ns}, {kCostRecordTaskLabel, record.name}}}}},
      {"data", {{kCostRecordKey, json_text(kept.to_json(), 1)}}}};
  try {
    client_.apply(res::kConfigMaps, cm, "valley-operator");
    return true;
  } catch (const kube::KubeError& e) {
    spdlog::warn("{}/{}: keeping its cost record {}/{}: {}", record.ns, record.name, ns_, cost_record_name(record.uid), e.what());
    return false;
  }
}

std::vector<CostRecord> CostRecords::list(const std::string& selector) {
  kube::ListOptions lo;
  lo.label_selector = selector;
  std::vector<CostRecord> out;
  for (const auto& cm : client_.list(res::kConfigMaps, ns_, lo).items) {
    const nlohmann::json& data = kube::object_at(cm, "data");
    const std::string text = kube::string_at(data, kCostRecordKey);
    auto parsed = nlohmann::json::parse(text, nullptr, false);
    if (auto r = CostRecord::from_json(parsed)) out.push_back(std::move(*r));
  }
  return out;
}

std::vector<CostRecord> CostRecords::of_task(const std::string& task_ns, const std::string& task_name) {
  return list(std::string(kCostRecordLabel) + "=true," + kCostRecordNamespaceLabel + "=" + task_ns + "," + kCostRecordTaskLabel + "=" + task_name);
}

std::vector<CostRecord> CostRecords::all(const std::string& task_ns) {
  return list(std::string(kCostRecordLabel) + "=true" + (task_ns.empty() ? "" : std::string(",") + kCostRecordNamespaceLabel + "=" + task_ns));
}

}  // namespace valley::api
