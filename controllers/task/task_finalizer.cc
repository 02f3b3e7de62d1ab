// The TrainingTask reconciler's outputs finalizer (lifecycle/transfers.h says when), added or
// removed through kube::add_finalizer / remove_finalizer, against the task as the cache shows it.
#include <spdlog/spdlog.h>

#include "controllers/task/task_reconciler.h"
#include "operator/kube/finalizers.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/remote_clock.h"

namespace valley::task {

bool TaskReconciler::keep_outputs_finalizer(const std::string& key, const nlohmann::json& cached, const api::TaskSpec* spec,
                                            const nlohmann::json& status, std::optional<std::chrono::seconds>* requeue_after) {
  const nlohmann::json& meta = kube::object_at(cached, "metadata");
  const auto step = lifecycle::outputs_finalizer(meta, spec, status, kube::cluster_clock().now(), options_.outputs_on_delete,
                                                 options_.outputs_finalizer);
  if (step.recheck_in && (!*requeue_after || **requeue_after > *step.recheck_in)) *requeue_after = step.recheck_in;
  if (step.kind == lifecycle::FinalizerStep::Keep) return true;
  std::vector<std::string> finalizers;
  for (const auto& f : kube::array_at(meta, "finalizers"))
    if (f.is_string()) finalizers.push_back(f.get<std::string>());
  const std::string ns = kube::string_at(meta, "namespace"), name = kube::string_at(meta, "name");
  const bool done = step.kind == lifecycle::FinalizerStep::Add
                        ? kube::add_finalizer(client_, kube::resources::kTrainingTasks, ns, name, finalizers,
                                              kube::string_at(meta, "resourceVersion"), lifecycle::kOutputsFinalizer)
                        : kube::remove_finalizer(client_, kube::resources::kTrainingTasks, ns, name, finalizers, lifecycle::kOutputsFinalizer);
  if (!done) return false;
  if (step.gave_up) {
    const std::string why = "deleted " + std::to_string(options_.outputs_on_delete.count()) +
                            " s ago and its outputs are still not kept (see its OutputsNotKept Events and the operator's log): it goes without them";
    events_.warning(cached, "OutputsNotKept", "KeepOutputs", why);
    spdlog::warn("{}: {}", key, why);
  }
  spdlog::debug("{}: outputs finalizer {}", key, step.kind == lifecycle::FinalizerStep::Add ? "added" : "removed");
  return true;
}

}  // namespace valley::task
