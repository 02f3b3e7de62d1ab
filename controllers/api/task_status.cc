#include "controllers/api/task_status.h"

#include <cstdint>

#include "operator/kube/json_fields.h"

namespace valley::api {
namespace {

using json = nlohmann::json;

bool fits(const json& value, const json& schema);

json cleaned(const json& value, const json& schema) {
  if (schema.is_object()) {
    json out = json::object();
    for (const auto& [key, field] : value.items()) {
      auto declared = schema.find(key);
      if (declared == schema.end()) {
        out[key] = field;  // not declared: the API server prunes it; kept here for older objects
      } else if (fits(field, *declared)) {
        out[key] = cleaned(field, *declared);
      }
    }
    return out;
  }
  if (schema.is_array()) {
    json out = json::array();
    for (const auto& item : value)
      if (fits(item, schema[0])) out.push_back(cleaned(item, schema[0]));
    return out;
  }
  return value;
}

bool fits(const json& value, const json& schema) {
  if (schema.is_object()) return value.is_object();
  if (schema.is_array()) return value.is_array();
  const auto& type = schema.get_ref<const std::string&>();
  if (type == "integer")  // and fits int64, as the API server's integers do
    return value.is_number_integer() && !(value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX);
  if (type == "number") return value.is_number();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();  // a map (additionalProperties): its values as they are
  return false;
}

}  // namespace

const json& status_schema() {
  static const json schema = json::parse(R"({
    "phase": "string", "reason": "string", "message": "string",
    "replicas": "integer", "readyReplicas": "integer", "selector": "string",
    "epoch": "integer", "epochReplicas": "integer", "desiredReplicas": "integer",
    "lastResizeTime": "string", "expectedStart": "string", "cheapCapacityUntil": "string",
    "slackSeconds": "integer",
    "scaling": [{"workers": "integer", "nodes": "integer", "stepsPerSecond": "number", "samples": "integer"}],
    "lastResizeReason": "string", "observedGeneration": "integer",
    "startTime": "string", "completionTime": "string",
    "history": [{"time": "string", "phase": "string", "workers": "integer", "reason": "string", "accruedMicros": "integer"}],
    "data": {"uri": "string", "files": "integer", "bytes": "integer"},
    "outputs": {"uri": "string", "files": "integer", "bytes": "integer", "partial": "boolean", "report": "string", "time": "string",
                "error": "string"},
    "outputsNotKept": [{"pod": "string", "uid": "string", "exitCode": "integer", "message": "string", "time": "string"}],
    "restarts": {"total": "integer", "failures": "integer", "resizes": "integer", "moves": "integer", "preemptions": "integer",
                 "disruptions": "integer", "startFailures": "integer"},
    "startFailure": {"reason": "string", "message": "string", "retryAfter": "string", "generation": "integer"},
    "topology": {"summary": "string", "levels": [{"level": "string", "domains": ["string"]}]},
    "checkpoint": {"step": "integer", "time": "string", "epoch": "integer", "worldSize": "integer", "uri": "string"},
    "lastDisruption": {"time": "string", "cause": "string", "node": "string", "message": "string", "epoch": "integer",
                       "workers": "integer",
                       "checkpointStep": "integer", "recoveredTime": "string", "recoverySeconds": "integer",
                       "resumedFromStep": "integer", "workLostSeconds": "integer", "inPlace": "boolean",
                       "pods": [{"name": "string", "uid": "string"}]},
    "cost": {"summary": "string", "currency": "string", "policy": "string", "multiplier": "string", "priority": "integer",
             "accrued": "string", "accruedMicros": "integer", "final": "string", "finalMicros": "integer",
             "estimated": "string", "updated": "string",
             "breakdown": {"gpu": "string", "gpuMicros": "integer", "energy": "string", "energyMicros": "integer",
                           "gpuHours": "object", "gpuMilliSeconds": "object", "kWh": "object", "microWh": "object"},
             "estimate": {"expected": "string", "expectedMicros": "integer", "low": "string", "high": "string",
                          "currency": "string", "gpuHours": "string", "hours": "string", "workers": "integer",
                          "start": "string", "basis": "string", "lowAssumes": "string", "highAssumes": "string",
                          "placed": "boolean", "generation": "integer"},
             "ledger": [{"uid": "string", "pod": "string", "node": "string", "vendor": "string", "product": "string",
                         "capacityClass": "string", "gpuPerHourMicros": "integer", "watts": "integer",
                         "shareMilli": "integer", "until": "string", "untilMs": "integer"}]},
    "utilization": {"gpuPercent": "integer", "memoryUsedMiB": "integer", "meanGpuPercent": "integer",
                    "sampledGpuSeconds": "integer", "idleGpuSeconds": "integer", "gpuPercentSeconds": "integer",
                    "idleGpuHours": "string", "idleSince": "string", "updated": "string"},
    "conditions": [{"type": "string", "status": "string", "reason": "string", "message": "string",
                    "lastTransitionTime": "string", "observedGeneration": "integer"}]
  })");
  return schema;
}

json readable_status(const json& status) {
  if (!status.is_object()) return json::object();
  return cleaned(status, status_schema());
}

json readable_task(const json& task) {
  json out = kube::all_but(task, "status");
  json status = json::object();
  if (auto field = task.find("status"); field != task.end()) status = readable_status(*field);
  out.emplace("status", std::move(status));
  return out;
}

}  // namespace valley::api
