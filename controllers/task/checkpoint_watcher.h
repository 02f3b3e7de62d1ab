// Reads each task's checkpoint record (latest.json) from its s3:// store, so the status can report
// the last checkpoint's step and time and, after a disruption, the work lost. I/O at the edge: one
// thread, every `interval` per task (sooner after poke()), credentials from the task's Secret read
// through the API server. pvc:// stores are not readable from the operator; their pods report the
// record in their termination message instead (see lifecycle.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/api/spec.h"
#include "operator/kube/api.h"
#include "operator/storage/checkpoint_record.h"

namespace valley::task {

class CheckpointWatcher {
 public:
  // on_change(task key, error): a new record was read, or reading failed with a new error ("" = ok).
  using OnChange = std::function<void(const std::string& key, const std::string& error)>;
  // `denied_cidrs`: addresses a store read may not connect to (storage::with_operator_bounds).
  CheckpointWatcher(kube::Api& client, std::chrono::seconds interval, OnChange on_change, std::vector<std::string> denied_cidrs = {});

  // Keeps watching the task while it lives (call on every reconcile; cheap). Tasks without an s3://
  // store are ignored.
  void watch(const api::TaskSpec& spec);
  void forget(const std::string& key);
  void poke(const std::string& key);  // read it soon (a disruption: what will the restart resume from?)
  std::optional<storage::CheckpointRecord> latest(const std::string& key) const;

  void run(const std::atomic<bool>& stop);

 private:
  struct Entry {
    std::string ns, uri, secret;
    std::chrono::steady_clock::time_point next{};
    std::optional<storage::CheckpointRecord> record;
    std::string error;
  };
  void read(const std::string& key, Entry entry);

  kube::Api& client_;
  std::vector<std::string> denied_cidrs_;
  std::chrono::seconds interval_;
  OnChange on_change_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;
};

}  // namespace valley::task
