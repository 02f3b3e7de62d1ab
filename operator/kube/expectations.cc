#include "operator/kube/expectations.h"

namespace valley::kube {

void CreationExpectations::expect(const std::string& id, const std::string& uid, Clock::time_point now) {
  std::lock_guard lock(mu_);
  expected_[id] = Expected{uid, now};
}

void CreationExpectations::observed(const std::string& id, const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = expected_.find(id);
  // An event of an older incarnation of the name (the pod this one replaces) meets nothing.
  if (it != expected_.end() && it->second.uid == uid) expected_.erase(it);
}

bool CreationExpectations::pending(const std::string& id, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = expected_.find(id);
  if (it == expected_.end()) return false;
  if (now - it->second.at >= ttl_) {
    expected_.erase(it);
    return false;
  }
  return true;
}

size_t CreationExpectations::size() const {
  std::lock_guard lock(mu_);
  return expected_.size();
}

}  // namespace valley::kube
