#include "operator/kube/rate_limit.h"

#include <algorithm>
#include <cmath>

namespace valley::kube {

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)) {}

Clock::duration TokenBucket::reserve(Clock::time_point now) {
  if (qps_ <= 0) return Clock::duration::zero();
  std::lock_guard lock(mu_);
  if (!started_) {
    started_ = true;
    last_ = now;
  }
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1.0;  // may go negative: a debt later callers wait behind
  if (tokens_ >= 0) return Clock::duration::zero();
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

Clock::duration ItemBackoff::next(const std::string& key) {
  std::lock_guard lock(mu_);
  int n = failures_[key]++;
  // 2^n overflows long before the cap matters; stop doubling once past it.
  if (n >= 40) return cap_;
  auto d = base_ * (int64_t{1} << n);
  return std::min<Clock::duration>(d, cap_);
}

void ItemBackoff::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int ItemBackoff::failures(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

}  // namespace valley::kube
