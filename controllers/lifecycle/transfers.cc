#include "controllers/lifecycle/transfers.h"

#include <algorithm>

#include "controllers/api/conditions.h"
#include "controllers/lifecycle/lifecycle.h"
#include "operator/kube/json_fields.h"

namespace valley::lifecycle {

bool waits_for_data(const api::TaskSpec& spec, const nlohmann::json& status) {
  if (!spec.data || kube::int_at(status, "epoch").value_or(0) > 0) return false;
  const nlohmann::json* c = api::find_condition(status, kDataReady);
  return !c || c->value("status", "") != "True" || c->value("observedGeneration", int64_t{-1}) != spec.generation;
}

nlohmann::json data_status(const api::TaskSpec& spec, const DataCheck& check) {
  if (!spec.data || !check.ready) return nullptr;
  return {{"uri", spec.data->uri}, {"files", check.files}, {"bytes", check.bytes}};
}

bool outputs_due(const api::TaskSpec& spec, const nlohmann::json& status, bool pods_done) {
  if (!spec.outputs || !pods_done || !finished(kube::string_at(status, "phase"))) return false;
  // The report carries the final cost: wait for it where the task is priced.
  const nlohmann::json& cost = kube::object_at(status, "cost");
  if (cost.contains("accruedMicros") && !cost.contains("finalMicros")) return false;
  return !kube::object_at(status, "outputs").contains("time");
}

namespace {
bool holds_finalizer(const nlohmann::json& metadata) {
  const nlohmann::json& list = kube::array_at(metadata, "finalizers");
  return std::any_of(list.begin(), list.end(), [](const nlohmann::json& f) { return f.is_string() && f == kOutputsFinalizer; });
}
}  // namespace

FinalizerStep outputs_finalizer(const nlohmann::json& metadata, const api::TaskSpec* spec, const nlohmann::json& status,
                                kube::SystemTime now, std::chrono::seconds give_up, bool may_add) {
  FinalizerStep step;
  const bool held = holds_finalizer(metadata);
  const bool wanted = spec && spec->outputs && kube::int_at(status, "epoch").value_or(0) > 0 &&
                      !kube::object_at(status, "outputs").contains("time");
  const auto deleting = kube::parse_time(kube::string_at(metadata, "deletionTimestamp"));
  if (!deleting) {
    if (wanted && !held && may_add) step.kind = FinalizerStep::Add;
    if (!wanted && held) step.kind = FinalizerStep::Remove;
    return step;
  }
  if (!held) return step;
  const auto until = *deleting + give_up;
  if (!wanted || now >= until) {
    step.kind = FinalizerStep::Remove;
    step.gave_up = wanted;
  } else {
    step.recheck_in = std::chrono::duration_cast<std::chrono::seconds>(until - now) + std::chrono::seconds(1);
  }
  return step;
}

}  // namespace valley::lifecycle
