// The store reads of a polling watcher (CheckpointWatcher, TransferWatcher): among the entries with
// work to do, the longest overdue first, so a store slower than the poll interval cannot starve the
// entries after it (the bad-input catalogue's slow store found this); on several threads, at most
// one read per namespace at a time, so that a tenant's slow or hostile store holds one thread and
// never the other tenants' reads.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace valley::task {

// The threads of each watcher: as many tenants' stores are read at once.
inline constexpr int kStoreThreads = 4;

// `entries`: a map (guarded by `mu`) whose values have `next` (a steady_clock time point);
// `has_work(value)` says whether one is to be read at all. Takes the longest-overdue entry, marks it
// due again `interval` later and returns a copy of it; otherwise waits on `cv` until the next falls
// due (at most a second, so the caller notices a stop) and returns nullopt.
// `on_take(value)` is called with the lock held on the entry taken.
template <class Map, class HasWork, class OnTake>
std::optional<std::pair<typename Map::key_type, typename Map::mapped_type>> take_due(std::mutex& mu, std::condition_variable& cv, Map& entries,
                                                                                     std::chrono::seconds interval, HasWork has_work,
                                                                                     OnTake on_take) {
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
  on_take(due->second);
  return *due;
}

template <class Map, class HasWork>
std::optional<std::pair<typename Map::key_type, typename Map::mapped_type>> take_due(std::mutex& mu, std::condition_variable& cv, Map& entries,
                                                                                     std::chrono::seconds interval, HasWork has_work) {
  return take_due(mu, cv, entries, interval, has_work, [](const auto&) {});
}

// Until `stop`: on `threads` threads, takes due entries (take_due) and runs work(key, copy) on each,
// never two of one namespace (the value's `ns`) at once. `work` catches what it throws.
template <class Map, class HasWork, class Work>
void run_per_namespace(const std::atomic<bool>& stop, int threads, std::mutex& mu, std::condition_variable& cv, Map& entries,
                       std::chrono::seconds interval, HasWork has_work, Work work) {
  std::set<std::string> busy;  // namespaces with a read in flight; guarded by mu
  auto loop = [&] {
    while (!stop.load()) {
      std::string ns;
      auto due = take_due(
          mu, cv, entries, interval, [&](const auto& e) { return !busy.count(e.ns) && has_work(e); },
          [&](const auto& e) { busy.insert(ns = e.ns); });
      if (!due) continue;
      work(due->first, std::move(due->second));
      {
        std::lock_guard lock(mu);
        busy.erase(ns);
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> more;
  for (int i = 1; i < threads; ++i) more.emplace_back(loop);
  loop();
  for (auto& t : more) t.join();
}

}  // namespace valley::task
