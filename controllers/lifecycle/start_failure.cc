#include "controllers/lifecycle/start_failure.h"

#include <algorithm>
#include <array>
#include <utility>

#include "operator/kube/json_fields.h"
#include "operator/kube/timefmt.h"
#include "operator/text.h"

namespace valley::lifecycle {
namespace {

// The kubelet's waiting reasons that mean a container will not start by itself, and the task's
// word for each.
constexpr std::array<std::pair<const char*, const char*>, 8> kWaiting = {{
    {"ErrImagePull", "ImagePullFailed"},
    {"ImagePullBackOff", "ImagePullFailed"},
    {"ErrImageNeverPull", "ImagePullFailed"},
    {"InvalidImageName", "ImagePullFailed"},
    {"CreateContainerConfigError", "ContainerConfigError"},
    {"CreateContainerError", "ContainerStartFailed"},
    {"RunContainerError", "ContainerStartFailed"},
    {"CrashLoopBackOff", "ContainerStartFailed"},
}};

const char* task_reason(const std::string& waiting) {
  for (const auto& [kubelet, ours] : kWaiting)
    if (waiting == kubelet) return ours;
  return nullptr;
}

std::string clipped(std::string s) {
  if (s.size() > 400) s = utf8_head(s, 400) + "...";
  return s;
}

}  // namespace

std::optional<StartFailure> start_failure(const api::Pod& pod) {
  if (pod.deleting || pod.phase == "Succeeded" || pod.phase == "Failed") return std::nullopt;
  for (const auto* list : {&pod.init_container_statuses, &pod.container_statuses})
    for (const auto& cs : *list)
      if (const char* reason = task_reason(cs.waiting_reason))
        return StartFailure{reason, clipped(cs.name + ": " + cs.waiting_reason + (cs.waiting_message.empty() ? "" : ": " + cs.waiting_message))};
  if (pod.node_name.empty() && pod.pinned.empty())
    for (const auto& c : pod.conditions)
      if (c.type == "PodScheduled" && c.status == "False" && c.reason == "Unschedulable") {
        const std::string scheduler = c.message.empty() ? "kube-scheduler cannot place it" : c.message;
        if (!pod.bought_from.empty())
          return StartFailure{kAwaitingNodes, clipped("waiting for a node NodePool " + pod.bought_from + " is to buy (" + scheduler + ")")};
        return StartFailure{"Unschedulable", clipped(scheduler)};
      }
  return std::nullopt;
}

bool is_start_failure_reason(const std::string& reason) {
  if (reason == "Unschedulable" || reason == kAwaitingNodes || reason == kNodesNotProvisioned) return true;
  return std::any_of(kWaiting.begin(), kWaiting.end(), [&](const auto& w) { return reason == w.second; });
}

std::chrono::seconds start_grace(const api::TaskSpec& spec, std::chrono::seconds operator_default) {
  return spec.run_policy.start_grace_seconds ? std::chrono::seconds(*spec.run_policy.start_grace_seconds) : operator_default;
}

std::optional<kube::SystemTime> start_backoff_until(const api::TaskSpec& spec, const nlohmann::json& status) {
  const nlohmann::json& failure = kube::object_at(status, "startFailure");
  if (failure.empty() || kube::int_at(failure, "generation").value_or(-1) != spec.generation) return std::nullopt;
  return kube::time_at(failure, "retryAfter");
}

std::chrono::seconds start_backoff(int64_t failed_starts) {
  const int64_t doublings = std::clamp<int64_t>(failed_starts - 1, 0, 5);
  return std::min(std::chrono::seconds(60) * (int64_t{1} << doublings), std::chrono::seconds(1800));
}

}  // namespace valley::lifecycle
