// Choosing the next store read of a polling thread (CheckpointWatcher, TransferWatcher): among the
// entries with work to do, the longest overdue, so a store slower than the poll interval cannot
// starve the entries after it (the bad-input catalogue's slow store found this).
#pragma once

#include <algorithm>
#include <chrono>

namespace valley::task {

// `entries`: a map whose values have `next` (a steady_clock time point); `has_work(value)` says
// whether one is to be read at all. Returns the entry to read now, or end(); *wake is lowered to
// the next time one falls due.
template <class Map, class HasWork>
typename Map::iterator most_overdue(Map& entries, std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point* wake,
                                    HasWork has_work) {
  auto due = entries.end();
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (!has_work(it->second)) continue;
    if (it->second.next > now) {
      *wake = std::min(*wake, it->second.next);
    } else if (due == entries.end() || it->second.next < due->second.next) {
      due = it;
    }
  }
  return due;
}

}  // namespace valley::task
