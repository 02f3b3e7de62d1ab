// Events (events.k8s.io/v1) about the objects Valley manages, without flooding the API server:
// - recording never does I/O: it updates an in-memory aggregate and a background thread writes;
// - the same event (object, type, reason, action, note) seen again within `series_window` becomes a
//   series: one Event object whose series.count/lastObservedTime is patched at most once per
//   `series_flush` however often it recurs;
// - each object may create at most `burst` distinct events, refilled one per `refill` (a spam
//   filter like client-go's), so a hot loop producing varied notes cannot flood either.
// EventAggregator is the pure part (time passed in); EventRecorder adds the thread and the API.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "operator/kube/api.h"
#include "operator/kube/timefmt.h"

namespace valley::kube {

struct EventOptions {
  std::string reporting_controller = "valley.dev/operator";
  std::string reporting_instance;  // e.g. the leader-election identity
  std::chrono::seconds series_window{600};
  std::chrono::seconds series_flush{30};
  int burst = 25;
  std::chrono::seconds refill{300};
  size_t max_tracked = 4096;  // aggregates kept in memory; the oldest are forgotten first
};

struct PendingWrite {
  enum class Kind { Create, UpdateSeries } kind;
  std::string key;
  nlohmann::json event;  // Create: the whole Event; UpdateSeries: {namespace, name, count, lastObservedTime}
};

class EventAggregator {
 public:
  explicit EventAggregator(EventOptions options) : options_(std::move(options)) {}

  // Returns false when the spam filter dropped it.
  bool observe(const nlohmann::json& regarding, const std::string& type, const std::string& reason,
               const std::string& action, const std::string& note, SystemTime now);
  // What to write now: creates for new events, series updates that are due.
  std::vector<PendingWrite> take_due(SystemTime now);
  // After a failed create: the next due pass tries again.
  void create_failed(const std::string& key);

  size_t dropped() const { return dropped_; }
  size_t tracked() const { return entries_.size(); }

 private:
  struct Entry {
    nlohmann::json event;  // as created
    int count = 0;
    int written_count = 0;  // count the API has seen
    SystemTime first{}, last{}, last_write{};
    bool created = false;
    bool create_pending = false;
  };
  struct Bucket {
    double tokens;
    SystemTime last;
  };
  void evict(SystemTime now);

  EventOptions options_;
  std::unordered_map<std::string, Entry> entries_;
  // Keys of entries with something the API has not seen (a create, a count): what take_due looks
  // at, rather than every event of the series window (thousands at a burst of tasks).
  std::unordered_set<std::string> unwritten_;
  SystemTime last_sweep_{};  // of evict's sweep for stale entries, at most once a second
  std::unordered_map<std::string, Bucket> buckets_;  // per regarding object (uid or key)
  size_t dropped_ = 0;
  uint64_t sequence_ = 0;
};

class EventRecorder {
 public:
  EventRecorder(Api& client, EventOptions options);
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void normal(const nlohmann::json& regarding, const std::string& reason, const std::string& action, const std::string& note) {
    record(regarding, "Normal", reason, action, note);
  }
  void warning(const nlohmann::json& regarding, const std::string& reason, const std::string& action, const std::string& note) {
    record(regarding, "Warning", reason, action, note);
  }
  void record(const nlohmann::json& regarding, const std::string& type, const std::string& reason,
              const std::string& action, const std::string& note);
  // Writes everything due now, series included regardless of the flush interval (shutdown, tests).
  void flush();
  uint64_t writes() const { return writes_.load(); }

 private:
  void loop();
  void write(std::vector<PendingWrite> batch);

  Api& client_;
  EventOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  EventAggregator aggregator_;
  bool stop_ = false;
  std::atomic<uint64_t> writes_{0};
  std::mutex write_mu_;
  std::thread thread_;
};

}  // namespace valley::kube
