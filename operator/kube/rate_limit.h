// Rate limiting shared by the HTTP client (requests to the API server) and the workqueue (how soon
// a failing key comes back). Pure: time is passed in, so tests need no sleeping.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace valley::kube {

using Clock = std::chrono::steady_clock;

// Token bucket: `qps` tokens a second, at most `burst` saved up. reserve() takes a token now or in
// the future and returns how long the caller must wait before using it (reservations queue up, so
// concurrent callers are spread out rather than released together). qps <= 0 means unlimited.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst);
  Clock::duration reserve(Clock::time_point now);

 private:
  std::mutex mu_;
  double qps_;
  double burst_;
  double tokens_;
  Clock::time_point last_{};
  bool started_ = false;
};

// Per-key exponential backoff: base * 2^failures, capped; forget() resets a key after success.
class ItemBackoff {
 public:
  ItemBackoff(Clock::duration base, Clock::duration cap) : base_(base), cap_(cap) {}
  Clock::duration next(const std::string& key);
  void forget(const std::string& key);
  int failures(const std::string& key) const;

 private:
  mutable std::mutex mu_;
  Clock::duration base_, cap_;
  std::map<std::string, int> failures_;
};

}  // namespace valley::kube
