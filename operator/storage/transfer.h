// Whole-directory transfers between a store and a pod's local disk, for valley-io:
//  - fetch_into: a data set (every object under a location) into a directory, before the workload
//    starts. A manifest in the directory (kDataManifest: key -> etag and size) records what is
//    complete, so a second run copies only what changed in the store, and a file cut off mid-copy
//    (a pod or node stopped) resumes from where it stopped when the store still has the same object.
//    A file copied earlier whose object is gone from the store is removed: the directory holds the
//    set as it is now. Calls on one directory (two pods sharing a node's copy) run one at a time.
//  - keep_from: a directory's files (what the workload wants kept) to a location; a manifest
//    (kKeptManifest: path -> size and mtime) skips what was uploaded unchanged by an earlier call.
// Files whose names start with ".valley-" are the transfers' own and never copied.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "operator/storage/object_store.h"

namespace valley::storage {

inline constexpr const char* kDataManifest = ".valley-data.json";
inline constexpr const char* kKeptManifest = ".valley-kept.json";
inline constexpr const char* kPartSuffix = ".valley-part";
inline constexpr const char* kDataLock = ".valley-lock";

struct TransferSummary {
  int files = 0;           // in the set
  int copied = 0;          // transferred by this call (resumed ones included)
  int resumed = 0;         // of copied: continued from a partial file
  int unchanged = 0;       // already there from an earlier call
  int removed = 0;         // copied earlier, no longer in the store
  uint64_t bytes = 0;      // of the whole set
  uint64_t copied_bytes = 0;
};
std::string describe(const TransferSummary& s);  // "3 files, 12.0 MB (2 copied, 1 resumed, 1 unchanged)"

using TransferLog = std::function<void(const std::string&)>;

// Throws StoreError when the store cannot be listed or an object cannot be read or written; the
// manifest then still holds every file completed before the failure.
TransferSummary fetch_into(ObjectStore& store, const std::string& dir, const TransferLog& log);
TransferSummary keep_from(const std::string& dir, ObjectStore& store, const TransferLog& log);

}  // namespace valley::storage
