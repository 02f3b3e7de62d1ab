// The only contract between the planning loop and the TrainingTask reconciler.
// - Admissions: what the last plan decided for each task it planned (admitted or why it waits,
//   where, the estimate's basis). The planning loop alone writes it; reconcilers read a copy.
// - Refusals: the API server refused to create a task's objects in a way retrying will not heal
//   (the reconciler records it); the plan gives such a task no capacity until the task (its UID or
//   generation) or its namespace's labels change, or refused_retry passes.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/lifecycle/lifecycle.h"
#include "operator/kube/timefmt.h"

namespace valley::task {

class AdmissionBoard {
 public:
  std::optional<lifecycle::Admission> admission(const std::string& key) const;
  // The planning loop's: the decisions that changed, and the tasks the plan had (the rest go).
  // Returns how many tasks are admitted now.
  size_t publish(std::vector<std::pair<const std::string*, lifecycle::Admission>>& updates, const std::function<bool(const std::string&)>& planned);
  // Tasks admitted in the last plan (whose cost accrues).
  size_t admitted_count() const { return admitted_.load(); }
  // The planning loop's own read, without a copy or a lock: only its thread writes.
  const std::map<std::string, lifecycle::Admission>& published() const { return admissions_; }

 private:
  mutable std::mutex mu_;
  std::map<std::string, lifecycle::Admission> admissions_;  // by task key
  std::atomic<size_t> admitted_{0};
};

class Refusals {
 public:
  explicit Refusals(std::chrono::seconds retry_after) : retry_after_(retry_after) {}
  // The refusal that still applies to the task now, if any: one recorded for another UID or
  // generation, other namespace labels, or (blocking) older than retry_after is dropped.
  // namespace_labels(ns) is asked only when the task has a refusal recorded.
  std::optional<lifecycle::CreateRefusal> of(const std::string& key, const nlohmann::json& task,
                                  const std::function<std::string(const std::string&)>& namespace_labels);
  void record(const std::string& key, const std::string& uid, int64_t generation, const std::string& namespace_labels,
              lifecycle::CreateRefusal what);
  void forget(const std::string& key);
  bool blocking(const std::string& key) const;  // recorded and blocking
  std::vector<std::string> keys_in(const std::string& ns) const;

 private:
  struct Refusal {
    std::string uid;
    int64_t generation = 0;
    std::string namespace_labels;  // as they were: a relabelled namespace may admit the pods now
    kube::SystemTime at;
    lifecycle::CreateRefusal what;
  };
  std::chrono::seconds retry_after_;
  mutable std::mutex mu_;
  std::map<std::string, Refusal> refusals_;  // by task key
};

}  // namespace valley::task
