#include "controllers/task/gpu_watcher.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "operator/kube/remote_clock.h"

namespace valley::task {

GpuWatcher::GpuWatcher(std::string prometheus_url, gpu::HealthConfig config, std::chrono::seconds interval, OnChange on_change)
    : url_(std::move(prometheus_url)), config_(std::move(config)), interval_(interval), on_change_(std::move(on_change)) {}

std::map<std::string, std::string> GpuWatcher::faults() const {
  std::lock_guard lock(mu_);
  return faults_;
}

std::string GpuWatcher::fault_of(const std::string& node) const {
  std::lock_guard lock(mu_);
  auto it = faults_.find(node);
  return it == faults_.end() ? "" : it->second;
}

std::optional<gpu::TaskReading> GpuWatcher::reading(const std::vector<std::string>& pods) const {
  std::lock_guard lock(mu_);
  if (!polled_at_) return std::nullopt;
  gpu::TaskReading r;
  r.at = *polled_at_;
  r.max_gap = std::max<std::chrono::seconds>(std::chrono::seconds(60), 4 * interval_);
  for (const auto& p : pods)
    if (auto it = pods_.find(p); it != pods_.end()) r.gpus.insert(r.gpus.end(), it->second.begin(), it->second.end());
  return r;
}

void GpuWatcher::poll() {
  const prom::Client client(url_);
  std::map<std::string, std::vector<prom::Sample>> by_signal;
  std::string error;
  std::map<std::string, std::vector<prom::Sample>> use;
  const auto at = kube::cluster_clock().now();
  for (const auto& q : gpu::queries(config_)) {
    auto samples = client.query(q.promql, &error);
    if (!samples) break;
    by_signal[q.signal] = std::move(*samples);
  }
  if (error.empty())
    for (const auto& q : gpu::utilization_queries()) {
      auto samples = client.query(q.promql, &error);
      if (!samples) break;
      use[q.signal] = std::move(*samples);
    }
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    if (error != last_error_) {
      if (!error.empty()) spdlog::warn("gpu health: cannot query Prometheus ({}); keeping the last known faults", error);
      else if (!last_error_.empty()) spdlog::info("gpu health: Prometheus answers again");
      last_error_ = error;
    }
    if (!error.empty()) return;
    auto now = gpu::node_faults(config_, by_signal);
    for (const auto& [node, what] : now)
      if (!faults_.count(node) || faults_[node] != what) spdlog::warn("gpu health: node {}: {}", node, what);
    for (const auto& [node, what] : faults_)
      if (!now.count(node)) spdlog::info("gpu health: node {} is healthy again (was: {})", node, what);
    changed = now != faults_;
    faults_ = std::move(now);
    pods_ = gpu::pod_readings(use);
    polled_at_ = at;
  }
  if (changed && on_change_) on_change_();
}

void GpuWatcher::run(const std::atomic<bool>& stop) {
  if (url_.empty()) return;
  spdlog::info("gpu health: reading DCGM metrics from Prometheus at {} every {}s", url_, interval_.count());
  auto next = std::chrono::steady_clock::now();
  while (!stop.load()) {
    if (std::chrono::steady_clock::now() >= next) {
      try {
        poll();
      } catch (const std::exception& e) {  // a Prometheus answer it cannot read: the next poll tries again
        spdlog::error("gpu health: {}", e.what());
      }
      next = std::chrono::steady_clock::now() + interval_;
    }
    // Short naps: a stopping operator hands its lease over at once, not after a poll interval.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace valley::task
