// Every task's cost kept where neither its user nor its deletion can take it: one ConfigMap per task
// incarnation, valley-cost-<uid>, in the operator's namespace (the ownership namespace), which
// tenants cannot write. It holds the task's status.cost as last written before any of its pods was
// released (so every charge of a released pod is in it), made final when the task finishes or is
// deleted. A task deleted before it finished (or whose TTL removed it) keeps its final cost here; a
// task deleted while this process was down is settled from its record and the pods still holding
// the accounting finalizer. `valleyctl cost` reads finished tasks from these records.
//
// Why a ConfigMap per task and not the tenant's status: a record is written once per release batch
// and once at the end, by one writer, never read-modify-written with other tasks (a tenant-wide
// ledger would serialise every task's releases through one object), and it outlives its Tenant too.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "operator/kube/api.h"

namespace valley::api {

inline constexpr const char* kCostRecordLabel = "valley.dev/cost-record";
inline constexpr const char* kCostRecordNamespaceLabel = "valley.dev/task-namespace";
inline constexpr const char* kCostRecordTaskLabel = "valley.dev/task-name";
inline constexpr const char* kCostRecordKey = "record.json";

std::string cost_record_name(const std::string& task_uid);

// One record as kept (the ConfigMap's record.json).
struct CostRecord {
  std::string ns, name, uid, phase;
  bool deleted = false;
  nlohmann::json cost = nlohmann::json::object();  // status.cost without its estimate
  bool final() const { return cost.is_object() && cost.contains("final"); }
  nlohmann::json to_json() const;
  static std::optional<CostRecord> from_json(const nlohmann::json& j);
};

class CostRecords {
 public:
  CostRecords(kube::Api& client, std::string ns) : client_(client), ns_(std::move(ns)) {}
  // Writes (server-side apply) the record; false when the API server did not take it.
  bool keep(const CostRecord& record);
  // The records of namespace/name (every incarnation), read from the API server.
  std::vector<CostRecord> of_task(const std::string& task_ns, const std::string& task_name);
  // Every record (valleyctl cost), of one task namespace or, with "", of all.
  std::vector<CostRecord> all(const std::string& task_ns = "");
  const std::string& ns() const { return ns_; }

 private:
  std::vector<CostRecord> list(const std::string& selector);
  kube::Api& client_;
  std::string ns_;
};

}  // namespace valley::api
