#include "controllers/gpu/utilization.h"

#include <algorithm>
#include <cmath>

#include "controllers/api/money.h"
#include "operator/kube/json_fields.h"

namespace valley::gpu {

std::vector<Query> utilization_queries() {
  return {{"util", "DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}"}, {"memory", "DCGM_FI_DEV_FB_USED{pod!=\"\"}"}};
}

std::map<std::string, std::vector<GpuReading>> pod_readings(const std::map<std::string, std::vector<prom::Sample>>& by_signal) {
  auto label = [](const prom::Sample& s, const char* name) {
    auto it = s.labels.find(name);
    return it == s.labels.end() ? std::string() : it->second;
  };
  // One reading per GPU (node, index): its pod's key, utilization and memory.
  std::map<std::pair<std::string, std::string>, std::pair<std::string, GpuReading>> gpus;
  for (const char* signal : {"util", "memory"}) {
    auto it = by_signal.find(signal);
    if (it == by_signal.end()) continue;
    for (const auto& s : it->second) {
      const std::string ns = label(s, "namespace"), pod = label(s, "pod");
      if (ns.empty() || pod.empty()) continue;
      auto& [key, reading] = gpus[{label(s, "Hostname"), label(s, "gpu")}];
      key = ns + "/" + pod;
      (std::string(signal) == "util" ? reading.util_percent : reading.memory_mib) = s.value;
    }
  }
  std::map<std::string, std::vector<GpuReading>> out;
  for (const auto& [gpu, entry] : gpus) out[entry.first].push_back(entry.second);
  return out;
}

nlohmann::json accrue(const nlohmann::json& utilization, const TaskReading& r, const api::IdlePolicy& p) {
  nlohmann::json u = utilization.is_object() ? utilization : nlohmann::json::object();
  const auto updated = kube::time_at(u, "updated");
  if (updated && r.at <= *updated) return u;  // counted already
  if (r.gpus.empty()) {
    // No GPU of the task reported (no pods running, or no series yet): nothing to count, and no
    // idle stretch goes on through it.
    u.erase("idleSince");
    u["updated"] = kube::format_time(r.at);
    return u;
  }
  double util = 0, memory = 0;
  for (const auto& g : r.gpus) {
    util += std::clamp(g.util_percent, 0.0, 100.0);
    memory += std::clamp(g.memory_mib, 0.0, 1e9);  // MiB; a wild sample must not overflow the sum's integer
  }
  const double n = static_cast<double>(r.gpus.size());
  util /= n;
  memory /= n;
  if (updated) {
    const int64_t dt = std::clamp<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(r.at - *updated).count(), 0, r.max_gap.count());
    int64_t idle_gpus = 0;
    for (const auto& g : r.gpus) idle_gpus += g.util_percent < p.below_percent ? 1 : 0;
    const int64_t sampled = kube::int_at(u, "sampledGpuSeconds").value_or(0) + dt * static_cast<int64_t>(r.gpus.size());
    const int64_t idle = kube::int_at(u, "idleGpuSeconds").value_or(0) + dt * idle_gpus;
    const int64_t percent_seconds = kube::int_at(u, "gpuPercentSeconds").value_or(0) + static_cast<int64_t>(std::llround(util * n)) * dt;
    u["sampledGpuSeconds"] = sampled;
    u["idleGpuSeconds"] = idle;
    u["gpuPercentSeconds"] = percent_seconds;
    u["idleGpuHours"] = api::format_money(idle * 1'000'000 / 3600, 2);
    if (sampled > 0) u["meanGpuPercent"] = static_cast<int64_t>(std::llround(static_cast<double>(percent_seconds) / static_cast<double>(sampled)));
  }
  u["gpuPercent"] = static_cast<int64_t>(std::llround(util));
  u["memoryUsedMiB"] = static_cast<int64_t>(std::llround(memory));
  if (util < p.below_percent) {
    if (!u.contains("idleSince")) u["idleSince"] = kube::format_time(r.at);
  } else {
    u.erase("idleSince");
  }
  u["updated"] = kube::format_time(r.at);
  return u;
}

std::optional<std::chrono::seconds> idle_for(const nlohmann::json& utilization, kube::SystemTime now, const api::IdlePolicy& p) {
  const auto since = kube::time_at(utilization, "idleSince");
  if (!since) return std::nullopt;
  const auto d = std::chrono::duration_cast<std::chrono::seconds>(now - *since);
  if (d < p.after) return std::nullopt;
  return d;
}

}  // namespace valley::gpu
