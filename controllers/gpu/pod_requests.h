// What a pod asks of a node, read as kube-scheduler sums it: per resource its containers' requests
// (else limits) plus its sidecars', at least any one init container's; and the GPU resources among
// them as Valley counts GPUs (device plugins, DRA claims and seats, MPS and time-sliced replicas).
// Pure functions of the lean pod (api::Pod); used by the planner's inputs and by cost.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "controllers/api/pod.h"

namespace valley::gpu {

// Per resource that `counted` accepts, as the scheduler sums a pod: its containers' requests (else
// limits) added up with its sidecars' (init containers that keep running), at least as much as any
// one init container's plus the sidecars started before it.
template <class Counted>
std::map<std::string, int64_t> pod_requests(const api::Pod& pod, Counted counted) {
  std::map<std::string, int64_t> out;
  auto of_container = [&](const api::PodContainer& c) {
    std::map<std::string, int64_t> u;
    for (const auto* src : {&c.limits, &c.requests})  // requests win where both exist
      for (const auto& [k, v] : *src)
        if (counted(k)) u[k] = v;
    return u;
  };
  std::map<std::string, int64_t> sidecars;
  for (const auto& c : pod.init_containers)
    for (const auto& [k, v] : of_container(c)) {
      if (c.sidecar) sidecars[k] += v;
      else out[k] = std::max(out[k], v + sidecars[k]);
    }
  std::map<std::string, int64_t> running = sidecars;
  for (const auto& c : pod.containers)
    for (const auto& [k, v] : of_container(c)) running[k] += v;
  for (const auto& [k, v] : running) out[k] = std::max(out[k], v);
  return out;
}

// The GPU resources the pod asks of device plugins, and its DRA claim's devices or seat, as named
// in the pod (a replica of a shared GPU under the device plugin's resource).
std::map<std::string, int64_t> device_requests(const api::Pod& pod);
// The GPU resources a pod asks for, a replica of a shared GPU under the key of its split
// (replicas_resource), whatever its phase.
std::map<std::string, int64_t> gpu_requests(const api::Pod& pod);
// What it holds now: its requests, or nothing once it has finished.
std::map<std::string, int64_t> gpu_usage(const api::Pod& pod);

}  // namespace valley::gpu
