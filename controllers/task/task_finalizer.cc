// The TrainingTask reconciler's outputs finalizer (lifecycle/transfers.h says when): a merge patch
// of metadata.finalizers conditional on the resourceVersion last read or written, so a finalizer
// another controller added meanwhile is never dropped (409: decided again on the newer task).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controllers/task/task_reconciler.h"
#include "operator/kube/error.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/remote_clock.h"

namespace valley::task {

bool TaskReconciler::keep_outputs_finalizer(const std::string& key, const nlohmann::json& cached, const api::TaskSpec* spec,
                                            const nlohmann::json& status, std::optional<std::chrono::seconds>* requeue_after) {
  // Most tasks keep no outputs and never held the finalizer: nothing to read or copy.
  const nlohmann::json& cached_finalizers = kube::array_at(kube::object_at(cached, "metadata"), "finalizers");
  if (!(spec && spec->outputs) && std::find(cached_finalizers.begin(), cached_finalizers.end(), lifecycle::kOutputsFinalizer) == cached_finalizers.end())
    return true;
  const nlohmann::json task = written_.latest(key, cached);
  const nlohmann::json& meta = kube::object_at(task, "metadata");
  const auto step = lifecycle::outputs_finalizer(meta, spec, status, kube::cluster_clock().now(), options_.outputs_on_delete,
                                                 options_.outputs_finalizer);
  if (step.recheck_in && (!*requeue_after || **requeue_after > *step.recheck_in)) *requeue_after = step.recheck_in;
  if (step.kind == lifecycle::FinalizerStep::Keep) return true;
  const nlohmann::json patch = {{"metadata",
                                 {{"finalizers", lifecycle::finalizers_after(meta, step.kind)},
                                  {"resourceVersion", kube::string_at(meta, "resourceVersion")}}}};
  try {
    const nlohmann::json answer =
        client_.patch(kube::resources::kTrainingTasks, kube::string_at(meta, "namespace"), kube::string_at(meta, "name"), kube::PatchType::Merge, patch);
    written_.wrote(key, task, answer);
  } catch (const kube::KubeError& e) {
    if (e.http_status() == 404) return true;
    if (e.http_status() != 409) spdlog::warn("{}: {} the outputs finalizer: {}", key, step.kind == lifecycle::FinalizerStep::Add ? "add" : "remove", e.what());
    return false;
  }
  if (step.gave_up) {
    const std::string why = "deleted " + std::to_string(options_.outputs_on_delete.count()) +
                            " s ago and its outputs are still not kept (see its OutputsNotKept Events and the operator's log): it goes without them";
    events_.warning(task, "OutputsNotKept", "KeepOutputs", why);
    spdlog::warn("{}: {}", key, why);
  }
  spdlog::debug("{}: outputs finalizer {}", key, step.kind == lifecycle::FinalizerStep::Add ? "added" : "removed");
  return true;
}

}  // namespace valley::task
