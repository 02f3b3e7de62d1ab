#include "controllers/task/checkpoint_watcher.h"

#include <spdlog/spdlog.h>

#include "controllers/task/poll_schedule.h"
#include "operator/storage/task_store.h"

namespace valley::task {

CheckpointWatcher::CheckpointWatcher(kube::Api& client, std::chrono::seconds interval, OnChange on_change, std::vector<std::string> denied_cidrs)
    : client_(client), denied_cidrs_(std::move(denied_cidrs)), interval_(interval), on_change_(std::move(on_change)) {}

void CheckpointWatcher::watch(const api::TaskSpec& spec) {
  if (spec.checkpoint_uri.rfind("s3://", 0) != 0) return;
  const std::string key = spec.ns + "/" + spec.name;
  std::lock_guard lock(mu_);
  Entry& e = entries_[key];
  if (e.uri != spec.checkpoint_uri || e.secret != spec.checkpoint_secret) {
    e = Entry{};
    e.ns = spec.ns;
    e.uri = spec.checkpoint_uri;
    e.secret = spec.checkpoint_secret;
    cv_.notify_one();
  }
}

void CheckpointWatcher::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  entries_.erase(key);
}

void CheckpointWatcher::poke(const std::string& key) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second.next = {};
    cv_.notify_one();
  }
}

std::optional<storage::CheckpointRecord> CheckpointWatcher::latest(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? std::nullopt : it->second.record;
}

void CheckpointWatcher::run(const std::atomic<bool>& stop) {
  run_per_namespace(stop, kStoreThreads, mu_, cv_, entries_, interval_, [](const Entry&) { return true; },
                    [this](const std::string& key, Entry entry) { read(key, std::move(entry)); });
}

void CheckpointWatcher::read(const std::string& key, Entry entry) {
  std::optional<storage::CheckpointRecord> record;
  std::string error;
  try {
    if (auto store = storage::open_task_store(client_, entry.ns, entry.secret, entry.uri, "checkpoint", &error, denied_cidrs_))
      if (auto text = store->get(storage::kLatestKey)) record = storage::parse_checkpoint_record(*text, &error);
  } catch (const std::exception& e) {
    error = e.what();
  }
  bool changed = false, error_changed = false;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.uri != entry.uri) return;  // forgotten or changed meanwhile
    Entry& e = it->second;
    if (record && (!e.record || e.record->step != record->step || e.record->time != record->time)) {
      e.record = record;
      changed = true;
    }
    if (e.error != error) {
      e.error = error;
      changed = error_changed = true;
    }
  }
  // Once per new error (and once when it clears), not at every poll.
  if (error_changed) {
    if (error.empty()) {
      spdlog::info("{}: checkpoint store readable again", key);
    } else {
      spdlog::warn("{}: {}", key, error);
    }
  }
  if (changed && on_change_) on_change_(key, error);
}

}  // namespace valley::task
