// A work queue of object keys for reconcilers, with client-go's semantics:
// - a key queued twice before a worker takes it is processed once (dedup);
// - a key is never processed by two workers at once: if it is added while being processed it is
//   queued again when the worker calls done();
// - add_after() delays a key; add_rate_limited() delays it by the larger of a per-key exponential
//   backoff (failures) and an overall token bucket (so a storm of failures cannot hammer the API);
//   forget() resets the key's backoff after a success;
// - shut_down() wakes every waiting worker; get() then returns nullopt.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/rate_limit.h"

namespace valley::kube {

struct WorkQueueOptions {
  Clock::duration backoff_base = std::chrono::milliseconds(5);
  Clock::duration backoff_cap = std::chrono::seconds(300);
  double qps = 10;  // the overall bucket for rate-limited adds
  int burst = 100;
  // Called (outside the lock) with how long a key waited between being queued and a worker taking it.
  std::function<void(Clock::duration)> on_dequeue;
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void add(const std::string& key);
  void add_after(const std::string& key, Clock::duration delay);
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key);
  int failures(const std::string& key) const { return backoff_.failures(key); }

  // Blocks until a key is ready or the queue shuts down (nullopt).
  std::optional<std::string> get();
  void done(const std::string& key);

  void shut_down();
  bool shutting_down() const;
  size_t length() const;  // keys ready now (not delayed, not in process)
  size_t delayed() const;

 private:
  void add_locked(const std::string& key);
  void promote_due_locked(Clock::time_point now);
  void unwait_locked(const std::string& key);

  WorkQueueOptions options_;
  ItemBackoff backoff_;
  TokenBucket bucket_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;       // queued or to be re-queued after processing
  std::set<std::string> processing_;
  // Delayed keys and when they are due, and the same ordered by due time: a get() looks only at the
  // earliest, not at every delayed key (a thousand tasks each requeued for their next accrual).
  std::map<std::string, Clock::time_point> waiting_;
  std::set<std::pair<Clock::time_point, std::string>> due_order_;
  std::map<std::string, Clock::time_point> queued_at_;  // when each dirty key became ready
  bool shutting_down_ = false;
};

// Runs `workers` threads taking keys from `queue` and calling `reconcile` on each. A reconcile that
// throws or returns false is re-queued rate-limited; one that succeeds is forgotten (its backoff
// reset). Returns the threads; they end when the queue shuts down.
std::vector<std::thread> run_workers(WorkQueue& queue, int workers, std::function<bool(const std::string&)> reconcile);

}  // namespace valley::kube
