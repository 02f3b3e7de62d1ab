// The operator's I/O for data in and outputs out (controllers/lifecycle/transfers.h decides when),
// on one thread of its own so no store slows a reconcile:
//  - spec.data: lists the whole data set (its size is status.data) until it is readable; a missing bucket,
//    an empty prefix or unusable credentials is the task's DataUnavailable reason. Retried every
//    `retry` until readable, then no longer asked.
//  - outputs: once asked (the task ended and its pods are done), lists what the pods kept and
//    writes Valley's report (lifecycle::kReportJson, kReportHtml) beside it; the result becomes
//    status.outputs. A failure is retried every `retry`. Writing the report again after an operator
//    restart rewrites the same two objects: nothing is kept twice.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/api/spec.h"
#include "controllers/lifecycle/transfers.h"
#include "operator/kube/api.h"

namespace valley::task {

class TransferWatcher {
 public:
  using OnChange = std::function<void(const std::string& key)>;  // a result the task has not seen
  // `denied_cidrs`: addresses a store call may not connect to (storage::with_operator_bounds).
  TransferWatcher(kube::Api& client, std::chrono::seconds retry, OnChange on_change, std::vector<std::string> denied_cidrs = {});

  void check_data(const api::TaskSpec& spec);  // cheap; call on every reconcile of a task with data
  std::optional<lifecycle::DataCheck> data(const std::string& key) const;
  // `task`: the TrainingTask with the status just written (the report is made from it).
  void keep_outputs(const std::string& key, const api::TaskSpec& spec, nlohmann::json task);
  std::optional<nlohmann::json> outputs(const std::string& key) const;
  void forget(const std::string& key);

  void run(const std::atomic<bool>& stop);

 private:
  struct Entry {
    std::string ns;
    std::optional<api::TaskSpec::Data> data;
    std::optional<lifecycle::DataCheck> data_check;
    std::optional<api::TaskSpec::Outputs> outputs;
    nlohmann::json task;  // set while the outputs are to be kept
    std::optional<nlohmann::json> kept;
    std::chrono::steady_clock::time_point next{};
  };
  bool has_work(const Entry& e) const { return (e.data && !(e.data_check && e.data_check->ready)) || (e.outputs && !e.task.is_null()); }
  void work(const std::string& key, Entry entry);

  kube::Api& client_;
  std::vector<std::string> denied_cidrs_;
  std::chrono::seconds retry_;
  OnChange on_change_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;
};

}  // namespace valley::task
