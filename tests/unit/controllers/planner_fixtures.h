// Shared by the planner's unit tests: nodes, tasks and a greedy replay of plans.
#pragma once

#include <gtest/gtest.h>

#include "controllers/planner/planner.h"

namespace valley::planner::fixtures {

using namespace std::chrono_literals;

inline const SystemTime kNow = SystemTime(std::chrono::seconds(1795316645));

inline Node node(const std::string& name, const std::string& vendor, const std::string& cls, std::map<std::string, int64_t> free) {
  Node n;
  n.name = name;
  n.vendor = vendor;
  n.capacity_class = cls;
  n.free = free;
  n.capacity = std::move(free);
  return n;
}
inline Node nvidia(const std::string& name, int gpus, const std::string& cls = "on-demand") {
  return node(name, "nvidia", cls, {{"nvidia.com/gpu", gpus}});
}
inline Node amd(const std::string& name, int gpus) { return node(name, "amd", "on-demand", {{"amd.com/gpu", gpus}}); }

inline Task task(const std::string& key, int priority, int min, int max, int gpu_milli = 1000) {
  Task t;
  t.key = key;
  t.priority = priority;
  t.min_workers = min;
  t.max_workers = max;
  t.gpu_milli = gpu_milli;
  t.created = kNow - 60s;
  return t;
}

// Observations at each (workers, steps per second), as status.scaling holds them.
inline Scaling measured(std::initializer_list<std::pair<int, double>> points) {
  Scaling s;
  for (auto [n, r] : points) s = observe(s, n, r);
  return s;
}

// The planner as before growth had to pay: every task grows to max whenever GPUs are free. Most
// tests here are about admission, shrinking and preemption mechanics, which that makes plain.
inline std::vector<Decision> greedy_plan(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now, Config c = {}) {
  c.min_marginal_efficiency = 0;
  return plan(nodes, tasks, now, c);
}

// Turns a decision into the task's next state, as the controller would after carrying it out.
inline Task apply(Task t, const Decision& d, SystemTime when) {
  bool resized = t.admitted && d.workers != static_cast<int>(t.workers.size());
  t.admitted = d.workers > 0;
  t.workers = d.placement;
  if (resized) t.last_resize = when;
  return t;
}

inline const Decision& find(const std::vector<Decision>& ds, const std::string& key) {
  for (const auto& d : ds)
    if (d.key == key) return d;
  throw std::runtime_error("no decision for " + key);
}


}  // namespace valley::planner::fixtures
