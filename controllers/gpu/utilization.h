// A task's GPU utilization over time, from DCGM-exporter's per-GPU series of its pods, kept as a
// summary in status.utilization; and whether its idlePolicy's idle window has passed. Pure: the
// reconciler passes the latest reading (one poll of Prometheus) and the status it holds.
//
// status.utilization: gpuPercent and memoryUsedMiB (the latest reading's means over the task's
// GPUs), meanGpuPercent (GPU-time weighted over every reading), sampledGpuSeconds and
// idleGpuSeconds (GPU-time observed, and the part of it on GPUs below the idle threshold), idleGpuHours
// (the same for people), idleSince (when the task's mean went below the threshold; absent while it is
// above), updated (the reading's time: a reading is counted once, however often the task reconciles).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <vector>

#include "controllers/api/spec.h"
#include "controllers/gpu/health.h"
#include "operator/kube/timefmt.h"

namespace valley::gpu {

struct GpuReading {
  double util_percent = 0;
  double memory_mib = 0;
};

struct TaskReading {
  kube::SystemTime at;
  std::vector<GpuReading> gpus;  // the task's GPUs that DCGM reported at `at` (none: no data)
  // The time since the previous reading counts at most this long (Valley or Prometheus was away).
  std::chrono::seconds max_gap{120};
};

// The per-GPU series of pods' GPUs (DCGM-exporter's Kubernetes mode labels a GPU with the pod,
// namespace and container using it): utilization (signal "util") and framebuffer memory used
// ("memory").
std::vector<Query> utilization_queries();
// "namespace/pod" -> its GPUs' readings, from those queries' samples (matched by Hostname and gpu).
std::map<std::string, std::vector<GpuReading>> pod_readings(const std::map<std::string, std::vector<prom::Sample>>& by_signal);

// status.utilization brought up to date with `r` (unchanged when r is not newer than `updated`).
nlohmann::json accrue(const nlohmann::json& utilization, const TaskReading& r, const api::IdlePolicy& p);

// How long the task has been idle, once that is at least the policy's `after`; else nullopt.
std::optional<std::chrono::seconds> idle_for(const nlohmann::json& utilization, kube::SystemTime now, const api::IdlePolicy& p);

}  // namespace valley::gpu
