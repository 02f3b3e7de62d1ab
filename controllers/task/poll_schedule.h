// The next store read of a polling thread (CheckpointWatcher, TransferWatcher): among the entries
// with work to do, the longest overdue, so a store slower than the poll interval cannot starve the
// entries after it (the bad-input catalogue's slow store found this).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>

namespace valley::task {

// `entries`: a map (guarded by `mu`) whose values have `next` (a steady_clock time point);
// `has_work(value)` says whether one is to be read at all. Takes the longest-overdue entry, marks it
// due again `interval` later and returns a copy of it; otherwise waits on `cv` until the next falls
// due (at most a second, so the caller notices a stop) and returns nullopt.
template <class Map, class HasWork>
std::optional<std::pair<typename Map::key_type, typename Map::mapped_type>> take_due(std::mutex& mu, std::condition_variable& cv, Map& entries,
                                                                                     std::chrono::seconds interval, HasWork has_work) {
  std::unique_lock lock(mu);
  const auto now = std::chrono::steady_clock::now();
  auto wake = now + std::chrono::seconds(1);
  auto due = entries.end();
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (!has_work(it->second)) continue;
    if (it->second.next > now) {
      wake = std::min(wake, it->second.next);
    } else if (due == entries.end() || it->second.next < due->second.next) {
      due = it;
    }
  }
  if (due == entries.end()) {
    cv.wait_until(lock, wake);
    return std::nullopt;
  }
  due->second.next = now + interval;
  return *due;
}

}  // namespace valley::task
