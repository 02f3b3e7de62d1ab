// Why a task's pods cannot start, in the task's words: the kubelet's waiting reasons for a
// container or init container (an image it cannot pull, a Secret or ConfigMap the container's
// config names that does not exist, a runtime that cannot create or run it, a crash loop) and a pod
// kube-scheduler cannot place. None of these heals by waiting for long; the lifecycle says which
// in a PodsStarted condition at once, and after the start grace gives the task's GPUs back
// (decider.h: start_failed).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "controllers/api/pod.h"
#include "controllers/api/spec.h"

namespace valley::lifecycle {

// A worker waiting for a node its NodePool is to buy: not a failure until the provisioning timeout.
inline constexpr const char* kAwaitingNodes = "AwaitingNodes";
// ... and what the task says once that timeout passed without the node.
inline constexpr const char* kNodesNotProvisioned = "NodesNotProvisioned";

struct StartFailure {
  std::string reason;   // ImagePullFailed, ContainerConfigError, ContainerStartFailed, Unschedulable, AwaitingNodes
  std::string message;  // "<container>: <kubelet's reason>: <its message>", or the scheduler's words
};

// The first reason the pod cannot start, nullopt when nothing says so. A pod pinned to a node
// (Valley's workers) that kube-scheduler refuses is not one: the planner moves it (plan inputs).
// One that selects a NodePool (a worker on capacity still to be bought) awaits its node: kAwaitingNodes.
std::optional<StartFailure> start_failure(const api::Pod& pod);

// Whether a task's status.reason says its pods could not start (its images may still change then).
bool is_start_failure_reason(const std::string& reason);

// The grace a task's pods get to start before its GPUs are given back: spec.runPolicy.
// startGraceSeconds, else the operator's.
std::chrono::seconds start_grace(const api::TaskSpec& spec, std::chrono::seconds operator_default);

// Until when a task whose pods could not start waits before it is planned again
// (status.startFailure.retryAfter), while its spec is the one that failed; nullopt otherwise
// (never failed to start, or the spec changed since: it is retried at once).
std::optional<kube::SystemTime> start_backoff_until(const api::TaskSpec& spec, const nlohmann::json& status);

// The wait after the n-th failed start (n >= 1): a minute, doubling, at most 30 minutes.
std::chrono::seconds start_backoff(int64_t failed_starts);

}  // namespace valley::lifecycle
