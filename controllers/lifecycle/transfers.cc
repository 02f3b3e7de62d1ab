#include "controllers/lifecycle/transfers.h"

#include "controllers/api/conditions.h"
#include "controllers/lifecycle/lifecycle.h"
#include "operator/kube/json_fields.h"

namespace valley::lifecycle {

bool waits_for_data(const api::TaskSpec& spec, const nlohmann::json& status) {
  if (!spec.data || kube::int_at(status, "epoch").value_or(0) > 0) return false;
  const nlohmann::json* c = api::find_condition(status, kDataReady);
  return !c || c->value("status", "") != "True" || c->value("observedGeneration", int64_t{-1}) != spec.generation;
}

bool outputs_due(const api::TaskSpec& spec, const nlohmann::json& status, bool pods_done) {
  if (!spec.outputs || !pods_done || !finished(kube::string_at(status, "phase"))) return false;
  // The report carries the final cost: wait for it where the task is priced.
  const nlohmann::json& cost = kube::object_at(status, "cost");
  if (cost.contains("accruedMicros") && !cost.contains("finalMicros")) return false;
  return !kube::object_at(status, "outputs").contains("time");
}

}  // namespace valley::lifecycle
