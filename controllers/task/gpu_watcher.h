// Polls Prometheus for DCGM-exporter's metrics every `interval`: the GPU health signals of
// controllers/gpu/health.h (faults per node, for the planner and the task reconciler) and the utilization
// of each pod's GPUs (for status.utilization and idle policies). I/O at the
// edge: one thread; nothing runs without a Prometheus address. When Prometheus cannot be reached,
// the last answer stands (a scrape gap neither invents nor clears a fault) and the error is logged
// once.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controllers/gpu/health.h"
#include "controllers/gpu/utilization.h"
#include "operator/prom/query.h"

namespace valley::task {

class GpuWatcher {
 public:
  using OnChange = std::function<void()>;
  GpuWatcher(std::string prometheus_url, gpu::HealthConfig config, std::chrono::seconds interval, OnChange on_change);
  void run(const std::atomic<bool>& stop);
  std::map<std::string, std::string> faults() const;  // node -> what is wrong
  std::string fault_of(const std::string& node) const;  // "" when healthy
  // The latest poll's readings of the GPUs the given pods ("namespace/pod") use, at the poll's
  // time; nullopt before the first successful poll.
  std::optional<gpu::TaskReading> reading(const std::vector<std::string>& pods) const;
  bool enabled() const { return !url_.empty(); }

 private:
  void poll();
  std::string url_;
  gpu::HealthConfig config_;
  std::chrono::seconds interval_;
  OnChange on_change_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> faults_;
  std::map<std::string, std::vector<gpu::GpuReading>> pods_;
  std::optional<kube::SystemTime> polled_at_;
  std::string last_error_;
};

}  // namespace valley::task
