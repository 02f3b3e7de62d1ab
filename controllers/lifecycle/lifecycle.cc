#include "controllers/lifecycle/lifecycle.h"

#include <algorithm>

#include "controllers/cost/engine.h"
#include "controllers/lifecycle/decider.h"
#include "controllers/lifecycle/start_failure.h"
#include "controllers/render/render.h"
#include "controllers/render/transfers.h"
#include "operator/kube/json_fields.h"

namespace valley::lifecycle {

using detail::condition_field;
using detail::condition_true;
using detail::find_condition;
using detail::kIdleSuspend;
using detail::kSucceeded;
using detail::kFailed;

bool idle_suspended(const api::TaskSpec& spec, const json& status) {
  const json* c = find_condition(status, "Idle");
  return c && c->value("status", "") == "True" && c->value("reason", "") == kIdleSuspend &&
         c->value("observedGeneration", int64_t{-1}) == spec.generation;
}

std::string idle_shrink(const json& status) {
  if (!condition_true(status, "Idle") || condition_field(status, "Idle", "reason") != "IdleShrink") return "";
  return condition_field(status, "Idle", "message");
}

bool over_budget(const api::TaskSpec& spec, const json& status) {
  if (!spec.max_cost_micros || !status.is_object() || !status.contains("cost")) return false;
  return cost::accrued_micros(status["cost"]) >= *spec.max_cost_micros;
}

bool finished(const std::string& phase) { return phase == kSucceeded || phase == kFailed; }

int desired_workers(const api::TaskSpec& spec) {
  if (spec.type == api::TaskType::Single) return 1;
  return std::clamp(spec.target_workers.value_or(spec.min_workers), spec.min_workers, spec.max_workers);
}

PodView view_pod(const api::Pod& pod) {
  PodView v;
  v.name = pod.name;
  v.uid = pod.uid;
  v.resource_version = pod.resource_version;
  v.deleting = pod.deleting;
  v.role = pod.label(render::label::kRole);
  try {
    const std::string& epoch = pod.label(render::label::kEpoch);
    const std::string& index = pod.label(render::label::kWorkerIndex);
    v.epoch = std::stoi(epoch.empty() ? "0" : epoch);
    v.worker_index = std::stoi(index.empty() ? "-1" : index);
  } catch (const std::exception&) {
    v.epoch = 0;  // a mangled label makes the pod stale: it is replaced
  }
  v.node = pod.node_name;
  v.pinned = pod.pinned;
  v.hostfile = pod.hostfile;
  if (v.deleting) v.deletion_deadline = pod.deletion_timestamp;
  v.phase = pod.phase.empty() ? "Pending" : pod.phase;
  for (const auto& c : pod.conditions) {
    if (c.type == "Ready") v.ready = c.status == "True";
    if (c.type == "DisruptionTarget" && c.status == "True") v.disruption = c.reason.empty() ? "Disrupted" : c.reason;
  }
  static const char* kEvictionReasons[] = {"Evicted", "Shutdown", "NodeShutdown", "Terminated", "NodeLost"};
  if (v.disruption.empty())
    for (const char* r : kEvictionReasons)
      if (pod.reason == r) v.disruption = pod.reason;
  if (auto why = start_failure(pod)) {
    v.start_failure = why->reason;
    v.start_failure_message = why->message;
  }
  // An init container that failed ends the pod before its containers start. A sidecar's exit says
  // nothing of the workload: only the outputs sidecar's is kept, as the outputs' fate.
  for (const auto& cs : pod.init_container_statuses) {
    const bool sidecar = std::any_of(pod.init_containers.begin(), pod.init_containers.end(),
                                     [&](const api::PodContainer& c) { return c.sidecar && c.name == cs.name; });
    if (sidecar && cs.name == render::kOutputsContainer) {
      v.outputs_running = cs.running;
      if (cs.terminated && cs.exit_code) v.outputs_exit = static_cast<int>(std::clamp<int64_t>(*cs.exit_code, INT32_MIN, INT32_MAX));
      v.outputs_message = cs.message;
    }
    if (sidecar || !cs.exit_code || *cs.exit_code == 0) continue;
    v.exit_code = static_cast<int>(std::clamp<int64_t>(*cs.exit_code, INT32_MIN, INT32_MAX));
    v.failed_init = cs.name;
    v.failed_init_message = cs.message;
    break;
  }
  for (const auto& cs : pod.container_statuses) {
    if (!cs.exit_code) continue;  // not terminated (or no exit code to go by)
    const int code = static_cast<int>(std::clamp<int64_t>(*cs.exit_code, INT32_MIN, INT32_MAX));
    // The first non-zero exit among the containers explains the pod's failure.
    if (!v.exit_code || (*v.exit_code == 0 && code != 0)) {
      v.exit_code = code;
      v.exit_reason = cs.reason == "Error" || cs.reason == "Completed" ? "" : cs.reason;
    }
    if (cs.finished && (!v.finished_at || *cs.finished > *v.finished_at)) v.finished_at = cs.finished;
    if (v.termination_message.empty()) v.termination_message = cs.message;
  }
  return v;
}

Decision decide(const Observed& observed) { return detail::Decider(observed).run(); }

bool status_may_wait(const json& stored, const Decision& d, bool planned) {
  if (!d.delete_pods.empty() || d.delete_task) return false;
  const std::string phase_before = kube::string_at(stored, "phase"), phase_after = kube::string_at(d.status, "phase");
  if (!planned && phase_before.empty() && phase_after == "Pending") return true;
  if (kube::object_at(d.status, "cost").contains("final") && !kube::object_at(stored, "cost").contains("final")) return false;
  static const std::set<std::string> progress = {"replicas", "readyReplicas", "cost", "utilization"};
  for (const json* side : {&stored, &d.status})
    for (const auto& [k, v] : side->items())
      if (!progress.count(k) && stored.value(k, json()) != d.status.value(k, json())) return false;
  return true;
}

std::chrono::milliseconds status_hold(std::chrono::milliseconds window, size_t admitted_tasks, double progress_writes_per_second) {
  if (window.count() <= 0) return std::chrono::milliseconds(0);  // coalescing off
  return std::max<std::chrono::milliseconds>(window, cost::accrual_interval(std::chrono::seconds(0), admitted_tasks, progress_writes_per_second));
}

}  // namespace valley::lifecycle
